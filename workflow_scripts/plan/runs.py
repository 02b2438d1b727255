"""Where a configuration writes: one folder of ``results/`` per run, so two configurations never share an output path.

Every output of a configuration lies under ``results/<run>/`` (data, models, cells, tables, paper tables, logs,
benchmarks). The run is the config's ``run`` key, else the name of its config file (``config.yaml`` is ``default``,
``configs/paper.yaml`` is ``paper``). Only ``results/downloads/`` is shared: mirrors of hub datasets, corpora and
assets, which every configuration that names the same source reads alike. A run folder records the config files
that write it (``.run.json``); another configuration reaching the same folder is refused before any job runs.
Outputs lying directly under ``results/`` (outside any run folder) are named, with the command that moves them into
one: ``python -m tools.migrate_results`` (docs/grid.md, "Runs").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from workflow_scripts.io import write_json

RESULTS = Path("results")
DOWNLOADS = "downloads"  # the one folder of results/ every run shares
DOWNLOADS_ROOT = RESULTS / DOWNLOADS
MARKER = ".run.json"
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# A run folder name's most characters (the schema's run.maxLength): file systems refuse a name over 255 bytes, and
# the run's output paths add the cell's names beneath it.
MAX_RUN_CHARS = 100
# The top-level folders a run writes (its tables, data, models, logs...), besides one folder per model key.
RUN_FOLDERS = ("tables", "paper", "findings", "analysis", "data", "models", "logs", "benchmarks")


def run_name(config: dict, configfiles: Sequence[str | Path]) -> str:
    """The run a configuration writes: its ``run`` key, else its config files' names (``config`` is ``default``),
    joined by ``+`` when several are given."""
    if config.get("run"):
        return str(config["run"])
    stems = ["default" if Path(f).stem == "config" else Path(f).stem for f in configfiles]
    return "+".join(stems) or "default"


def run_of_configfiles(configfiles: Sequence[str | Path], run: str | None = None) -> str:
    """The run that config files write (``run`` when given): their merged ``run`` key, else their names."""
    if run:
        return run
    config: dict = {}
    for f in configfiles:
        if Path(f).is_file():
            config.update(yaml.safe_load(Path(f).read_text(encoding="utf-8")) or {})
    return run_name(config, configfiles)


def run_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a run folder, or None."""
    if len(name) > MAX_RUN_CHARS:
        return (
            f"run {name[:40]!r}... has {len(name)} characters; a run folder name has at most {MAX_RUN_CHARS}: set a "
            "shorter `run:` in the config (or --config run=NAME)"
        )
    if not RUN_NAME.match(name):
        return (
            f"run {name!r}: a run folder name is letters, digits, '.', '_', '+' and '-', starting with a letter "
            "or digit; set `run:` in the config (or --config run=NAME)"
        )
    if name == DOWNLOADS:
        return f"run {name!r}: results/{DOWNLOADS}/ is shared by every run; choose another name (`run:`)"
    return None


def run_root(name: str, results: Path = RESULTS) -> Path:
    return results / name


def _shown(path: str | Path, workdir: Path) -> str:
    """A config file as the marker records it: relative to the working directory when under it (a moved clone
    keeps its names), else absolute."""
    p = Path(path) if Path(path).is_absolute() else workdir / path
    try:
        return str(p.absolute().relative_to(workdir.absolute()))
    except ValueError:
        return str(p)


def owner(root: Path) -> list[str] | None:
    """The config files recorded as writing the run folder ``root``, or None (no marker yet)."""
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))["configfiles"]
    except (OSError, KeyError, json.JSONDecodeError):  # no marker, or no folder (results/ a file: refused later)
        return None


def owner_conflict(root: Path, configfiles: Sequence[str | Path], workdir: Path) -> str | None:
    """Why this configuration may not write ``root``: the folder is recorded as another configuration's, or None."""
    recorded = owner(root)
    mine = [_shown(f, workdir) for f in configfiles]
    if recorded is None or recorded == mine:
        return None
    return (
        f"{root}/ holds the outputs of --configfile {' '.join(recorded)}, not of {' '.join(mine) or '(none)'}; "
        f"two configurations never share a run folder: give this one its own `run:` name (or --config run=NAME), "
        f"or, to let it take the folder over, delete {root / MARKER}"
    )


