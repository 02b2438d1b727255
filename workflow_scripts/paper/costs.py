"""What each grid cell cost: measured wall time and GPU-hours from Snakemake's benchmark files, per model x language x
method, next to the time limits the planning report counts (workflow_scripts/plan/resources.py, as
`python -m tools.plan`).

Jobs named by a cell's method slug (lapt, evaluate_*, measure_speed) are the cell's own; jobs several cells share
(tokenizers, initialization, the source model) are listed as their own rows, so nothing is counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from workflow_scripts.corpora import STEP_WORDS
from workflow_scripts.mt_sources import STEP_WORDS as MT_STEP_WORDS
from workflow_scripts.plan import paths
from workflow_scripts.plan.resources import GPU_RULES, SIZE_RESOURCES, sized_resources

COLUMNS = ["model", "language", "method", "rules", "jobs", "wall_h", "cpu_h", "gpu_h", "requested_h", "requested_gpu_h"]
# Benchmark file names per rule (rules/*.smk `benchmark:`): the wildcards before the method or shared job name.
CELL_RULES = ("lapt", "evaluate_mt", "evaluate_ppl", "measure_speed")


def parse_benchmark_name(rule: str, stem: str) -> tuple[str, str, str]:
    """(model, language, method or shared job) from a benchmark file's name, e.g. tiny.th.Mean.k50.2x2LS.clm.L64."""
    if rule == "prepare_source_model":
        return stem, "", "(shared) source model"
    if rule in (*STEP_WORDS, *MT_STEP_WORDS):  # the corpus kinds' and the MT kinds' jobs (corpora/, mt_sources/)
        return "", stem, f"(shared) data: {rule}"
    parts = stem.split(".", 2)
    if len(parts) < 3 and rule != "train_aux_tokenizer":
        return "", "", f"(shared) {rule} {stem}"
    model, lang = parts[0], parts[1]
    rest = parts[2] if len(parts) > 2 else ""
    if rule in CELL_RULES or rule.startswith("evaluate_"):
        return model, lang, rest
    return model, lang, f"(shared) {rule} {rest}".rstrip()


def read_benchmarks(root: str | Path) -> pd.DataFrame:
    """One row per benchmark file of the run folder ``root`` (paths.benchmark): rule, cell, wall and CPU seconds and
    peak memory (MB)."""
    rows = []
    for path in paths.found(paths.benchmark("*", "*", paths.glob_root(root))):
        rule = path.parent.name
        model, lang, method = parse_benchmark_name(rule, path.stem)
        bench = pd.read_csv(path, sep="\t")
        if bench.empty or "s" not in bench:
            continue
        seconds = float(bench["s"].iloc[-1])  # with repeats, the last run (the one whose outputs were kept)
        cpu = float(bench["cpu_time"].iloc[-1]) if "cpu_time" in bench else float("nan")
        rss = float(bench["max_rss"].iloc[-1]) if "max_rss" in bench else float("nan")
        rows.append(
            {
                "rule": rule,
                "model": model,
                "language": lang,
                "method": method,
                "s": seconds,
                "cpu_s": cpu,
                "max_rss": rss,
            }
        )
    return pd.DataFrame(rows, columns=["rule", "model", "language", "method", "s", "cpu_s", "max_rss"])


def run_devices(root: str | Path) -> set[str]:
    """The devices this run's training and speed jobs ran on (train_stats.json, speed.json's hardware), e.g. {"cpu"}."""
    devices = set()
    top = paths.glob_root(root)
    for path in paths.found(paths.train_stats("*", "*", "*", top)):
        devices.add(str(json.loads(path.read_text(encoding="utf-8")).get("device", "")))
    for path in paths.found(paths.eval_file("*", "*", "*", "speed.json", top)):
        hardware = (json.loads(path.read_text(encoding="utf-8")).get("details") or {}).get("hardware") or {}
        devices.add(str(hardware.get("device", "")))
    return {d.split(":")[0] for d in devices if d}


def _requested(rule: str, size: str | None) -> float | None:
    """Time limit (hours) of attempt 1 for ``rule`` on a model of ``size``, or None when the cost table lacks it."""
    if rule not in SIZE_RESOURCES:
        return None
    try:
        return sized_resources(rule, size)["runtime"] / 60
    except KeyError:
        return None


