"""The tiny grid through a real Slurm cluster with the command the README shows: `snakemake --profile slurm`.

The site profile `slurm` is written into a throwaway HOME by the README's command (`make slurm-profile`), and the CI
overlay profiles/ci-slurm is added for the test cluster (status by squeue, fast polling, two jobs); what the workflow
needs (GPUs, memory, time limits, retries) comes from the rules and profiles/default. Runs against the single-node
cluster that .ci/slurm/start.sh starts (ClusterName vocabci, one fake GPU), never against another cluster. One
scenario, checked by the tests below: a local reference run; a Slurm run whose first LAPT job is killed by Slurm at
its time limit after its step-2 checkpoint (Snakemake resubmits it with a longer time limit; the retry resumes from
that checkpoint and ends with the local run's weights) and which is then stopped with SIGINT while a job runs
(Snakemake cancels it); a second Slurm run that completes. Nothing races a timer: the first LAPT job holds after its
step-2 checkpoint (lapt's test-only hold hook) until Slurm kills it, its time limit lowered to one minute with
`scontrol update`; the job running at the SIGINT is suspended first (`scontrol suspend`), so it cannot finish before
the test acts, however loaded the machine. Evidence comes from the executor's log (Slurm job ids) and `scontrol show
job -d` (state, time limit, allocated GRES), not from sacct: the test cluster has no accounting database.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO, assert_mc_speed_records, tiny_config
from workflow_scripts import lapt
from workflow_scripts.plan.models import describe_models
from workflow_scripts.plan.resources import GPU_RULES, sized_resources

pytestmark = [pytest.mark.e2e, pytest.mark.slurm]

CLUSTER_NAME = "vocabci"  # .ci/slurm/start.sh
REQUIRED_ENV = "VOCAB_SLURM_REQUIRED"  # set by .ci/run: there a missing cluster is a failure, not a skip
# The site profile by name, as users type it (found in the throwaway HOME), then the CI overlay.
PROFILES = ["--profile", "slurm", "--profile", str(REPO / "profiles" / "ci-slurm")]
# The README's command for the site profile, with the test cluster's one partition, which holds its GPU (no account:
# the cluster has none).
PROFILE_COMMAND = ["make", "-s", "slurm-profile", "PARTITION=debug", "GPU_PARTITION=same"]
CLUSTER_RULES = {
    "extract_l10n_pairs",
    "split_l10n",
    "prepare_source_model",
    "train_aux_tokenizer",
    "expand_tokenizer",
    "initialize",
    "lapt",
    "evaluate_mt",
    "mc_proxy",
    "evaluate_mc",
    "evaluate_ppl",
    "measure_speed",
}
# The tiny config with one method, Mean, which still runs every rule of the tiny grid (fewer jobs: CI time).
METHODS = [{"init": "Mean"}]
# Speed at batch size 1, one timed pass, no warm-up (timings are not compared): the speed jobs still go through Slurm
# with their GPU, with a sixth of the tiny config's generation passes (batch sizes 1 and 2, 2 repeats and a warm-up).
SPEED = {"batch_size": 1, "repeats": 1, "warmup": 0}
TIMING_METRICS = re.compile(r"per_second|speedup|seconds")
# Left out of the bit-for-bit comparison: mt, whose greedy predictions on the random tiny model (near-tied logits)
# have differed between a local and a Slurm run of the same grid (a stale `datasets` cache is a candidate cause, not
# confirmed over repeated runs), and speed, whose records are timings plus counts of those same greedy outputs and
# the hardware and thread count of the machine that ran the job. Everything upstream (data, tokenizers, weights) and
# every other task must be equal.
UNCOMPARED_TASKS = ("mt", "speed")
# resumed_from: the steps a training job resumed at (the retry of the job killed at its time limit), run history.
VOLATILE_KEYS = re.compile(r"seconds|per_second|peak_memory|resumed_from")
HOLD_STEP = 2  # configs/test.yaml: 6 steps, a checkpoint every 2
# The time limit the held LAPT job is given (minutes, the least Slurm has): Slurm then ends it with TIMEOUT.
SHORT_LIMIT = 1
SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def cluster_problem() -> str | None:
    """Why the test cluster cannot be used, or None when it is up."""
    for tool in ("sbatch", "squeue", "scancel", "scontrol", "sinfo"):
        if shutil.which(tool) is None:
            return f"no Slurm client ({tool}) on PATH; .ci/slurm/start.sh installs Slurm and starts a test cluster"
    try:
        config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "scontrol show config timed out: no Slurm controller reachable (.ci/slurm/start.sh starts one)"
    if config.returncode != 0:
        return f"no Slurm controller reachable ({config.stderr.strip()[:200]}); .ci/slurm/start.sh starts one"
    name = re.search(r"^ClusterName\s*=\s*(\S+)", config.stdout, re.MULTILINE)
    if not name or name.group(1) != CLUSTER_NAME:
        found = name.group(1) if name else "unnamed"
        return f"the reachable Slurm cluster is {found!r}, not the test cluster {CLUSTER_NAME!r}: not submitting to it"
    nodes = subprocess.run(["sinfo", "-h", "-N", "-o", "%T %G"], capture_output=True, text=True, timeout=20).stdout
    if not re.search(r"^(idle|mixed|allocated)\S* .*gpu", nodes, re.MULTILINE):
        return f"the test cluster has no usable node with a GPU gres (sinfo: {nodes.strip()!r})"
    return None


def job_info(jobid: str) -> dict[str, str]:
    """`scontrol show job -d` as a dict (the test cluster keeps finished jobs for MinJobAge seconds)."""
    out = subprocess.run(["scontrol", "show", "job", "-d", jobid], capture_output=True, text=True, timeout=20).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def minutes(limit: str) -> int:
    """Minutes of a Slurm time limit such as 00:20:00 or 1-02:00:00."""
    days, _, clock = limit.rpartition("-")
    h, m, s = (int(x) for x in clock.split(":"))
    return int(days or 0) * 1440 + h * 60 + m + (s > 0)


def running_jobs() -> list[tuple[str, str]]:
    """(job id, comment) of running jobs; the executor puts `rule_<rule>_wildcards_<...>` in the comment."""
    out = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i|%k"], capture_output=True, text=True, timeout=20).stdout
    return [tuple(line.split("|", 1)) for line in out.splitlines() if "|" in line]


def trainer_pids(jobid: str) -> list[int]:
    """The LAPT trainer processes of a running job (`scontrol listpids`, on this one-node cluster)."""
    out = subprocess.run(["scontrol", "listpids", jobid], capture_output=True, text=True, timeout=20).stdout
    pids = [int(line.split()[0]) for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit()]
    return [pid for pid in pids if is_trainer(pid)]


def is_trainer(pid: int) -> bool:
    """Whether process ``pid`` is alive and runs the LAPT module (a reused pid runs something else)."""
    try:
        return b"workflow_scripts.lapt" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def env(home: Path | None = None) -> dict[str, str]:
    """The tests' environment with their interpreter's bin/ first on PATH; with `home`, a throwaway HOME (and so
    ~/.config/snakemake) for the Slurm runs."""
    out = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if home is not None:
        out |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return out


def install_site_profile(home: Path) -> Path:
    """Run the README's `make slurm-profile` with HOME=`home`; the profile file it wrote."""
    result = subprocess.run(PROFILE_COMMAND, cwd=REPO, env=env(home), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    path = home / ".config" / "snakemake" / "slurm" / "config.yaml"
    assert path.is_file(), result.stdout
    return path


def scenario_config(workdir: Path, one_job_per_cell: bool = False) -> Path:
    """The tiny config with METHODS and SPEED, written into ``workdir``. The Slurm runs evaluate each task in its own
    rule (every rule through sbatch); the local reference run, one job per cell (fewer processes on the two CPUs
    the runs share), which writes the same files."""
    path = tiny_config(workdir, methods=METHODS)
    config = yaml.safe_load(path.read_text())
    config["evaluation"]["speed"] |= SPEED
    config["evaluation"]["one_job_per_cell"] = one_job_per_cell
    path.write_text(yaml.safe_dump(config))
    return path


def snakemake_cmd(workdir: Path, config: Path, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir)]
    return [*cmd, "--configfile", str(config), *extra]


