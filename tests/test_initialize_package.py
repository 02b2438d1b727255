"""The initialize package's shape: a light registry, a working ``-m`` entry point, and small modules and functions."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow_scripts" / "initialize"


def test_registry_import_loads_neither_torch_nor_fasttext():
    # The Snakefile reads the registry at planning time: importing it must stay cheap.
    from workflow_scripts.initialize import CORPUS_METHODS, INIT_METHODS

    code = (
        "import json, sys\n"
        "from workflow_scripts.initialize import INIT_METHODS, CORPUS_METHODS\n"
        "heavy = sorted(m for m in ('torch', 'fasttext', 'transformers', 'tokenizers', 'numpy') if m in sys.modules)\n"
        "print(json.dumps({'methods': list(INIT_METHODS), 'corpus': list(CORPUS_METHODS), 'heavy': heavy}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["heavy"] == []
    # a fresh interpreter discovers the same methods in the same order
    assert got["methods"] == list(INIT_METHODS) and got["corpus"] == CORPUS_METHODS
    assert {"Random", "Mean"} <= set(INIT_METHODS)  # the baselines apply.py compares the others with


def test_module_entry_point_runs_once_without_warnings():
    from workflow_scripts.initialize import INIT_METHODS

    out = subprocess.run(
        [sys.executable, "-W", "error", "-m", "workflow_scripts.initialize", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("usage:") == 1 and "--pad-to-multiple-of" in out.stdout
    assert "{" + ",".join(sorted(INIT_METHODS)) + "}" in out.stdout


def test_every_method_module_is_discovered():
    from workflow_scripts.initialize import INIT_METHODS, methods

    modules = {p.stem for p in (PACKAGE / "methods").glob("*.py") if p.stem != "__init__"}
    registered = {fn.__module__.rsplit(".", 1)[-1] for fn in INIT_METHODS.values()}
    assert modules == registered == set(methods.MODULES)


NEW_METHOD = """
from workflow_scripts.initialize.registry import InitResult, register_method


def doubled_stats(ctx):
    return {"doubled": len(ctx.new_tokens)}


@register_method("Doubled", needs_corpus=True, compared_with_mean=False, stats=doubled_stats)
def init_doubled(source, ctx, role):
    return InitResult(rows=None, records=[])
"""


def test_a_new_method_is_one_module_and_one_config_line(tmp_path):
    """A copy of the code with one more module in methods/: the command line, the schema check and the config
    check admit the method, the registry carries what apply.py reads, and a config names it in one line."""
    import shutil

    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "workflow_scripts", tmp_path / "workflow_scripts", ignore=skip)
    (tmp_path / "workflow_scripts" / "initialize" / "methods" / "doubled.py").write_text(NEW_METHOD, encoding="utf-8")
    code = (
        "import copy, json, sys, yaml\n"
        "from pathlib import Path\n"
        "from workflow_scripts.plan.checks import check_config, schema_errors\n"
        "from workflow_scripts.initialize import CORPUS_METHODS, INIT_METHODS, METHOD_SPECS\n"
        "from workflow_scripts.initialize.__main__ import parser\n"
        "from workflow_scripts.initialize.apply import method_stats\n"
        "from workflow_scripts.initialize.registry import LAST, InitContext\n"
        "repo = Path(sys.argv[1])\n"
        "config = yaml.safe_load((repo / 'configs' / 'test.yaml').read_text())\n"
        "config['methods'].append({'init': 'Doubled'})\n"
        "bad = copy.deepcopy(config)\n"
        "bad['methods'].append({'init': 'Tripled'})\n"
        "slugs = [m.slug for m in check_config(config, repo)]\n"
        "ctx = InitContext(None, None, [], [], 0, False)\n"
        "choices = parser()._option_string_actions['--method'].choices\n"
        "print(json.dumps({'schema': schema_errors(config, repo / 'schemas' / 'config.schema.yaml'),\n"
        "  'bad': schema_errors(bad, repo / 'schemas' / 'config.schema.yaml'), 'slugs': slugs,\n"
        "  'names': list(INIT_METHODS), 'corpus': CORPUS_METHODS, 'choices': list(choices),\n"
        "  'ordered': [n for n, s in METHOD_SPECS.items() if s.order < LAST],\n"
        "  'compared': METHOD_SPECS['Doubled'].compared_with_mean, 'stats': method_stats(ctx, 'Doubled')}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO)], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["schema"] == []
    assert len(got["bad"]) == 1 and got["bad"][0].startswith("methods[4].init: 'Tripled' is not one of"), got["bad"]
    assert "'Doubled'" in got["bad"][0]
    assert "Doubled.k50.2x2LS.clm.L64" in got["slugs"]
    # no order given: listed after every method that declares one (the paper's), whatever else is registered
    names = got["names"]
    assert names.index("Doubled") > max(names.index(n) for n in got["ordered"]) and "Doubled" in got["choices"]
    assert got["corpus"][-1] == "Doubled" and got["compared"] is False
    assert got["stats"] == {"doubled": 0}


def test_modules_and_functions_stay_small():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 600, f"{path.relative_to(REPO)} has over 600 lines"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 80, f"{path.relative_to(REPO)}:{node.lineno} {node.name} has {length} lines"
