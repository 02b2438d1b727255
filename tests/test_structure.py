"""The shape the code keeps: small modules and functions in workflow_scripts/ and tools/, and no import cycle between
the steps and the tools."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.conftest import REPO

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
PACKAGE = REPO / "workflow_scripts"
TOOLS = ("workflow_scripts", "tools")


def modules(root: Path = REPO, tops: tuple[str, ...] = TOOLS) -> dict[str, list[ast.AST]]:
    """Every node of each module of workflow_scripts/ and tools/ (or ``tops``) under ``root``, by path relative to
    it."""
    paths = sorted(p for top in tops for p in (root / top).rglob("*.py"))
    return {str(p.relative_to(root)): walked(p) for p in paths}


@functools.cache  # each module parsed and walked once for the several checks of this file
def walked(path: Path) -> list[ast.AST]:
    return list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_modules_and_functions_stay_small():
    too_long = []
    for name, tree_nodes in modules().items():
        lines = (REPO / name).read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{name}: {lines} lines")
        for node in tree_nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert any(name.startswith("tools/") for name in modules())  # the walk sees tools/ too
    assert not too_long, too_long


def node_of(module: str, root: Path = REPO) -> str | None:
    """The node a dotted module belongs to: a step (its first component under workflow_scripts, a module or a
    package) or a tool (``tools.<module>``); None for anything else or a name that is no file under ``root``."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] not in TOOLS or parts[1] == "__init__":
        return None
    base = root / parts[0] / parts[1]
    if not (base.is_dir() or base.with_suffix(".py").is_file()):
        return None
    return parts[1] if parts[0] == "workflow_scripts" else f"tools.{parts[1]}"


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Node -> the other nodes it imports, counting imports inside functions too (they hide cycles)."""
    graph: dict[str, set[str]] = {}
    for name, tree_nodes in modules(root).items():
        here = node_of(Path(name).with_suffix("").as_posix().replace("/", "."), root)
        if here is None:
            continue
        for node in tree_nodes:
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                other = node_of(target, root)
                if other and other != here:
                    graph.setdefault(here, set()).add(other)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph``, each as the path that closes it (first node repeated at the end)."""
    found = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                found.append([*path[path.index(nxt) :], nxt])
            elif len(path) < len(graph) + 1:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def test_no_import_cycle_between_steps_and_tools():
    graph = import_graph()
    assert graph["vocab"] >= {"pieces", "tokenizer_assets"}  # the graph sees real imports
    assert graph["tools.gpu_estimate"] >= {"gpu", "plan"}  # ... tools' too
    assert graph["plan"] >= {"lapt"}  # ... and imports inside functions (plan/grid.py)
    found = cycles(graph)
    assert not found, found[:5]