def freeze_running(predicate, timeout: float, proc: subprocess.Popen, what: str, log: Path) -> str:
    """Find a running job that `predicate(jobid, comment)` accepts and suspend it (`scontrol suspend`: SIGSTOP to its
    processes), so that it cannot finish before the test acts on it however loaded the machine is; a job that ended
    between `squeue` and the suspension is passed over. Its Slurm job id."""

    def suspended() -> str | None:
        for jobid, comment in running_jobs():
            if predicate(jobid, comment):
                done = subprocess.run(["scontrol", "suspend", jobid], capture_output=True, text=True, timeout=20)
                if done.returncode == 0:
                    return jobid
        return None

    return wait_for(suspended, timeout, proc, what, log)


def wait_for(predicate, timeout: float, proc: subprocess.Popen, what: str, log: Path):
    """Poll `predicate` until it returns something truthy; fail with the run's log if Snakemake ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"Snakemake ended (rc {proc.returncode}) before {what}:\n{log.read_text()[-4000:]}")
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}:\n{log.read_text()[-4000:]}")


@dataclass
class Scenario:
    """What the runs did: the submissions of both Slurm runs, the timed-out and retried jobs, and the work folders."""

    local: Path
    slurm: Path
    submissions: list[tuple[str, str, Path]] = field(default_factory=list)  # (rule, Slurm job id, Slurm log)
    timed_out: str = ""  # the LAPT job killed by Slurm at its (lowered) time limit
    submitted_limit: str = ""  # that job's time limit as submitted, before the test lowered it
    held_cell: Path | None = None  # its cell folder (results/<run>/<model>/<lang>/<method>)
    held_pids: list[int] = field(default_factory=list)  # its trainer's processes (scontrol listpids)
    retried: str = ""  # its resubmission
    interrupted: str = ""  # the job running when Snakemake got SIGINT
    sigint_rc: int | None = None
    leftover: list[str] = field(default_factory=list)  # jobs of the first run still queued or running after it ended
    untouched: dict[Path, int] = field(default_factory=dict)  # finished outputs' mtimes before the second run
    second: subprocess.CompletedProcess | None = None
    again: subprocess.CompletedProcess | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def submissions(log_text: str) -> list[tuple[str, str, Path]]:
    out = []
    for jobid, path in SUBMITTED.findall(log_text):
        rule = re.search(r"/rule_(\w+)/", path)
        out.append((rule.group(1) if rule else "?", jobid, Path(path)))
    return out


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    problem = cluster_problem()
    if problem:
        if os.environ.get(REQUIRED_ENV) == "1":
            pytest.fail(f"{REQUIRED_ENV}=1 but {problem}")
        pytest.skip(problem)
    base = tmp_path_factory.mktemp("slurm")
    s = Scenario(local=base / "local", slurm=base / "slurm")
    s.local.mkdir()
    s.slurm.mkdir()

    # The local reference run shares the two CPUs with the Slurm run, which mostly waits (submission, polling).
    start = time.time()
    local_log = open(s.local / "run.log", "w")
    local = subprocess.Popen(
        snakemake_cmd(s.local, scenario_config(s.local, one_job_per_cell=True), "--cores", "2"),
        cwd=s.local,
        env=env(),
        stdout=local_log,
        stderr=subprocess.STDOUT,
    )

    config = scenario_config(s.slurm)
    home = base / "home"
    install_site_profile(home)
    held = base / "held_at_step"
    slurm_env = env(home) | {lapt.HOLD_AT_STEP_ENV: f"{HOLD_STEP}:{held}"}
    log_path = s.slurm / "first_run.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        snakemake_cmd(s.slurm, config, *PROFILES), cwd=s.slurm, env=slurm_env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        # The first LAPT job to reach step 2 holds there after its checkpoint; its time limit is then lowered to a
        # minute, so that Slurm kills it (TIMEOUT) and the retries resubmit it (attempt 2, more time).
        wait_for(held.exists, 900, proc, f"a LAPT job holding at step {HOLD_STEP}", log_path)
        s.held_cell = Path(held.read_text(encoding="utf-8")).parent
        s.timed_out = wait_for(
            lambda: next(
                (j for j, c in running_jobs() if c.startswith("rule_lapt_") and c.endswith(s.held_cell.name)), None
            ),
            60,
            proc,
            f"the held LAPT job of {s.held_cell.name} in squeue",
            log_path,
        )
        s.submitted_limit = job_info(s.timed_out)["TimeLimit"]
        s.held_pids = trainer_pids(s.timed_out)
        limit = ["scontrol", "update", f"JobId={s.timed_out}", f"TimeLimit={SHORT_LIMIT}"]
        subprocess.run(limit, check=True, timeout=20)
        retry = wait_for(
            lambda: next(
                (j for r, j, _ in submissions(log_path.read_text()) if r == "lapt" and int(j) > int(s.timed_out)),
                None,
            ),
            600,
            proc,
            "the timed-out LAPT job's resubmission",
            log_path,
        )
        s.retried = retry
        # Once the retry ran, stop Snakemake with SIGINT while some later job runs: it cancels that job.
        wait_for(
            lambda: job_info(s.retried).get("JobState") == "COMPLETED", 600, proc, "the LAPT retry to finish", log_path
        )
        # Frozen, it is still running when Snakemake handles the SIGINT, however long that takes.
        s.interrupted = freeze_running(
            lambda jobid, _: int(jobid) > int(s.retried), 600, proc, "a job running after the LAPT retry", log_path
        )
        s.untouched = {
            p: p.stat().st_mtime_ns
            for p in [
                *s.slurm.glob("results/default/data/**/*.txt"),
                *s.slurm.glob("results/default/*/*/*/train_stats.json"),
            ]
        }
        proc.send_signal(signal.SIGINT)
        s.sigint_rc = proc.wait(timeout=120)
    except BaseException:
        if local.poll() is None:
            local.send_signal(signal.SIGINT)
            local.wait(timeout=120)
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        first = submissions(log_path.read_text())
        s.leftover = [j for _, j, _ in first if job_info(j).get("JobState") in ("PENDING", "RUNNING")]
        if s.leftover:  # a failed test: leave the cluster empty for the next
            subprocess.run(["scancel", *s.leftover], timeout=20)
    s.seconds["first Slurm run, until SIGINT"] = time.time() - start

    start = time.time()
    s.second = subprocess.run(
        snakemake_cmd(s.slurm, config, *PROFILES), cwd=s.slurm, env=slurm_env, capture_output=True, text=True
    )
    (s.slurm / "second_run.log").write_text(s.second.stdout + s.second.stderr)
    s.seconds["second Slurm run"] = time.time() - start
    # The held trainer outlives its job on the test cluster (.ci/slurm/start.sh, proctrack/linuxproc): end it.
    for pid in s.held_pids:
        if is_trainer(pid):
            os.kill(pid, signal.SIGKILL)
    try:
        local_rc = local.wait(timeout=600)
    finally:
        local_log.close()
    assert local_rc == 0, (s.local / "run.log").read_text()[-4000:]
    s.submissions = first + submissions(s.second.stdout + s.second.stderr)
    s.again = subprocess.run(
        snakemake_cmd(s.slurm, config, *PROFILES, "-n"), cwd=s.slurm, env=slurm_env, capture_output=True, text=True
    )
    print("timings (s):", {k: round(v) for k, v in s.seconds.items()})
    return s


def test_every_cluster_rule_went_through_sbatch(scenario):
    assert scenario.second.returncode == 0, scenario.second.stderr[-4000:]
    rules = {rule for rule, _, _ in scenario.submissions}
    assert rules == CLUSTER_RULES  # `tables` is a local rule: it runs in Snakemake's own process
    ids = [jobid for _, jobid, _ in scenario.submissions]
    assert len(ids) == len(set(ids))
    for rule, jobid, slurm_log in scenario.submissions:
        # The executor's per-rule Slurm logs (the site profile keeps them), named by the Slurm job id.
        assert slurm_log.name == f"{jobid}.log"
        assert slurm_log.is_relative_to(scenario.slurm / "results" / "logs" / "slurm" / f"rule_{rule}")
        if job_info(jobid).get("JobState") == "COMPLETED":
            assert slurm_log.exists() and f"rule {rule}:" in slurm_log.read_text()


def test_gpu_rules_were_allocated_a_gpu_and_no_other_rule_was(scenario):
    seen = set()
    for rule, jobid, _ in scenario.submissions:
        info = job_info(jobid)
        assert info, f"Slurm forgot job {jobid} ({rule}): MinJobAge too short for this test?"
        if info["JobState"] != "COMPLETED":
            continue
        # JOB_GRES is what the job was allocated on the node: the fake GPU of .ci/slurm/start.sh.
        assert (info.get("JOB_GRES") == "gpu:fake:1") == (rule in GPU_RULES), (rule, jobid, info.get("JOB_GRES"))
        seen.add(rule)
    assert seen & set(GPU_RULES) == set(GPU_RULES) & CLUSTER_RULES  # the GPU rules this grid runs


def test_job_killed_at_its_time_limit_is_resubmitted_with_more_time_and_resumes(scenario):
    timed_out, retried = job_info(scenario.timed_out), job_info(scenario.retried)
    assert timed_out["JobState"] == "TIMEOUT"  # Slurm's kill at the time limit, not a failure of the job
    assert minutes(timed_out["TimeLimit"]) == SHORT_LIMIT
    assert retried["JobState"] == "COMPLETED"
    assert timed_out["Comment"] == retried["Comment"]  # same rule and wildcards
    tiny = describe_models(yaml.safe_load((REPO / "configs" / "test.yaml").read_text()))["tiny"].parameters
    assert minutes(scenario.submitted_limit) == sized_resources("lapt", tiny, 1)["runtime"]
    assert minutes(retried["TimeLimit"]) == sized_resources("lapt", tiny, 2)["runtime"]
    # The retry resumed from the killed job's step-2 checkpoint, and trained to the uninterrupted local run's weights.
    stats = json.loads((scenario.held_cell / "train_stats.json").read_text())
    assert stats["resumed_from"] == [HOLD_STEP], stats
    cell = scenario.held_cell.relative_to(scenario.slurm)
    local = json.loads((scenario.local / cell / "train_stats.json").read_text())
    assert local["resumed_from"] == [] and local["final_loss"] == stats["final_loss"]
    weights = sorted((scenario.held_cell / "model").glob("*.safetensors"))
    assert weights
    for f in weights:
        assert f.read_bytes() == (scenario.local / cell / "model" / f.name).read_bytes(), f.name


def test_sigint_cancels_running_jobs_and_the_next_run_completes(scenario):
    assert scenario.sigint_rc not in (None, 0)
    assert job_info(scenario.interrupted)["JobState"] == "CANCELLED"
    assert scenario.leftover == []  # Snakemake cancelled what it had queued too
    assert scenario.second.returncode == 0, scenario.second.stderr[-4000:]
    redone = [p for p, mtime in scenario.untouched.items() if p.stat().st_mtime_ns != mtime]
    assert scenario.untouched and not redone, redone
    assert scenario.again.returncode == 0
    assert "Nothing to be done" in scenario.again.stdout + scenario.again.stderr
    # measure_speed, a rule of its own here (the local e2e runs evaluate one job per cell): mc timed, paired with Source
    assert_mc_speed_records(scenario.slurm / "results/default/tiny/th/Mean.k50.2x2LS.clm.L64/eval/speed.json", True)


def stable(obj):
    """A result or report without what differs between two identical runs: timings and peak memory."""
    if isinstance(obj, dict):
        if TIMING_METRICS.search(str(obj.get("metric", ""))):
            return None
        return {k: stable(v) for k, v in obj.items() if not VOLATILE_KEYS.search(k)}
    if isinstance(obj, list):
        return [x for x in (stable(v) for v in obj) if x is not None]
    return obj


def compared_files(results: Path) -> list[Path]:
    """Every output under the run folder, less logs, benchmarks (timings), checkpoints and hidden marker files, and the
    paper's tables and figures, the findings page and the model cards (card/README.md, and its copy in model/): views
    of results.csv (compared below without its timing rows) that show timings (Table 4, costs, the paired speed-ups)
    and carry creation dates (PDF) or the config file's path."""
    skip = {"logs", "benchmarks", "checkpoints", "paper", "findings", "card"}
    return sorted(
        p.relative_to(results)
        for p in results.rglob("*")
        if p.is_file()
        and not skip & set(p.relative_to(results).parts)
        and not p.name.startswith(".")
        and not (p.name == "README.md" and p.parent.name == "model")
    )