def cost_table(
    bench: pd.DataFrame, sizes: Mapping[str, str] | None = None, devices: set[str] | None = None
) -> pd.DataFrame:
    """Per model x language x method (or shared job): jobs, measured wall, CPU and GPU-hours, requested hours. A run
    whose jobs all ran on the CPU (``devices`` {"cpu"}) spent no GPU-hours, whatever the rules would ask a cluster."""
    if bench.empty:
        return pd.DataFrame(columns=COLUMNS)
    sizes = sizes or {}
    bench = bench.copy()
    gpus = bench["rule"].isin(GPU_RULES).astype(int)
    bench["wall_h"] = bench["s"] / 3600
    bench["cpu_h"] = (bench["cpu_s"] if "cpu_s" in bench else float("nan")) / 3600
    bench["gpu_h"] = bench["wall_h"] * gpus * (0 if devices == {"cpu"} else 1)
    requested = [
        _requested(r, sizes.get(m)) if sizes.get(m) or not m else None
        for r, m in zip(bench["rule"], bench["model"], strict=True)
    ]
    bench["requested_h"] = requested
    bench["requested_gpu_h"] = [None if h is None else h * g for h, g in zip(requested, gpus, strict=True)]
    grouped = bench.groupby(["model", "language", "method"], sort=True, dropna=False)
    table = grouped.agg(
        rules=("rule", lambda r: ", ".join(sorted(set(r)))),
        jobs=("rule", "size"),
        wall_h=("wall_h", "sum"),
        cpu_h=("cpu_h", lambda v: v.sum(min_count=1)),
        gpu_h=("gpu_h", "sum"),
        requested_h=("requested_h", lambda v: v.sum(min_count=len(v))),
        requested_gpu_h=("requested_gpu_h", lambda v: v.sum(min_count=len(v))),
    ).reset_index()
    # cells first, shared jobs after, in the grid's order
    table["shared"] = table["method"].str.startswith("(shared)")
    return table.sort_values(["shared", "model", "language", "method"]).drop(columns="shared")[COLUMNS]


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The cost table as a reader sees it: models, languages, methods and steps in words (names.py), not by their
    configuration keys, slugs and rule names."""
    from workflow_scripts.paper import names

    def method(text: str) -> str:
        if not text.startswith("(shared) "):
            return names.setting_words(text)
        text = text.removeprefix("(shared) ")
        rule, _, rest = text.removeprefix("data: ").partition(" ")
        if rule not in names.STEP_NAMES:
            return f"(shared) {text}"
        return f"(shared) {names.step_name(rule)}" + (f": {names.setting_words(rest)}" if rest else "")

    return table.assign(
        model=[names.model_name(m) if m else "" for m in table["model"]],
        language=[names.language_name(lg) if lg else "" for lg in table["language"]],
        method=[method(str(m)) for m in table["method"]],
        rules=[", ".join(names.step_name(r) for r in str(rules).split(", ")) for rules in table["rules"]],
    ).rename(columns={"rules": "steps"})


def _hours(value: object) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.3f}" if value < 10 else f"{value:,.1f}"


def note(devices: set[str] | None = None) -> str:
    """What the columns mean; on a CPU-only run, that it spent no GPU-hours."""
    from workflow_scripts.paper.names import step_name

    gpu_steps = ", ".join(dict.fromkeys(step_name(r) for r in GPU_RULES))
    gpu = (
        "GPU h = 0: every job of this run ran on the CPU (train_stats.json, speed.json); CPU h is the jobs' CPU time."
        if devices == {"cpu"}
        else f"GPU h = wall h x the GPUs a job asks for (one for {gpu_steps}); CPU h = the jobs' CPU time."
    )
    return (
        "Measured: Snakemake `benchmark:` files (results/<run>/benchmarks/), wall seconds of each job. "
        f"{gpu} "
        "Requested: the attempt-1 time limits of workflow_scripts/plan/resources.py by model size, the upper bound "
        "`python -m tools.plan` sums (– where the model's size is not known: pass --config)."
    )


def markdown(table: pd.DataFrame, data_labels: Iterable[str] = (), devices: set[str] | None = None) -> str:
    """The cost table as Markdown, with the totals and what the columns mean."""
    lines = ["## Cost per grid cell", ""]
    lines += [f"> Data: {label}." for label in data_labels] + ([""] if data_labels else [])
    if table.empty:
        return "\n".join([*lines, "No benchmark files (results/<run>/benchmarks/) yet.", ""])
    head = [
        "model",
        "language",
        "method",
        "steps",
        "jobs",
        "wall h",
        "CPU h",
        "GPU h",
        "requested h",
        "requested GPU h",
    ]
    lines += ["| " + " | ".join(head) + " |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    hours = ("wall_h", "cpu_h", "gpu_h", "requested_h", "requested_gpu_h")
    for rec in shown(table).to_dict("records"):
        values = [rec[c] for c in ("model", "language", "method", "steps", "jobs")]
        values += [_hours(rec[c]) for c in hours]
        lines.append("| " + " | ".join(str(v) for v in values) + " |")
    total = [_hours(table[c].sum(min_count=1)) for c in ("wall_h", "cpu_h", "gpu_h")]
    req = [_hours(table[c].sum(min_count=len(table))) for c in ("requested_h", "requested_gpu_h")]
    lines.append(f"| **total** | | | | {int(table['jobs'].sum())} | {' | '.join(total)} | {req[0]} | {req[1]} |")
    return "\n".join([*lines, "", note(devices)]) + "\n"


def to_html(table: pd.DataFrame, data_labels: Iterable[str] = (), devices: set[str] | None = None) -> str:
    """The cost table as a standalone HTML page (for the Snakemake report)."""
    import html

    from workflow_scripts.paper.render import CSS

    body = shown(table).to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="–") if not table.empty else ""
    labels = "".join(f"<p><i>Data: {html.escape(lbl)}.</i></p>" for lbl in data_labels)
    text = html.escape(note(devices)) if not table.empty else "No benchmark files yet."
    head = f"<html><head><meta charset='utf-8'><style>{CSS}</style></head><body><h3>Cost per grid cell</h3>"
    return f"{head}{labels}{body}<p>{text}</p></body></html>\n"
