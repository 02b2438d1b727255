"""The README and docs/ say what is: the layout table (docs/layout.md) names every package, rule file and top-level
folder, every page the README links exists, no page carries development history, and the config reference is the
schema's rendering."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tools import config_doc

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
LAYOUT = DOCS / "layout.md"

# Development history has no place in a user's document: session numbers, issue numbers, the machine the
# text was written on.
HISTORY = re.compile(r"\bstop \d+|\bissues? \d+|\bthis (?:machine|session)\b", re.IGNORECASE)


def _section(text: str, title: str) -> str:
    """The body of the level-2 section ``title`` of a Markdown text."""
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no '## {title}' section"
    return match.group(1)


def layout_paths(text: str) -> set[str]:
    """Every path named in the first column of the layout table (docs/layout.md; backticked, as written)."""
    paths: set[str] = set()
    for line in _section(text, "Layout").splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            paths.update(re.findall(r"`([^`]+)`", cells[1]))
    return paths


def test_layout_paths_reads_the_first_column_only():
    text = "## Layout\n\n| path | what |\n|---|---|\n| `a/`, `b.smk` | not `c/` |\n\n## Next\n| `d/` | x |\n"
    assert layout_paths(text) == {"a/", "b.smk"}


def test_layout_names_every_package():
    packages = {
        f"{init.parent.relative_to(REPO).as_posix()}/" for init in (REPO / "workflow_scripts").rglob("__init__.py")
    }
    assert "workflow_scripts/vocab/" in packages
    named = layout_paths(LAYOUT.read_text(encoding="utf-8"))
    assert not packages - named, f"docs/layout.md's table does not name the packages {sorted(packages - named)}"
    stale = {p for p in named if p.startswith("workflow_scripts/") and p.endswith("/")} - packages
    assert not stale, f"docs/layout.md's table names packages that do not exist: {sorted(stale)}"


def test_layout_names_every_rule_file():
    files = {f"rules/{p.name}" for p in (REPO / "rules").glob("*.smk")}
    named = {p for p in layout_paths(LAYOUT.read_text(encoding="utf-8")) if p.startswith("rules/")}
    assert files == named, (
        f"rule files missing from docs/layout.md's table: {sorted(files - named)}; "
        f"named there but absent from rules/: {sorted(named - files)}"
    )


def _top_level_dirs() -> set[str]:
    try:
        tracked = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked folders are unknown")
    return {f"{path.split('/', 1)[0]}/" for path in tracked if "/" in path}


def test_layout_names_every_top_level_folder():
    named = layout_paths(LAYOUT.read_text(encoding="utf-8"))
    folders = _top_level_dirs()
    assert "rules/" in folders
    # A folder counts as named when the table names it or a path inside it.
    missing = {f for f in folders if not any(p == f or p.startswith(f) for p in named)}
    assert not missing, f"docs/layout.md's table does not name the top-level folders {sorted(missing)}"


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_development_history(page):
    hits = [
        f"{page.name}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not hits, "development history in a user's document:\n" + "\n".join(hits)


def test_every_docs_page_the_readme_names_exists_and_every_page_is_named():
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"\bdocs/[\w.-]+\.md\b", text))
    assert "docs/measurements.md" in named
    missing = sorted(p for p in named if not (REPO / p).is_file())
    assert not missing, f"README.md names docs pages that do not exist: {missing}"
    unlisted = sorted(p.relative_to(REPO).as_posix() for p in DOCS.glob("*.md"))
    unlisted = [p for p in unlisted if p not in named]
    assert not unlisted, f"docs pages the README does not name: {unlisted}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]
    broken = [t for t in targets if not (page.parent / t).exists()]
    assert not broken, f"{page.name} links to missing files: {broken}"


def test_config_reference_is_the_schema_rendered():
    schema = yaml.safe_load(config_doc.SCHEMA.read_text(encoding="utf-8"))
    assert config_doc.PAGE.read_text(encoding="utf-8") == config_doc.render(schema), (
        "docs/config.md is not the rendering of schemas/config.schema.yaml; run: python -m tools.config_doc"
    )


def test_config_reference_renders_every_key(tmp_path):
    schema = {
        "description": "A grid.",
        "required": ["models"],
        "properties": {
            "models": {
                "type": "object",
                "description": "Models by name.",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"kind": {"enum": ["hub", "local"], "description": "Where it comes from."}},
                },
            },
            "seed": {"type": "integer", "minimum": 0, "default": 42},
            "method": {"$ref": "#/$defs/method"},
        },
        "$defs": {
            "method": {"type": "object", "properties": {"k": {"oneOf": [{"type": "integer"}, {"const": "auto"}]}}}
        },
    }
    page = config_doc.render(schema)
    assert "## `models` (required)" in page
    assert "| `models.<name>.kind` | `hub` \\| `local` |  | Where it comes from. |" in page
    assert "Accepts: integer, ≥ 0; default `42`" in page
    assert "[method](#method)" in page and "| `k` | integer or `auto` |" in page
    schema_file, out = tmp_path / "s.yaml", tmp_path / "config.md"
    schema_file.write_text(yaml.safe_dump(schema, sort_keys=False), encoding="utf-8")
    assert config_doc.main(["--schema", str(schema_file), "--out", str(out), "--check"]) == 1
    assert config_doc.main(["--schema", str(schema_file), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page
    assert config_doc.main(["--schema", str(schema_file), "--out", str(out), "--check"]) == 0
