"""The shape the code keeps: small modules and functions, and no import cycle between the steps."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
PACKAGE = REPO / "workflow_scripts"


def modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(REPO)): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}


def test_modules_and_functions_stay_small():
    too_long = []
    for name, tree in modules().items():
        lines = (REPO / name).read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{name}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, too_long


def step_of(module: str) -> str | None:
    """The step a dotted module belongs to: its first component under workflow_scripts (a module or a package)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "workflow_scripts" and len(parts) > 1 else None


def import_graph() -> dict[str, set[str]]:
    """Step -> the other steps it imports, counting imports inside functions too (they hide cycles)."""
    graph: dict[str, set[str]] = {}
    for name, tree in modules().items():
        here = step_of(Path(name).with_suffix("").as_posix().replace("/", "."))
        if here is None or here == "__init__":
            continue
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                step = step_of(target)
                if step and step != here and ((PACKAGE / step).is_dir() or (PACKAGE / f"{step}.py").is_file()):
                    graph.setdefault(here, set()).add(step)
    return graph


def test_no_import_cycle_between_steps():
    graph = import_graph()
    assert graph["vocab"] >= {"pieces", "tokenizer_assets"}  # the graph sees real imports
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif len(path) < len(graph) + 1:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert not cycles, cycles[:5]


def test_byte_and_piece_helpers_are_defined_once():
    defined: dict[str, list[str]] = {}
    for name, tree in modules().items():
        for node in tree.body:
            names = []
            if isinstance(node, ast.FunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for n in names:
                defined.setdefault(n, []).append(name)
    for helper in ("bytes_to_unicode", "piece_bytes", "piece_text", "is_byte_level", "detect_family", "METASPACE"):
        assert defined.get(helper) == ["workflow_scripts/pieces.py"], (helper, defined.get(helper))


# The old MT generate loop (harness/ runs mt through LightEval) and the module that held it.
REMOVED_MT_PATH = {"MT_TEMPLATE", "mt_prompt", "evaluate_mt", "chrf_scores", "write_predictions"}


def test_no_module_imports_the_removed_mt_path():
    found, seen = [], set()
    for path in sorted([*PACKAGE.rglob("*.py"), *(REPO / "tools").rglob("*.py"), *(REPO / "tests").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules_named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                names = [a.name for a in node.names] if node.module.startswith("workflow_scripts") else []
            elif isinstance(node, ast.Import):
                modules_named, names = [a.name for a in node.names], []
            else:
                continue
            seen.update(modules_named)
            if "workflow_scripts.evaluate" in modules_named or REMOVED_MT_PATH & set(names):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert "workflow_scripts.evaluation.load_model" in seen  # the walk sees real imports
    assert not (PACKAGE / "evaluate.py").exists()
    assert not found, found
    rules = "".join(p.read_text(encoding="utf-8") for p in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")])
    assert "workflow_scripts.evaluate " not in rules and "workflow_scripts/evaluate.py" not in rules