def test_a_cycle_through_a_tool_fails_the_check(tmp_path):
    """The check can fail: a step and a tool that import each other (one of them inside a function) form a cycle."""
    files = {
        "workflow_scripts/__init__.py": "",
        "workflow_scripts/step_a.py": "from workflow_scripts.step_b import f\n",
        "workflow_scripts/step_b/__init__.py": "def f():\n    from tools.helper import g\n",
        "tools/__init__.py": "",
        "tools/helper.py": "import workflow_scripts.step_a\nfrom workflow_scripts.io import nothing\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert graph == {"step_a": {"step_b"}, "step_b": {"tools.helper"}, "tools.helper": {"step_a"}}
    assert ["step_a", "step_b", "tools.helper", "step_a"] in cycles(graph)
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def top_level_names() -> dict[str, list[str]]:
    """Each name a module of workflow_scripts/ or tools/ defines at its top level (a function, a class or an
    assignment) -> the modules that define it."""
    defined: dict[str, list[str]] = {}
    for name, tree_nodes in modules().items():
        for node in tree_nodes[0].body:  # the walk starts at the module
            names = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for n in names:
                defined.setdefault(n, []).append(name)
    return defined


def test_byte_and_piece_helpers_are_defined_once():
    defined = top_level_names()
    for helper in ("bytes_to_unicode", "piece_bytes", "piece_text", "is_byte_level", "detect_family", "METASPACE"):
        assert defined.get(helper) == ["workflow_scripts/pieces.py"], (helper, defined.get(helper))


# Names of a concept several steps read, each defined in one module and imported by the others.
ONE_HOME = {
    "CHOICE_TASKS": "workflow_scripts/tasks/__init__.py",  # the log-likelihood evaluation tasks
    "TIMED_CHOICE_TASKS": "workflow_scripts/tasks/__init__.py",  # those of them the speed step times
    "MODEL_NAMES": "workflow_scripts/paper/names.py",  # a model's configuration key -> its display name
    "PAPER_MODELS": "workflow_scripts/paper/names.py",  # the paper's source models by configuration key
}


def test_shared_names_are_defined_once():
    from workflow_scripts.tasks import CHOICE_TASKS, TIMED_CHOICE_TASKS

    defined = top_level_names()
    for concept, home in ONE_HOME.items():
        assert defined.get(concept) == [home], (concept, defined.get(concept))
    assert set(TIMED_CHOICE_TASKS) <= set(CHOICE_TASKS)


# A repository path as the code names it in a docstring or comment ("rules/lapt.smk", "workflow_scripts/vocab/");
# one with a placeholder ({name}, <run>, *) is a pattern, not a file.
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:workflow_scripts|rules|tools|tests|docs|configs|schemas|envs|profiles)/[\w./-]*)"
)


def test_paths_named_in_the_code_exist():
    missing = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(REPO / "tools").rglob("*.py"), *(REPO / "rules").glob("*.smk")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in REPO_PATH.finditer(line):
                named = match.group(1).rstrip(".")
                if line[match.end() : match.end() + 1] in ("{", "<", "*"):
                    continue
                if not (REPO / named).exists():
                    missing.append(f"{path.relative_to(REPO)}:{number}: {named}")
    assert not missing, missing


# The old MT generate loop (harness/ runs mt through LightEval) and the module that held it.
REMOVED_MT_PATH = {"MT_TEMPLATE", "mt_prompt", "evaluate_mt", "chrf_scores", "write_predictions"}


def test_no_module_imports_the_removed_mt_path():
    found, seen = [], set()
    for path, tree_nodes in modules(REPO, (*TOOLS, "tests")).items():
        for node in tree_nodes:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules_named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                names = [a.name for a in node.names] if node.module.startswith("workflow_scripts") else []
            elif isinstance(node, ast.Import):
                modules_named, names = [a.name for a in node.names], []
            else:
                continue
            seen.update(modules_named)
            if "workflow_scripts.evaluate" in modules_named or REMOVED_MT_PATH & set(names):
                found.append(f"{path}:{node.lineno}")
    assert "workflow_scripts.inference.load_model" in seen  # the walk sees real imports
    assert not (PACKAGE / "evaluate.py").exists()
    assert not found, found
    rules = "".join(p.read_text(encoding="utf-8") for p in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")])
    assert "workflow_scripts.evaluate " not in rules and "workflow_scripts/evaluate.py" not in rules


def test_one_worker_marks_are_written_as_the_scheduler_reads_them():
    """xdist's controller never collects, so tests/conftest.py's scheduler reads a file's one_worker group from its text
    (ONE_WORKER) while the workers order the tests by the mark itself: a mark written another way would be ordered as a
    group but handed out file by file."""
    from tests.conftest import ONE_WORKER

    this = Path(__file__).name  # names the mark in its own code
    texts = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "tests").glob("test_*.py") if p.name != this}
    marked = {name for name, text in texts.items() if '.one_worker("' in text}
    read = {name for name, text in texts.items() if ONE_WORKER.search(text)}
    assert marked == read
    assert {"test_harness.py", "test_speed_choices.py", "test_mcq_prompts.py"} <= read  # LightEval in the test process
