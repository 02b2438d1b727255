"""The initialize package's shape: a light registry, a working ``-m`` entry point, and small modules and functions."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow_scripts" / "initialize"


def test_registry_import_loads_neither_torch_nor_fasttext():
    # The Snakefile reads the registry at planning time: importing it must stay cheap.
    code = (
        "import json, sys\n"
        "from workflow_scripts.initialize import INIT_METHODS, CORPUS_METHODS\n"
        "heavy = sorted(m for m in ('torch', 'fasttext', 'transformers', 'tokenizers', 'numpy') if m in sys.modules)\n"
        "print(json.dumps({'methods': sorted(INIT_METHODS), 'corpus': list(CORPUS_METHODS), 'heavy': heavy}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["heavy"] == []
    assert got["methods"] == ["Align", "EEVE", "FOCUS", "Mean", "Mean-ref", "Merge", "Random"]
    assert got["corpus"] == ["Align", "FOCUS"]


def test_module_entry_point_runs_once_without_warnings():
    out = subprocess.run(
        [sys.executable, "-W", "error", "-m", "workflow_scripts.initialize", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("usage:") == 1 and "--pad-to-multiple-of" in out.stdout
    assert "{Align,EEVE,FOCUS,Mean,Mean-ref,Merge,Random}" in out.stdout


def test_every_method_module_is_imported_by_the_methods_package():
    from workflow_scripts.initialize import INIT_METHODS

    modules = {p.stem for p in (PACKAGE / "methods").glob("*.py") if p.stem != "__init__"}
    registered = {fn.__module__.rsplit(".", 1)[-1] for fn in INIT_METHODS.values()}
    assert modules == registered


def test_modules_and_functions_stay_small():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 600, f"{path.relative_to(REPO)} has over 600 lines"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 80, f"{path.relative_to(REPO)}:{node.lineno} {node.name} has {length} lines"