def test_outputs_equal_a_local_run(scenario):
    local, slurm = scenario.local / "results/default", scenario.slurm / "results/default"
    files = compared_files(local)
    assert compared_files(slurm) == files
    assert len(files) > 30
    different = []
    for f in files:
        if f.parent.name == "eval" and f.name.startswith(UNCOMPARED_TASKS):
            continue
        if f.suffix == ".json":
            same = stable(json.loads((local / f).read_text())) == stable(json.loads((slurm / f).read_text()))
        elif f.name in ("results.csv", "results.md"):
            continue  # below, without the timing rows
        elif f.name in ("results.html", "results.png", "results.pdf"):
            continue  # views of results.md that show its speed-ups (timings; the PDF a creation date)
        else:  # data, tokenizers, model weights (bit for bit), loss curves, predictions
            same = (local / f).read_bytes() == (slurm / f).read_bytes()
        if not same:
            different.append(f)
    assert not different

    def table(root: Path) -> pd.DataFrame:
        frame = pd.read_csv(root / "tables" / "results.csv")
        frame = frame[~frame["metric"].str.contains(TIMING_METRICS) & ~frame["task"].isin(UNCOMPARED_TASKS)]
        return frame.sort_values(["model", "language", "method", "task", "metric"]).reset_index(drop=True)

    expected, got = table(local), table(slurm)
    assert len(expected) >= 6 and {"acc", "bits_per_char", "perplexity"} <= set(expected["metric"])
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-9)
