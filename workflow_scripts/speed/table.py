"""Speed records in the long results table, their speed-ups over Source with spread, and the Markdown speed section.

A speed record names its variant (``mode``, ``decoding``, ``batch_size``); in the long table its metric becomes
``metric@mode.decoding.bBATCH`` (e.g. ``chars_per_second@teacher_forced.greedy.b1``), with the repeats' ``min`` and
``max`` beside the median; a record timed in llama.cpp prefixes its engine and GGUF type
(``paired_speedup@llama.cpp-f16.teacher_forced.greedy.b1``). The headline variant, generation at batch size 1 with the
run's first decoding (the paper timed generation at batch size 1), is also written under the plain metric name, so the
paper's views and older result files read the same names as before; a task that generates nothing (a log-likelihood
task) has its log-likelihood pass there.
"""

from __future__ import annotations

import pandas as pd

HEADLINE_MODE = "generate"
CHOICE_MODE = "loglikelihood"  # the log-likelihood tasks: the forward pass over prompt and choices (speed.choices)
RATE_METRICS = ("chars_per_second", "source_tokens_per_second", "tokens_per_second")
# (derived metric, metric it divides by Source's): speed-ups in each unit.
SPEEDUPS = (
    ("speedup_chars", "chars_per_second"),
    ("speedup_source_tokens", "source_tokens_per_second"),
    ("speedup", "tokens_per_second"),
)
BOUND = "token_ratio_bound"
OVER_BOUND = "speedup_over_bound"  # speedup_source_tokens ÷ the model's bound on the text timed
PAIRED = "paired_speedup"  # teacher forcing with Source timed in the same job (a raw record, see measure.py)
PAIRED_OVER_BOUND = "paired_speedup_over_bound"


def variant_name(record: dict) -> str:
    """``mode.decoding.bBATCH`` of a speed record; ``ENGINE-TYPE.mode.decoding.bBATCH`` for one timed in another
    engine than transformers (rule serve_speed: ``llama.cpp-f16.teacher_forced.greedy.b1``, and without a GGUF type
    ``vllm.generate_fixed.greedy.b1``; docs/serving.md)."""
    name = f"{record['mode']}.{record['decoding']}.b{record['batch_size']}"
    engine = "-".join(str(record[key]) for key in ("engine", "gguf") if record.get(key))  # vllm: no GGUF type
    return f"{engine}.{name}" if engine else name


def headline_variant(records: list[dict]) -> str | None:
    """Generation at batch size 1 with the first decoding the run timed; for a task that generates nothing (a
    log-likelihood task: ``speed.choices``), its log-likelihood pass (None when it timed neither)."""
    for r in records:
        if r.get("mode") == HEADLINE_MODE and r.get("batch_size") == 1:
            return variant_name(r)
    for r in records:
        if r.get("mode") == CHOICE_MODE:
            return variant_name(r)
    return None


def flatten(records: list[dict]) -> list[dict]:
    """Long-table rows (task, metric, value, min, max) of one result file's records; see the module docstring."""
    timed = [r for r in records if "mode" in r]
    headlines = {task: headline_variant([r for r in timed if r["task"] == task]) for task in {r["task"] for r in timed}}
    rows = []
    for r in records:
        row = {"task": r["task"], "metric": r["metric"], "value": float(r["value"])}
        row.update({k: r[k] for k in ("min", "max", "seed", "run") if k in r})
        if "mode" not in r:
            rows.append(row)
            continue
        variant = variant_name(r)
        rows.append({**row, "metric": f"{r['metric']}@{variant}"})
        if variant == headlines[r["task"]]:
            rows.append(row)
    return rows


def split_metric(metric: str) -> tuple[str, str]:
    """(base metric, "@variant" or "") of a long-table metric name."""
    base, sep, variant = metric.partition("@")
    return base, sep + variant


