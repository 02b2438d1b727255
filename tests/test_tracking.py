"""Experiment tracking of LAPT (the config's tracking block; workflow_scripts/lapt/tracking.py): a tiny real run
tracked offline by TensorBoard and by MLflow, read back with their own readers and compared with the run's loss curve
and held-out curve files; a killed and resumed run logging on at its step; a tracker that fails mid-run; planning's
message for a backend whose package is missing; the lapt jobs' commands with and without the block."""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from tests.conftest import REPO, lapt_args, snakemake, tiny_config
from workflow_scripts import lapt
from workflow_scripts.lapt import tracking
from workflow_scripts.lapt.curve import CurveSpec
from workflow_scripts.lapt.tracking import TrackingSpec

pytestmark = pytest.mark.usefixtures("one_thread")

HP = {"max_steps": 4, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0, "log_every": 2}


def _spec(backend: str, work: Path) -> TrackingSpec:
    return TrackingSpec(
        backend=backend,
        project="tiny",
        dir=str(work / "tracking"),
        run_name="tiny/th/Mean/seed0",
        params={"model": "tiny", "lang": "th", "method": "Mean", "seed": 0},
    )


def _heldout(tmp_path: Path, thai_lines: list[str]) -> Path:
    path = tmp_path / "heldout.txt"
    path.write_text("\n".join(thai_lines[100:130]) + "\n", encoding="utf-8")
    return path


def _tsv(path: Path) -> list[dict[str, str]]:
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    return [dict(zip(header.split("\t"), row.split("\t"), strict=True)) for row in rows]