def claim(root: Path, configfiles: Sequence[str | Path], workdir: Path) -> None:
    """Record the config files that write ``root`` (written once, atomically, when a real run starts)."""
    if owner(root) is not None:
        return
    write_json(root / MARKER, {"configfiles": [_shown(f, workdir) for f in configfiles]})


def _looks_like_cell_tree(folder: Path) -> bool:
    """A model key's folder of outputs outside any run: <model>/<lang>/{tokenizer,init,<method>}/..."""
    return any(
        child.is_dir() and any((child / name).exists() for name in ("tokenizer", "init", "Source", "mumo"))
        for child in folder.iterdir()
    )


def outside_runs(results: Path = RESULTS) -> list[Path]:
    """Outputs lying directly under ``results/``, in no run folder: the top-level folders a run writes, and model
    folders of cells (``results/<model>/<lang>/...``). A run folder (its marker) and downloads are not."""
    if not results.is_dir():
        return []
    found = []
    for entry in sorted(results.iterdir()):
        if not entry.is_dir() or entry.name == DOWNLOADS or (entry / MARKER).exists():
            continue
        if entry.name in RUN_FOLDERS:
            found.append(entry)
        elif entry.name not in RUN_FOLDERS and _looks_like_cell_tree(entry):
            found.append(entry)
    return found


def outside_runs_message(found: Sequence[Path], run: str) -> str:
    """One message naming the outputs outside any run folder, what this run does with them, and the move."""
    names = ", ".join(f"{p.name}/" for p in found)
    return (
        f"results/ holds outputs outside any run folder ({names}); this run writes under results/{run}/ and does not "
        "read them. Move them into the run folder of the configuration that wrote them without recomputing: "
        "`python -m tools.migrate_results --configfile <that config>` (config.yaml's are results/default/; -n lists "
        "the moves first), or delete them"
    )


def plan_run(config: dict, configfiles: Sequence[str | Path], workdir: Path) -> tuple[str, str | None]:
    """The run a configuration writes and a warning about outputs outside any run folder; ValueError where it may
    not write there (a bad name, a folder another configuration writes, or one of outputs outside any run). Paths are
    relative to the working directory ``workdir``, where Snakemake runs."""
    run = run_name(config, configfiles)
    problem = run_name_problem(run)
    if problem:
        raise ValueError(problem)
    root = run_root(run)  # relative to the working directory, as every output path
    problem = owner_conflict(root, configfiles, workdir)
    if problem:
        raise ValueError(problem)
    found = outside_runs()
    if root in found:
        return run, start_problem(run)
    return run, outside_runs_message(found, run) if found else None


def start_problem(run: str) -> str | None:
    """Why a real run may not start: its run folder is a folder of outputs outside any run (run `paper` beside
    results/paper/, the paper tables of such outputs), or None. A dry run plans it all the same: no path is shared."""
    found = outside_runs()
    if run_root(run) not in found:
        return None
    return (
        f"{run_root(run)}/ is not a run folder yet, and a real run of this configuration waits until it is emptied: "
        + outside_runs_message(found, run)
    )


def migrate(run: str, configfiles: Sequence[str | Path], results: Path = RESULTS, dry_run: bool = False) -> list[str]:
    """Move the outputs outside any run folder into ``results/<run>/`` and record ``configfiles`` as its owner.

    Files keep their modification times, so Snakemake finds them up to date; nothing is overwritten (a name already
    in the run folder stops the move before anything moves). Returns one line per move.
    """
    problem = run_name_problem(run)
    if problem:
        raise ValueError(problem)
    root = run_root(run, results)
    workdir = results.absolute().parent
    conflict = owner_conflict(root, configfiles, workdir)
    if conflict:
        raise ValueError(conflict)
    found = outside_runs(results)
    if root in found:  # results/paper/ of the paper tables, outside any run, and run `paper`
        raise ValueError(f"{root}/ itself lies outside any run folder: move it into another run first (--run default)")
    clashes = [str(root / p.name) for p in found if (root / p.name).exists()]
    if clashes:
        raise ValueError(f"already in {root}/: {', '.join(clashes)}; nothing was moved")
    moves = [f"{p}/ -> {root / p.name}/" for p in found]
    if dry_run or not found:
        return moves
    claim(root, configfiles, workdir)
    for p in found:
        p.rename(root / p.name)
    return moves
