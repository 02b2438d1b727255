"""Experiment tracking of a LAPT run (the config's optional ``tracking`` block; docs/tracking.md): each step's loss,
learning rate and tokens seen, the tokens per second at each read-back of the losses, and the held-out curve's bits
per character, sent to TensorBoard, Weights & Biases, MLflow or trackio through their own libraries.

One ``Tracker`` protocol with an adapter per backend. A backend's package is imported only when it is configured;
planning refuses a configured backend whose package is missing (``tracking_problems``). Only the main process of a
sharded run tracks. A tracker that cannot start stops the job before it trains (``TrackingError``); one that fails
later is reported once and switched off, so that a logging failure never ends a training run.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workflow_scripts.io import UserError

log = logging.getLogger("vocabexp.lapt")


@dataclass(frozen=True)
class Backend:
    """A tracker: the module its adapter imports, and what to install where that module is missing."""

    module: str
    pip: str


BACKENDS = {
    "tensorboard": Backend("tensorboard", "pip install tensorboard"),
    "wandb": Backend("wandb", "pip install wandb"),
    "mlflow": Backend("mlflow", "pip install mlflow-skinny alembic"),
    "trackio": Backend("trackio", "pip install trackio"),
}


class TrackingError(UserError):
    """A configured tracker that cannot start: raised before training, naming the backend and what to do."""


@dataclass(frozen=True)
class TrackingSpec:
    """Where one LAPT job's metrics go: the backend, its project, folder and options, the run's name, and the cell
    and settings recorded as the run's parameters."""

    backend: str
    project: str
    dir: str
    run_name: str
    mode: str = "offline"  # wandb
    tracking_uri: str | None = None  # mlflow; None: sqlite in ``dir``
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrackingSpec:
        spec = cls(**json.loads(text))
        if spec.backend not in BACKENDS:
            raise TrackingError(f"--tracking: unknown backend {spec.backend!r}; expected one of {sorted(BACKENDS)}")
        return spec


def cell_spec(
    config: dict, results: str, model: str, lang: str, method: str, seed: int | None = None
) -> TrackingSpec | None:
    """The tracking of one training cell from the config's ``tracking`` block (None: no block): the run is named
    model/lang/method/seed (``seed``: the cell's training seed, by default the config's), the project defaults to the
    run's name, the folder to <results>/tracking."""
    block = config.get("tracking")
    if not block:
        return None
    seed = config["seed"] if seed is None else seed
    return TrackingSpec(
        backend=block["backend"],
        project=block.get("project") or Path(results).name,
        dir=block.get("dir") or str(Path(results) / "tracking"),
        run_name=f"{model}/{lang}/{method}/seed{seed}",
        mode=block.get("mode", "offline"),
        tracking_uri=block.get("tracking_uri"),
        params={"model": model, "lang": lang, "method": method, "seed": seed},
    )


def tracking_problems(config: dict) -> list[str]:
    """Planning: a configured backend whose package this environment lacks, named with its key and the install."""
    block = config.get("tracking")
    if not block:
        return []
    backend = BACKENDS[block["backend"]]
    if importlib.util.find_spec(backend.module) is not None:
        return []
    return [
        f"tracking.backend: {block['backend']} needs the Python package {backend.module!r}, which is not installed "
        f"here; run `{backend.pip}` (or remove the tracking block)"
    ]


# (step, {metric name: value}) in step order: the points of one read-back
Points = list[tuple[int, dict[str, float]]]


class Tracker(Protocol):
    """One backend's run: ``run_id`` is kept in the checkpoint, so that a resumed job continues the same run."""

    run_id: str

    def log(self, points: Points) -> None: ...

    def close(self) -> None: ...


class TensorBoard:
    """Event files in <dir>/<run name>; a resumed run purges the events at and after its first step again, so that
    the steps a killed job logged after its last checkpoint are shown once, as the resumed job took them."""

    def __init__(self, spec: TrackingSpec, run_id: str | None, first_step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.run_id = run_id or spec.run_name
        self.writer = SummaryWriter(str(Path(spec.dir) / spec.run_name), purge_step=first_step)
        if run_id is None:
            self.writer.add_text("params", json.dumps(spec.params, sort_keys=True), 0)

    def log(self, points: Points) -> None:
        for step, metrics in points:
            for name, value in metrics.items():
                self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class Wandb:
    """A W&B run in <dir>/wandb, offline (``wandb sync`` uploads it later) or online; a resume reopens its id."""

    def __init__(self, spec: TrackingSpec, run_id: str | None, first_step: int) -> None:
        import wandb

        Path(spec.dir).mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=spec.project,
            name=spec.run_name,
            dir=spec.dir,
            mode=spec.mode,
            id=run_id,
            resume="allow" if run_id else None,
            config=spec.params,
        )
        self.run_id = self.run.id

    def log(self, points: Points) -> None:
        for step, metrics in points:
            self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


