"""The real Snakefile: plans, bad input stopping before any job, and an end-to-end run that is killed and resumed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import (
    REPO,
    TINY_LLAMA,
    assert_mc_speed_records,
    expected_counts,
    planned_jobs,
    snakemake,
    tiny_config,
)
from workflow_scripts import lapt
from workflow_scripts.plan import runs

TINY_CHAT = {k: v for k, v in TINY_LLAMA.items()}  # the same shape: an instruction-tuned sibling stand-in


def test_dry_run_plans_the_grid(tmp_path):
    """The default's plan in a fresh working directory (nothing computed yet); the paper grid's plan is counted the
    same way beside a finished run (test_end_to_end_killed_and_resumed), beside another run's outputs (test_runs.py)
    and, with the Slurm profile, in an empty folder (test_plan.py)."""
    path = tiny_config(tmp_path, "config.yaml")
    result = snakemake(["-n", "--quiet", "rules", "--configfile", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(path.read_text())
    counts = planned_jobs(result.stdout)
    expected = expected_counts(config)
    assert {rule: counts[rule] for rule in expected} == expected


@pytest.mark.slow  # Snakemake dry runs of the grid: 2-6 s of CPU
def test_dry_run_plans_elchat_on_its_adapted_cell(tmp_path):
    """An ElChat method alone trains its adapted cell as a dependency, prepares the chat sibling once, merges, and
    evaluates only the configured cells."""
    chat = {**TINY_CHAT, "random": {**TINY_CHAT["random"], "seed": 1}}
    path = tiny_config(tmp_path, methods=[{"init": "none", "procedure": "none"}, {"init": "Mean", "posthoc": "elchat"}])
    config = yaml.safe_load(path.read_text())
    config["models"]["tiny"]["chat"] = chat
    path.write_text(yaml.safe_dump(config))
    result = snakemake(["-n", "--quiet", "rules", "--configfile", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    counts = planned_jobs(result.stdout)
    assert {r: counts[r] for r in ("prepare_chat_model", "lapt", "elchat", "evaluate_mt", "measure_speed")} == {
        "prepare_chat_model": 1,
        "lapt": 1,
        "elchat": 1,
        "evaluate_mt": 2,
        "measure_speed": 2,
    }
    target = "results/default/tiny/th/Mean.k50.2x2LS.clm.L64.elchat/eval/mc.json"
    shell = snakemake(["-n", "-p", target, "--configfile", str(path)], tmp_path)
    # the rule asks the harness for the chat template of an ElChat cell, and only there
    assert '"posthoc": "elchat"' in shell.stdout
    assert "results/default/tiny/th/Mean.k50.2x2LS.clm.L64/model" in shell.stdout
    assert "--chat-template" in shell.stdout
    plain = snakemake(["-n", "-p", target.replace(".elchat", ""), "--configfile", str(path)], tmp_path)
    assert plain.returncode == 0 and "--chat-template" not in plain.stdout


@pytest.mark.slow  # a Snakemake run: 2-6 s of CPU
def test_bad_config_stops_before_any_job(tmp_path):
    config = tiny_config(tmp_path, methods=[{"init": "Mean", "k": 0}])
    result = snakemake(["--cores", "1", "--configfile", str(config)], tmp_path)
    assert result.returncode != 0
    assert "methods[0].k: 0 is less than the minimum of 1" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def _wait_for_file(proc: subprocess.Popen, path: Path, timeout: float) -> bool:
    """Whether ``path`` appeared before ``proc`` ended or the timeout passed."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


HOLD_STEP = 2  # configs/test.yaml: 6 steps, a checkpoint every 2