def read_tensorboard(spec: TrackingSpec) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of the run's event files, as TensorBoard shows them (purged steps left out)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(Path(spec.dir) / spec.run_name))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def read_mlflow(spec: TrackingSpec) -> tuple[list, dict[str, list[tuple[int, float]]]]:
    """The project's runs, and every metric's history of its one run, from MLflow's local store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{(Path(spec.dir) / 'mlflow.db').resolve()}")
    experiment = client.get_experiment_by_name(spec.project)
    runs = client.search_runs([experiment.experiment_id])
    run = runs[0]
    history = {
        name: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, name)] for name in run.data.metrics
    }
    return runs, history


READERS = {"tensorboard": read_tensorboard, "mlflow": lambda spec: read_mlflow(spec)[1]}


@pytest.mark.slow  # one tiny training run per backend, with a held-out curve
@pytest.mark.parametrize("backend", ["tensorboard", "mlflow"])
def test_tracker_holds_the_runs_losses_and_curve(backend, tmp_path, tiny_llama_dir, thai_file, thai_lines):
    spec = _spec(backend, tmp_path)
    curve = CurveSpec(3, _heldout(tmp_path, thai_lines), 8, 4, tmp_path / "curve.tsv")
    lapt.train(
        tiny_llama_dir,
        thai_file,
        tmp_path / "out",
        procedure="2x2LS",
        seq_len=16,
        hparams=HP,
        checkpoint_dir=tmp_path / "ckpt",
        loss_curve=tmp_path / "loss.tsv",
        curve=curve,
        tracking=spec,
    )
    got = READERS[backend](spec)
    rows, points = _tsv(tmp_path / "loss.tsv"), _tsv(tmp_path / "curve.tsv")
    assert [s for s, _ in got["train/loss"]] == [int(r["step"]) for r in rows] == [1, 2, 3, 4]
    if backend == "mlflow":  # float64: the files' printed digits exactly
        assert [f"{v:.6f}" for _, v in got["train/loss"]] == [r["loss"] for r in rows]
        assert [f"{v:.6f}" for _, v in got["heldout/bits_per_char"]] == [p["bits_per_char"] for p in points]
    # TensorBoard keeps float32: equal to the printed digits up to float32's rounding of values near 10
    tol = 1e-5
    assert [v for _, v in got["train/loss"]] == pytest.approx([float(r["loss"]) for r in rows], abs=tol)
    assert [v for _, v in got["train/lr"]] == pytest.approx([float(r["lr"]) for r in rows], rel=1e-6)
    assert [int(v) for _, v in got["train/tokens_seen"]] == [int(r["tokens_seen"]) for r in rows]
    assert [s for s, _ in got["heldout/bits_per_char"]] == [int(p["step"]) for p in points] == [0, 2, 4]
    bpc = [float(p["bits_per_char"]) for p in points]
    assert [v for _, v in got["heldout/bits_per_char"]] == pytest.approx(bpc, abs=tol)
    # tokens/s at each read-back of the losses (log_every 2): steps 2 and 4
    assert [s for s, _ in got["train/tokens_per_second"]] == [2, 4]
    assert all(v > 0 for _, v in got["train/tokens_per_second"])
    if backend == "mlflow":
        run = read_mlflow(spec)[0][0]
        assert run.info.run_name == spec.run_name and run.info.status == "FINISHED"
        assert run.data.params["method"] == "Mean" and run.data.params["procedure"] == "2x2LS"


def _cli(model: Path, train: Path, work: Path, spec: TrackingSpec) -> list[str]:
    hp = {**HP, "max_steps": 6, "log_every": 1, "checkpoint_every": 2}
    return [*lapt_args(model, train, work, hp, "2x2LS"), "--tracking", spec.to_json(), "--log", str(work / "log.txt")]


@pytest.mark.slow  # per backend a training subprocess killed at step 3, and its resume
@pytest.mark.parametrize("backend", ["tensorboard", "mlflow"])
def test_a_resumed_run_logs_on_at_its_step_into_the_same_run(backend, tmp_path, tiny_llama_dir, thai_file):
    spec = _spec(backend, tmp_path)
    cmd = [sys.executable, "-m", "workflow_scripts.lapt", *_cli(tiny_llama_dir, thai_file, tmp_path, spec)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # killed at the end of step 3, after logging it (log_every 1); the checkpoint is step 2's
    killed = subprocess.run(cmd, cwd=REPO, env={**env, lapt.KILL_AT_STEP_ENV: "3"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    saved = lapt.load_checkpoint(tmp_path / "ckpt" / lapt.CHECKPOINT_FILE)
    assert saved["step"] == 2 and saved["tracker"]["backend"] == backend
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    opened = f"tracking: {backend} run {spec.run_name} ({saved['tracker']['run_id']}) from step 3"
    assert opened in (tmp_path / "log.txt").read_text(encoding="utf-8")
    rows = _tsv(tmp_path / "loss.tsv")
    losses = READERS[backend](spec)["train/loss"]
    if backend == "mlflow":
        assert len(read_mlflow(spec)[0]) == 1  # the resumed job logged into the killed job's run
        # MLflow keeps every value logged: step 3 twice (killed, then resumed); the last is the resumed one's
        losses = list({s: (s, v) for s, v in losses}.values())
    # TensorBoard purges the killed job's steps from 3 on: each step once, the resumed job's values
    assert [s for s, _ in losses] == [1, 2, 3, 4, 5, 6]
    assert [v for _, v in losses] == pytest.approx([float(r["loss"]) for r in rows], abs=1e-5)


class Failing:
    """A tracker whose second log fails, as a full disk or a lost server would."""

    calls: ClassVar[list] = []

    def __init__(self, spec, run_id, first_step) -> None:
        self.run_id = "r1"

    def log(self, points) -> None:
        Failing.calls.append(points)
        if len(Failing.calls) == 2:
            raise OSError("disk full")

    def close(self) -> None:
        Failing.calls.append("closed")


@pytest.mark.slow  # a tiny training run
def test_a_failing_tracker_is_reported_once_and_training_goes_on(
    tmp_path, tiny_llama_dir, thai_file, monkeypatch, caplog
):
    monkeypatch.setitem(tracking.ADAPTERS, "tensorboard", Failing)
    Failing.calls = []
    with caplog.at_level(logging.WARNING, logger="vocabexp.lapt"):
        stats = lapt.train(
            tiny_llama_dir,
            thai_file,
            tmp_path / "out",
            procedure="2x2LS",
            seq_len=16,
            hparams={**HP, "log_every": 1},
            checkpoint_dir=tmp_path / "ckpt",
            tracking=_spec("tensorboard", tmp_path),
        )
    assert stats["steps"] == 4 and (tmp_path / "out" / "config.json").exists()
    assert len(Failing.calls) == 2  # nothing logged after the failure, and nothing closed
    warnings = [r.getMessage() for r in caplog.records if "tracking" in r.getMessage()]
    failed = "tracking (tensorboard) failed at step 2 and is off for the rest of this run: OSError: disk full"
    assert warnings == [failed]


def test_a_tracker_that_cannot_start_stops_before_training(tmp_path, monkeypatch):
    def broken(spec, run_id, first_step):
        raise ConnectionError("no server at http://tracker:5000")

    monkeypatch.setitem(tracking.ADAPTERS, "mlflow", broken)
    with pytest.raises(tracking.TrackingError) as e:
        tracking.start(_spec("mlflow", tmp_path), None, 0, {})
    assert str(e.value) == (
        f"tracking.backend mlflow: could not start run 'tiny/th/Mean/seed0' (project 'tiny', dir {tmp_path}/tracking): "
        "ConnectionError: no server at http://tracker:5000; fix the tracking block or remove it"
    )


def test_planning_names_the_missing_package_and_its_install(monkeypatch):
    from tests.test_bad_input import planning_errors, test_config

    real = tracking.importlib.util.find_spec
    monkeypatch.setattr(tracking.importlib.util, "find_spec", lambda name: None if name == "wandb" else real(name))
    config = test_config()
    config["tracking"] = {"backend": "wandb"}
    assert planning_errors(config) == [
        "  - tracking.backend: wandb needs the Python package 'wandb', which is not installed here; run "
        "`pip install wandb` (or remove the tracking block)"
    ]
    config["tracking"] = {"backend": "tensorboard"}
    assert planning_errors(config) == []
    config["tracking"] = {"backend": "neptune"}
    assert "tracking.backend" in planning_errors(config)[0]


class FakeWandbRun:
    id = "abc123"

    def __init__(self) -> None:
        self.logged: list = []

    def log(self, metrics, step) -> None:
        self.logged.append((step, metrics))

    def finish(self) -> None:
        self.logged.append("finished")


def test_wandb_adapter_opens_offline_and_resumes_its_id(tmp_path, monkeypatch):
    """Without wandb installed: the adapter's calls on a stand-in module (the readers above test real backends)."""
    opened: list[dict] = []
    run = FakeWandbRun()
    fake = type(sys)("wandb")
    fake.init = lambda **kw: opened.append(kw) or run
    monkeypatch.setitem(sys.modules, "wandb", fake)
    spec = _spec("wandb", tmp_path)
    adapter = tracking.Wandb(spec, None, 0)
    adapter.log([(1, {"train/loss": 2.5}), (2, {"train/loss": 2.0})])
    adapter.close()
    assert opened[0]["mode"] == "offline" and opened[0]["id"] is None and opened[0]["dir"] == spec.dir
    assert run.logged == [(1, {"train/loss": 2.5}), (2, {"train/loss": 2.0}), "finished"]
    tracking.Wandb(spec, adapter.run_id, 3)
    assert opened[1]["id"] == "abc123" and opened[1]["resume"] == "allow"


@pytest.mark.slow  # one dry run of the tiny grid
def test_lapt_jobs_carry_the_cells_tracking_only_when_configured(tmp_path):
    config = tiny_config(tmp_path, tracking={"backend": "tensorboard", "project": "study"})
    done = snakemake(["-n", "-p", "--configfile", str(config), "--forcerun", "lapt", "--until", "lapt"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    commands = [line for line in done.stdout.splitlines() if "-m workflow_scripts.lapt " in line]
    assert commands
    for line in commands:
        args = shlex.split(line.split("workflow_scripts.lapt", 1)[1])
        spec = TrackingSpec.from_json(args[args.index("--tracking") + 1])
        model, lang, method = spec.run_name.split("/")[:3]
        assert spec.backend == "tensorboard" and spec.project == "study"
        assert spec.dir.endswith("/tracking") and spec.params == {
            "model": model,
            "lang": lang,
            "method": method,
            "seed": spec.params["seed"],
        }
        assert f"/{model}/{lang}/{method}/" in line
    off = snakemake(["-n", "-p", "--configfile", str(tiny_config(tmp_path)), "--until", "lapt"], tmp_path)
    assert off.returncode == 0 and "-m workflow_scripts.lapt " in off.stdout and "--tracking" not in off.stdout