class Mlflow:
    """An MLflow run in experiment ``project`` at ``tracking_uri`` (default: sqlite:///<dir>/mlflow.db, MLflow's
    local store); a resume logs on into the same run."""

    def __init__(self, spec: TrackingSpec, run_id: str | None, first_step: int) -> None:
        from mlflow.tracking import MlflowClient

        uri = spec.tracking_uri
        if uri is None:
            Path(spec.dir).mkdir(parents=True, exist_ok=True)
            uri = f"sqlite:///{Path(spec.dir).resolve() / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=uri)
        if run_id is None:
            run_id = self.client.create_run(self._experiment(spec.project), run_name=spec.run_name).info.run_id
            self.client.log_batch(run_id, params=_mlflow_params(spec.params))
        self.run_id = run_id

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name)
        except Exception:  # another cell's job created it meanwhile
            return self.client.get_experiment_by_name(name).experiment_id

    def log(self, points: Points) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, step) for step, metrics in points for k, v in metrics.items()]
        for i in range(0, len(batch), 1000):  # MLflow's limit of metrics per batch
            self.client.log_batch(self.run_id, metrics=batch[i : i + 1000])

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


def _mlflow_params(params: dict[str, Any]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(k, json.dumps(v) if isinstance(v, dict | list) else str(v)) for k, v in sorted(params.items())]


class Trackio:
    """A trackio run in its local SQLite store under <dir> (TRACKIO_DIR); a resume reopens the run by its name."""

    def __init__(self, spec: TrackingSpec, run_id: str | None, first_step: int) -> None:
        os.environ["TRACKIO_DIR"] = str(Path(spec.dir).resolve())  # read by trackio when it is imported
        import trackio

        self.trackio = trackio
        self.run = trackio.init(
            project=spec.project, name=spec.run_name, config=spec.params, resume="allow" if run_id else "never"
        )
        self.run_id = spec.run_name

    def log(self, points: Points) -> None:
        for step, metrics in points:
            self.trackio.log(metrics, step=step)

    def close(self) -> None:
        self.trackio.finish()


ADAPTERS = {"tensorboard": TensorBoard, "wandb": Wandb, "mlflow": Mlflow, "trackio": Trackio}


class Tracking:
    """The run's tracker, guarded: the first failure to log is reported once and switches tracking off."""

    def __init__(self, spec: TrackingSpec, tracker: Tracker) -> None:
        self.spec, self.tracker = spec, tracker
        self.ref = {"backend": spec.backend, "run_id": tracker.run_id}  # what the checkpoint keeps

    def log(self, points: Points) -> None:
        if self.tracker is None or not points:
            return
        try:
            self.tracker.log(points)
        except Exception as e:  # a full disk or a lost server must not end hours of training
            log.warning(
                "tracking (%s) failed at step %d and is off for the rest of this run: %s: %s",
                self.spec.backend,
                points[0][0],
                type(e).__name__,
                e,
            )
            self.tracker = None

    def close(self) -> None:
        tracker, self.tracker = self.tracker, None
        if tracker is not None:
            try:
                tracker.close()
            except Exception as e:
                log.warning("tracking (%s) failed to close: %s: %s", self.spec.backend, type(e).__name__, e)


def start(spec: TrackingSpec, saved: dict[str, Any] | None, first_step: int, settings: dict[str, Any]) -> Tracking:
    """Open the run of ``spec`` (the checkpoint's run where ``saved`` names one of this backend), whose next logged
    step is ``first_step``; ``settings`` (the run's hparams, procedure, ...) join the cell in its parameters.
    TrackingError where the backend cannot start."""
    backend = BACKENDS[spec.backend]
    if importlib.util.find_spec(backend.module) is None:
        raise TrackingError(
            f"tracking.backend {spec.backend}: the package {backend.module!r} is not installed; "
            f"run `{backend.pip}` (or remove the tracking block)"
        )
    run_id = saved.get("run_id") if saved and saved.get("backend") == spec.backend else None
    spec = TrackingSpec(**{**asdict(spec), "params": {**settings, **spec.params}})
    try:
        tracker = ADAPTERS[spec.backend](spec, run_id, first_step)
    except Exception as e:
        raise TrackingError(
            f"tracking.backend {spec.backend}: could not start run {spec.run_name!r} (project {spec.project!r}, "
            f"dir {spec.dir}): {type(e).__name__}: {e}; fix the tracking block or remove it"
        ) from e
    log.info("tracking: %s run %s (%s) from step %d", spec.backend, spec.run_name, tracker.run_id, first_step)
    return Tracking(spec, tracker)


def step_points(rows: list[dict[str, Any]], tokens_per_second: float) -> Points:
    """The tracked points of loss-history rows just read back (loop.py ``_record``, ``flush_losses``), the
    throughput so far (the log line's tokens/s) with the last."""
    points: Points = [
        (
            row["step"],
            {
                "train/loss": row["loss"],
                "train/lr": row["lr"],
                "train/tokens_seen": row["tokens_seen"],
                "train/epoch": row["epoch"],
                "train/stage": row["stage"],
            },
        )
        for row in rows
    ]
    if points:
        points[-1][1]["train/tokens_per_second"] = tokens_per_second
    return points


def curve_points(row: dict[str, Any]) -> Points:
    """The tracked point of one held-out curve row (curve.py ``curve_row``)."""
    return [(row["step"], {"heldout/bits_per_char": row["bits_per_char"]})]
