"""A new evaluation task is one module in workflow_scripts/tasks/ and one config line (docs/extending.md, "An
evaluation task"): the worked example ``ppl_mt`` (tests/fixtures/ppl_mt_task.py), dropped into a copy of the workflow,
is planned for every cell with the defaults of its settings, runs through its own command line, and a misspelt setting
of it is refused before any job."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

TOY = REPO / "tests" / "fixtures" / "ppl_mt_task.py"
TREE = ("Snakefile", "config.yaml", "rules", "workflow_scripts", "schemas", "profiles", "report", "envs", "resources")


def workflow_copy(dest: Path) -> Path:
    """The workflow's files (no results, no tests) copied to ``dest``, with the toy task's module added."""
    dest.mkdir(parents=True)
    for name in TREE:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    shutil.copy2(TOY, dest / "workflow_scripts" / "tasks" / "ppl_mt.py")
    return dest


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_new_task_is_one_module_and_one_config_line(tmp_path, tiny_llama_dir):
    wf = workflow_copy(tmp_path / "wf")
    config = yaml.safe_load((wf / "config.yaml").read_text(encoding="utf-8"))
    config["evaluation"]["tasks"].append("ppl_mt")  # the one config line
    (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    plan = run(["-m", "snakemake", "-n", "-p", "--configfile", "study.yaml"], wf)
    assert plan.returncode == 0, plan.stderr[-3000:]
    cells = len(re.findall(r"^localrule evaluate_cell:|^rule evaluate_cell:", plan.stdout, flags=re.M))
    jobs = re.findall(r"python -m workflow_scripts\.tasks ppl_mt (.*) --threads", plan.stdout)
    assert cells == 6 and len(jobs) == cells  # Source, CPT-only and Mean on Thai and Sinhala
    assert all("--n 500 --batch-size 8" in job and "/eval/ppl_mt.json" in job for job in jobs)

    pairs, out = tmp_path / "mt.tsv", tmp_path / "ppl_mt.json"
    pairs.write_text("Open\tเปิด\nClose\tปิด\n", encoding="utf-8")
    own = ["--model", str(tiny_llama_dir), "--pairs", str(pairs), "--cell", "{}", "--threads", "1", "--out", str(out)]
    ran = run(["-m", "workflow_scripts.tasks", "ppl_mt", *own], wf)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert {r["task"] for r in result["records"]} == {"ppl_mt"} and result["details"]["n_used"] == 2
    assert "bits_per_char" in {r["metric"] for r in result["records"]}

    config["evaluation"]["ppl_mt"] = {"nn": 4}
    (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    refused = run(["-m", "snakemake", "-n", "--configfile", "study.yaml"], wf)
    assert refused.returncode != 0 and "evaluation.ppl_mt" in refused.stderr + refused.stdout
