"""A step that stops on the user's input is not run again by Snakemake's retries (profiles/default/ `retries: 2`),
which would repeat the work at twice and three times the cost: the step records the failure beside its rule's log
and a retry in the same Snakemake run stops at once (workflow_scripts/io.py cli_main). A crash is retried as before,
and a new Snakemake run starts the job afresh."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, snakemake, tiny_config
from workflow_scripts.io import SNAKEMAKE_RUN_ENV, job_log, user_error_record

# A step's command line through cli_main: each start counts in COUNTER; KIND user stops on a UserError until the file
# `fixed` exists, crash raises a bug, ok writes OUT.
STEP = """\
import sys
from pathlib import Path

from workflow_scripts.io import UserError, cli_main


def main():
    counter, kind, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))
    if kind == "user" and not Path("fixed").exists():
        raise UserError(f"{counter}: not the input this step needs; give another")
    if kind == "crash":
        raise RuntimeError("a bug")
    out.write_text("done\\n")


cli_main(main)
"""


@pytest.fixture
def step(tmp_path: Path) -> Path:
    (tmp_path / "step.py").write_text(STEP)
    return tmp_path / "step.py"


def run_step(step: Path, kind: str, run: str | None, log: Path) -> int:
    """Run the step as a rule's shell does (standard error appended to the log) in Snakemake run ``run``."""
    env = {k: v for k, v in os.environ.items() if k != SNAKEMAKE_RUN_ENV} | {"PYTHONPATH": str(REPO)}
    if run:
        env[SNAKEMAKE_RUN_ENV] = run
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as stderr:
        args = [sys.executable, str(step), "count", kind, "out.txt"]
        return subprocess.run(args, cwd=step.parent, env=env, stderr=stderr, check=False).returncode


def starts(step: Path) -> int:
    return int((step.parent / "count").read_text())


def test_a_user_error_is_recorded_and_a_retry_in_the_same_run_stops_at_once(step):
    log = step.parent / "logs" / "step.log"
    record = user_error_record(log)
    assert record == step.parent / "logs" / "step.log.user_error.json"
    assert run_step(step, "user", "run-1", log) == 1 and starts(step) == 1
    recorded = json.loads(record.read_text())
    assert recorded["snakemake_run"] == "run-1"
    assert recorded["message"] == "count: not the input this step needs; give another"
    # the retries of that Snakemake run: the step's work does not start again
    assert run_step(step, "user", "run-1", log) == 1 and run_step(step, "user", "run-1", log) == 1
    assert starts(step) == 1
    text = log.read_text()
    assert text.count("error: count: not the input this step needs; give another") == 3
    assert text.count("error: not run again: an earlier attempt of this job in this Snakemake run") == 2
    assert f"(recorded in {record})" in text
    # a new Snakemake run starts it afresh (the record of the earlier run is stale), and a success removes the record
    assert run_step(step, "user", "run-2", log) == 1 and starts(step) == 2
    assert json.loads(record.read_text())["snakemake_run"] == "run-2"
    (step.parent / "fixed").touch()
    assert run_step(step, "user", "run-3", log) == 0 and starts(step) == 3
    assert not record.exists()


def test_a_crash_is_retried_and_nothing_is_recorded_outside_a_workflow_job(step):
    log = step.parent / "logs" / "step.log"
    for _ in range(3):
        assert run_step(step, "crash", "run-1", log) == 1
    assert starts(step) == 3 and "RuntimeError: a bug" in log.read_text()
    assert not user_error_record(log).exists()
    # run by hand (no Snakemake run in the environment): the step runs every time and records nothing
    for _ in range(2):
        assert run_step(step, "user", None, log) == 1
    assert starts(step) == 5 and not user_error_record(log).exists()


def test_the_log_is_the_log_argument_else_the_file_of_standard_error(tmp_path):
    assert job_log(["--out", "x", "--log", "logs/a.log"]) == Path("logs/a.log")
    assert job_log(["--log=logs/b.log"]) == Path("logs/b.log")
    log = tmp_path / "c.log"
    probe = "from workflow_scripts.io import job_log; print(job_log([]))"
    with open(log, "a", encoding="utf-8") as stderr:
        out = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=REPO,
            stderr=stderr,
            capture_output=False,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
    assert Path(out.stdout.strip()) == log
    piped = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert piped.stdout.strip() == "None"  # a pipe or a terminal is no rule's log


