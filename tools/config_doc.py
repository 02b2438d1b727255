"""The config reference, rendered from the schema: one Markdown page (docs/config.md) with every key of
schemas/config.schema.yaml, its type, default and description.

The schema is the one source: this page is generated from it, and tests/test_docs.py fails when the committed page
differs from what the schema renders. After editing the schema:

    python -m tools.config_doc --out docs/config.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from workflow_scripts.io import write_text
from workflow_scripts.plan.checks.schema import with_data_kinds

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
PAGE = REPO / "docs" / "config.md"

HEADER = """# Configuration reference

Generated from `schemas/config.schema.yaml` by `python -m tools.config_doc --out docs/config.md`; edit the schema, not
this page. `config.yaml` (the embedded default), `configs/test.yaml` (the tiny test grid) and `configs/paper.yaml` (the
paper's grid) are complete examples; `--configfile X` replaces `config.yaml` as a whole. In a key path, `<name>` stands
for a name you choose (a model, a language code) and `[]` for an item of a list.
"""


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_text(node: dict[str, Any]) -> str:
    """A short text of what a schema node accepts: its enum, type, bounds, or its alternatives."""
    if "$ref" in node:
        return f"[{_ref_name(node['$ref'])}](#{_ref_name(node['$ref'])})"
    if "const" in node:
        return f"`{node['const']}`"
    if "enum" in node:
        return " | ".join(f"`{v}`" for v in node["enum"])
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " or ".join(type_text(alt) for alt in node[key])
    kind = node.get("type", "")
    if kind == "array" and "items" in node:
        return f"list of {type_text(node['items'])}"
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    bounds = [
        f"{sign} {node[key]}"
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
        if key in node
    ]
    return ", ".join([text or "object", *bounds]) if bounds else (text or "object")


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return ""
    text = yaml.safe_dump(node["default"], default_flow_style=True, width=1000)
    return f"`{text.strip().removesuffix('...').strip()}`"


def rows(node: dict[str, Any], path: str) -> list[tuple[str, str, str, str]]:
    """Every key under ``node`` as (key path, type, default, description), depth first, in the schema's order."""
    out: list[tuple[str, str, str, str]] = []
    children: list[tuple[str, dict[str, Any]]] = [(f"{path}.{k}", v) for k, v in node.get("properties", {}).items()]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("type") == "object":
        children.append((f"{path}.<name>", extra))
    items = node.get("items")
    if isinstance(items, dict) and items.get("type") == "object" and "properties" in items:
        children.append((f"{path}[]", items))
    for child_path, child in children:
        key = child_path.removeprefix(".")
        out.append((key, type_text(child), _default(child), child.get("description", "")))
        if "$ref" not in child:
            out.extend(rows(child, key))
    return out


def _table(entries: list[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| key | accepts | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {_cell(t)} | {_cell(d)} | {_cell(m)} |" for k, t, d, m in entries]
    return lines


def render(schema: dict[str, Any]) -> str:
    """The whole page: the schema's description, one section per top-level key, one per shared definition. The
    corpus kinds and the MT kinds are the registries' (workflow_scripts/corpora/, workflow_scripts/mt_sources/),
    described by their modules."""
    if "languages" in schema.get("properties", {}):
        schema = with_data_kinds(schema)
    lines = [HEADER.rstrip(), "", _cell(schema.get("description", "")), ""]
    required = set(schema.get("required", []))
    for key, node in schema.get("properties", {}).items():
        lines += [f"## `{key}`" + (" (required)" if key in required else ""), ""]
        if node.get("description"):
            lines += [_cell(node["description"]), ""]
        lines += [f"Accepts: {_cell(type_text(node))}" + (f"; default {_default(node)}" if "default" in node else "")]
        sub = rows(node, key)
        lines += ["", *_table(sub)] if sub else []
        lines.append("")
    for name, node in schema.get("$defs", {}).items():
        lines += [f'## <a id="{name}"></a>`{name}` (shared definition)', ""]
        if node.get("description"):
            lines += [_cell(node["description"]), ""]
        lines += [*_table(rows(node, "")), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the rendered page, or with --check exit 1 when the committed page differs from the schema."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schema", type=Path, default=SCHEMA)
    parser.add_argument("--out", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)
    text = render(yaml.safe_load(args.schema.read_text(encoding="utf-8")))
    if args.check:
        if not args.out.is_file() or args.out.read_text(encoding="utf-8") != text:
            print(
                f"error: {args.out} is not the rendering of {args.schema}; run python -m tools.config_doc",
                file=sys.stderr,
            )
            return 1
        return 0
    write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