def derived_speedups(frame: pd.DataFrame, cell_key, is_source) -> list[dict]:
    """Speed-up rows of every variant in each unit, ``min``/``max`` from both sides' repeats (``units.ratio_range``),
    and the speed-up ÷ bound; relative to the Source row of the same model, language, task and variant."""
    from workflow_scripts.speed.units import ratio_range

    groups: dict[tuple, dict[str, list]] = {}
    for _, row in frame.iterrows():
        base, variant = split_metric(row["metric"])
        if base in RATE_METRICS or base in (BOUND, PAIRED):
            entry = groups.setdefault((cell_key(row), row["task"], variant), {})
            entry.setdefault(base, []).append(row)
    source = {
        (key[0], key[1], task, variant): entry
        for (key, task, variant), entry in groups.items()
        if is_source(key[2], key[3])
    }
    out = []
    for (key, task, variant), entry in groups.items():
        bound = _mean_bound(entry)
        if PAIRED in entry and bound:  # needs no Source row: Source ran in the same job
            p = sum(r["value"] for r in entry[PAIRED]) / len(entry[PAIRED])
            out.append({"key": key, "task": task, "metric": PAIRED_OVER_BOUND + variant, "value": p / bound})
        base_entry = source.get((key[0], key[1], task, variant))
        if base_entry is None:
            continue
        for name, rate in SPEEDUPS:
            if rate not in entry or rate not in base_entry:
                continue
            model, src = _spread(entry[rate]), _spread(base_entry[rate])
            if src["value"] == 0 or src["min"] == 0:
                continue
            value, low, high = ratio_range(model, src)
            out.append({"key": key, "task": task, "metric": name + variant, "value": value, "min": low, "max": high})
            if name == "speedup_source_tokens" and bound:
                out.append({"key": key, "task": task, "metric": OVER_BOUND + variant, "value": value / bound})
    return out


def _mean_bound(entry: dict[str, list]) -> float | None:
    """The unit's bound (mean over seeds); None without one or at 0: a free generation that decoded to no text (a
    model that ends its answer at once) has no Source tokens, and no speed-up can be set against it."""
    if BOUND not in entry:
        return None
    bound = sum(r["value"] for r in entry[BOUND]) / len(entry[BOUND])
    return bound if bound > 0 else None


def _spread(rows: list) -> dict[str, float]:
    """Mean of the medians, mins and maxes of several rows (several seeds); a row without a spread is its own."""
    values = [r["value"] for r in rows]
    lows = [r["min"] if pd.notna(r.get("min")) else r["value"] for r in rows]
    highs = [r["max"] if pd.notna(r.get("max")) else r["value"] for r in rows]
    return {"value": sum(values) / len(values), "min": sum(lows) / len(lows), "max": sum(highs) / len(highs)}


SECTION_COLUMNS = (
    ("characters per second", "chars_per_second", "{:.1f}"),
    ("unpaired speed-up (characters)", "speedup_chars", "{:.2f}x"),
    ("unpaired speed-up (Source tokens)", "speedup_source_tokens", "{:.2f}x"),
    ("unpaired speed-up (own tokens)", "speedup", "{:.2f}x"),
    ("bound", BOUND, "{:.2f}x"),
    ("unpaired ÷ bound", OVER_BOUND, "{:.2f}"),
    ("paired speed-up", PAIRED, "{:.2f}x"),
    ("paired ÷ bound", PAIRED_OVER_BOUND, "{:.2f}"),
)


def _entry(rows: pd.DataFrame, fmt: str) -> str:
    value = rows["value"].mean()
    text = fmt.format(value)
    if "min" in rows and rows["min"].notna().any():
        low, high = rows["min"].mean(), rows["max"].mean()
        text += f" [{fmt.format(low).rstrip('x')}–{fmt.format(high).rstrip('x')}]"
    return text


def markdown_section(frame: pd.DataFrame) -> list[str]:
    """Markdown lines of the speed section: per model, language, method and variant, the rate and the speed-ups over
    Source in each unit with [min–max] over repeats, the token-count bound and the speed-up ÷ bound."""
    if frame.empty:
        return []
    split = frame["metric"].map(split_metric)
    frame = frame.assign(base=[b for b, _ in split], variant=[v.removeprefix("@") for _, v in split])
    frame = frame[frame["variant"] != ""]
    if frame.empty:
        return []
    from workflow_scripts.paper.names import TASK_NAMES, language_name, model_name, variant_name

    header = ["Model", "Language", "Method", "Task", "Timed", *(c[0] for c in SECTION_COLUMNS)]
    lines = [
        "## Speed",
        "",
        "Median over repeats [worst–best], on identical prompts (teacher-forced: identical text too). Unpaired "
        "speed-ups divide the model's rate by Source's measured in another job, so machine load between the jobs "
        "is not cancelled: read them as noise where they disagree with the paired ones, which time Source in the "
        "same job.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    keys = ["model", "language", "method", "label", "task", "variant"]
    for key, part in frame.groupby(keys, sort=True, dropna=False):
        model, lang, method, label, task, variant = key
        entries = []
        for _, metric, fmt in SECTION_COLUMNS:
            rows = part[part["base"] == metric]
            entries.append(_entry(rows, fmt) if not rows.empty else "–")
        name = label if isinstance(label, str) else method
        where = [model_name(model), language_name(lang), str(name), TASK_NAMES.get(task, task), variant_name(variant)]
        lines.append("| " + " | ".join([*where, *entries]) + " |")
    return [*lines, ""]