def assert_runs_kept_apart(workdir: Path, config: Path) -> None:
    """Beside this finished run, the paper grid plans every job, with Snakemake's records and without; moved outside
    any run folder and back (tools.migrate_results), the run is still up to date."""
    paper = workdir / "paper.yaml"
    shutil.copy(REPO / "configs" / "paper.yaml", paper)
    for records in (True, False):
        if not records:
            shutil.rmtree(workdir / ".snakemake")
        plan = snakemake(["-n", "--quiet", "rules", "--configfile", str(paper)], workdir)
        assert plan.returncode == 0, plan.stderr[-3000:]
        counts, expected = planned_jobs(plan.stdout), expected_counts(yaml.safe_load(paper.read_text()))
        assert {rule: counts[rule] for rule in expected} == expected
        assert "Nothing to be done" not in plan.stdout + plan.stderr
    results = workdir / "results"
    for entry in (results / "default").iterdir():  # outside any run folder, as if written without one
        if entry.name != runs.MARKER:
            entry.rename(results / entry.name)
    (results / "default" / runs.MARKER).unlink()
    (results / "default").rmdir()
    plan = snakemake(["-n", "--quiet", "--configfile", str(config)], workdir)
    assert "config warning: results/ holds outputs outside any run folder (analysis/, benchmarks/, " in plan.stderr
    moved = subprocess.run(
        [sys.executable, "-m", "tools.migrate_results", "--configfile", str(config)],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert moved.returncode == 0 and "moved results/tables/ -> results/default/tables/" in moved.stdout, moved
    again = snakemake(["-n", "--configfile", str(config)], workdir)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.e2e
def test_end_to_end_killed_and_resumed(tmp_path):
    """Run the tiny grid, Ctrl-C Snakemake and its jobs mid-training, run again: it finishes without redoing work.

    The first training job holds after its step-2 checkpoint (lapt's test-only hold hook) until the Ctrl-C arrives, so
    the interruption always lands mid-training, at a known step, however loaded the machine is.
    """
    config = tiny_config(tmp_path)
    settings = yaml.safe_load(config.read_text())
    settings["evaluation"]["one_job_per_cell"] = True  # as the default demo runs: one evaluation job per cell
    config.write_text(yaml.safe_dump(settings))
    held = tmp_path / "held_at_step"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        lapt.HOLD_AT_STEP_ENV: f"{HOLD_STEP}:{held}",
    }
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path)]
    cmd += ["--cores", "1", "--configfile", str(config)]
    log = open(tmp_path / "first_run.log", "w")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert _wait_for_file(proc, held, timeout=900), (tmp_path / "first_run.log").read_text()[-3000:]
        method_dir = Path(held.read_text(encoding="utf-8")).parent
        assert (method_dir / "checkpoints").is_dir() and not (method_dir / "train_stats.json").exists()
        finished = [
            *sorted(tmp_path.glob("results/default/data/**/*.txt")),
            tmp_path / "results/default/models/tiny/source_info.json",
        ]
        mtimes = {p: p.stat().st_mtime_ns for p in finished}
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()

    result = snakemake(["--cores", "2", "--configfile", str(config)], tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert {p: p.stat().st_mtime_ns for p in finished} == mtimes, "finished jobs were redone"
    stats = yaml.safe_load((method_dir / "train_stats.json").read_text())
    assert stats["resumed_from"] == [HOLD_STEP], stats

    cell_jobs = sorted(p.name for p in (tmp_path / "results/default/benchmarks/evaluate_cell").glob("*.tsv"))
    assert cell_jobs == [f"tiny.th.{m}.tsv" for m in ("CPT-only.2x2LS.clm.L64", "Mean.k50.2x2LS.clm.L64", "Source")]
    assert not (tmp_path / "results/default/benchmarks/evaluate_mt").exists()  # ppl, mt, mc, speed: one job per cell
    table = pd.read_csv(tmp_path / "results/default/tables/results.csv")
    assert set(table["label"]) == {"Source", "CPT-only", "Mean"}
    assert {"chrF", "bits_per_char", "tokens_per_second", "speedup", "acc", "acc_char"} <= set(table["metric"])
    accuracy = table[(table.task == "mc") & table.metric.str.startswith("acc")]  # not mc's speed records
    assert set(accuracy["run"]) == {0}  # the mc proxy ran once, through the Snakefile
    assert (
        "Not run by this configuration: summarization" in (tmp_path / "results/default/tables/results.md").read_text()
    )
    speedup = table[(table.metric == "speedup") & (table.label == "Source")]
    assert sorted(zip(speedup["task"], speedup["value"], strict=True)) == [("mc", 1.0), ("mt", 1.0)]  # mc: forward
    for cell in ("Source", "CPT-only.2x2LS.clm.L64", "Mean.k50.2x2LS.clm.L64"):
        assert_mc_speed_records(tmp_path / f"results/default/tiny/th/{cell}/eval/speed.json", cell != "Source")
    assert "Mean" in (tmp_path / "results/default/tables/results.md").read_text()

    again = snakemake(["-n", "--configfile", str(config)], tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    assert_runs_kept_apart(tmp_path, config)

    # The paper's tables and figures (rule paper_tables, in the default target) and the HTML report that shows them.
    paper = tmp_path / "results/default/paper"
    assert "| Mean |" in (paper / "table1.md").read_text(encoding="utf-8")  # tiny stands in for Llama2
    assert (paper / "figure2.png").stat().st_size > 0 and (paper / "loss_curves.pdf").stat().st_size > 0
    assert "CPT-only, 2x2 LS, clm, sequence length 64" in (paper / "costs.md").read_text(encoding="utf-8")
    report = snakemake(["--report", str(tmp_path / "report.html"), "--configfile", str(config)], tmp_path)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "table2.html" in html and "loss_curves.png" in html and "stand-in for CC-100" in html
    # results.md is the report's first page, its figure embedded
    assert "At a glance" in html and (tmp_path / "results/default/tables/results.png").stat().st_size > 0