# A workflow of one rule, as rules/common.smk sets it up: the Snakemake run named for its jobs, the step's standard
# error appended to the rule's log, memory growing with the attempt as the project's cost table does.
SNAKEFILE = """\
import sys

sys.path.insert(0, {repo!r})
from workflow_scripts.io import mark_snakemake_run

mark_snakemake_run(workflow.is_main_process)


rule all:
    input:
        expand("out/{{kind}}.txt", kind=config["kinds"]),


def mem_mb(wildcards, attempt):
    return 1000 * attempt


rule step:
    output:
        "out/{{kind}}.txt",
    log:
        "logs/{{kind}}.log",
    resources:
        mem_mb=mem_mb,
    shell:
        "PYTHONPATH={repo_q} {python_q} step.py counts/{{wildcards.kind}} {{wildcards.kind}} {{output:q}} 2>> {{log:q}}"
"""


@pytest.mark.slow  # three small Snakemake runs: about 10 s
def test_snakemake_retries_a_crash_but_not_a_user_error(step):
    work = step.parent
    (work / "counts").mkdir()
    snakefile = SNAKEFILE.format(repo=str(REPO), repo_q=shlex.quote(str(REPO)), python_q=shlex.quote(sys.executable))
    (work / "Snakefile").write_text(snakefile)

    def run(*kinds: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--retries", "2", "--keep-going"]
        cmd += ["--config", f"kinds=[{','.join(kinds)}]"]
        return subprocess.run(cmd, cwd=work, capture_output=True, text=True)

    first = run("user", "crash")
    assert first.returncode != 0
    out = first.stdout + first.stderr
    # Snakemake retried each failed job twice (3 attempts, 1000, 2000, 3000 MB); the user error's work ran once
    assert out.count("Trying to restart job") == 4 and "mem_mb=3000" in out, out[-3000:]
    assert (work / "counts" / "crash").read_text() == "3"
    assert (work / "counts" / "user").read_text() == "1"
    log = (work / "logs" / "user.log").read_text()
    assert "error: counts/user: not the input this step needs; give another" in log
    assert "error: not run again" in log
    record = json.loads(user_error_record(work / "logs" / "user.log").read_text())
    assert record["message"] == "counts/user: not the input this step needs; give another"
    # A new Snakemake run runs the job again, once; with the input fixed it succeeds and the record goes.
    assert run("user").returncode != 0 and (work / "counts" / "user").read_text() == "2"
    (work / "fixed").touch()
    assert run("user").returncode == 0 and (work / "counts" / "user").read_text() == "3"
    assert not user_error_record(work / "logs" / "user.log").exists()


@pytest.mark.slow  # a dry run and a run of the project's Snakefile: about 10 s
def test_the_workflow_does_not_repeat_a_step_that_refused_its_input(tmp_path):
    """split_l10n on an l10n pairs file that holds no pair (the step's UserError): the retries stop at once."""
    config = str(tiny_config(tmp_path))
    dry = snakemake(["-n", "-p", "--forceall", "--configfile", config], tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    command = next(line for line in dry.stdout.splitlines() if "workflow_scripts.corpus split" in line)
    argv, redirect = (shlex.split(part) for part in command.split("Shell command: ", 1)[1].split(" 2>> "))
    pairs, train = (argv[argv.index(flag) + 1] for flag in ("--pairs", "--out-train"))  # relative to tmp_path
    log = tmp_path / redirect[0]
    (tmp_path / pairs).parent.mkdir(parents=True)
    (tmp_path / pairs).touch()  # no job writes it (it exists), and it holds no pair
    run = snakemake(["--configfile", config, "--cores", "1", "--retries", "2", train], tmp_path)
    assert run.returncode != 0
    out = run.stdout + run.stderr
    assert out.count("Trying to restart job") == 2, out[-4000:]
    assert out.count("error: not run again: an earlier attempt of this job in this Snakemake run") == 2, out[-4000:]
    record = json.loads(user_error_record(log).read_text())
    assert record["message"].startswith(f"{pairs}: no sentence pairs among 0 line(s)")
    assert f"error: {record['message']}" in log.read_text()
