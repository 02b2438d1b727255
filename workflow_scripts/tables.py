"""Collect result JSONs into one tidy long table (CSV) and a Markdown rendering per model (paper 002 Tables 3-4).

Each result file is {"cell": {...}, "records": [{"task", "metric", "value"}, ...], "details": {...}}; every record
becomes one row with the cell's columns. Runs of the same cell with different seeds stay separate rows (column
``seed``); the Markdown shows their mean, as the paper reports the mean over five runs.

Derived rows (Table 4), per model, language and task, relative to the Source row of the same model and language:
``speedup`` = tokens_per_second / Source's (the paper's definition), ``speedup_chars`` = chars_per_second / Source's
(speed on text, comparable across vocabularies), ``speedup_source_tokens`` (source-tokenizer tokens per second),
``speedup_over_bound`` (that speed-up ÷ the token-count bound), each per speed variant with its spread
(workflow_scripts/speed/table.py), and ``prompt_token_ratio`` and ``generated_token_ratio`` (mean prompt and
generated tokens / Source's). Means over seeds are taken before dividing. No Source row, no derived rows.

Training seeds (a methods entry's ``seed`` list, workflow_scripts/plan/grid.py) are cells of their own, one row set each
with column ``train_seed``; the Markdown groups a row name's seeds into one row: the mean ± sd over seeds and their
number. Derived rows ``bits_per_char_diff@Source`` and ``bits_per_char_diff@CPT-only`` (task ppl) give a cell's
difference in held-out bits per character to Source's and to CPT-only's (same model, language and training) with its
95% paired bootstrap interval in ``min``/``max`` (workflow_scripts/intervals.py), over a row name's seeds and the
held-out sentences: every seed's cell carries its row name's interval.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from workflow_scripts import intervals, tasks
from workflow_scripts.io import atomic_path, read_json, setup_logging, write_text
from workflow_scripts.paper import headline, names
from workflow_scripts.paper.headline import DATA_PREFIX, DATA_SUFFIX, markdown_data_labels, method_group
from workflow_scripts.plan.paths import eval_file
from workflow_scripts.speed import table as speed_table
from workflow_scripts.tasks import CHOICE_TASKS

log = logging.getLogger("vocabexp")

CELL_COLUMNS = [
    "model",
    "language",
    "method",
    "label",
    "init",
    "procedure",
    "objective",
    "seq_len",
    "k",
    "aux_vocab_size",
    # the method's other fields (grid.METHOD_FIELDS), so that no reader parses them back out of the slug
    "vocab",
    "posthoc",
    # the training seed (empty for Source); ``seed`` below is a record's evaluation seed (sampled generation runs)
    "train_seed",
]
# min / max: the spread of a speed measurement's repeats (workflow_scripts/speed/table.py); empty elsewhere
COLUMNS = [*CELL_COLUMNS, "task", "metric", "value", "seed", "run", "min", "max"]
INT_COLUMNS = ["seq_len", "k", "aux_vocab_size", "train_seed", "seed", "run"]

# (derived metric, metric it divides by Source's); the speed-ups in each unit: speed.table.derived_speedups
DERIVED = [
    ("prompt_token_ratio", "prompt_tokens"),
    ("generated_token_ratio", "generated_tokens"),
]

# Markdown columns of the main table: (header, task, metric, format). Token perplexity (per token of each model's
# own vocabulary) and the unpaired generation speed-ups (machine load between jobs) are listed apart: see markdown().
MARKDOWN_COLUMNS = tasks.markdown_columns()  # each task's columns (workflow_scripts/tasks/), in their place order
PPL_COLUMN = ("perplexity (per own token)", "ppl", "perplexity", "{:.2f}")
MISSING = "–"
SEEDS_NOTE = (
    "Seeds: the row's training seeds (each a cell of its own); where there are several, each number is the "
    'mean ± sd over seeds (docs/findings.md, "Seeds, intervals and noise").'
)
# Why a task can be absent (said in the "not run by this configuration" list when it has no result at all).
NOT_RUN_NOTES = {name: spec.not_run_note for name, spec in tasks.TASKS.items() if spec.not_run_note}


def is_source(method: object, label: object) -> bool:
    """True for the unadapted Source model's rows (method slug "source" or label "Source")."""
    return str(method).lower() == "source" or str(label).lower() == "source"


Sentences = dict[tuple[str, str, str], tuple[list[float], list[int]]]


def load_results(paths: list[str | Path], *, strict: bool = True) -> tuple[pd.DataFrame, list[str], Sentences]:
    """Long table of every record in ``paths``, the distinct ``details.data_label`` values found, and each ppl
    result's per-sentence NLL (nats) and characters (workflow_scripts/perplexity.py) by (model, language, method
    slug); results written without them are left out of the last (they get no interval).

    With ``strict`` False, JSON files that are not result files are skipped with a warning instead of an error.
    """
    rows, labels, notes = [], [], []
    sentences: Sentences = {}
    for path in paths:
        obj = read_json(path)
        if not (isinstance(obj, dict) and isinstance(obj.get("cell"), dict) and isinstance(obj.get("records"), list)):
            if strict:
                raise ValueError(f"{path}: not a result file (expected keys 'cell' and 'records')")
            log.warning("skipping %s: not a result file", path)
            continue
        details = obj.get("details") or {}
        label = details.get("data_label")
        task = str(details.get("task") or "")
        if label and task in CHOICE_TASKS and headline.label_task(label) != task:
            label = f"{task}: {label}"  # a benchmark's label is shown only where its task is
        if label and label not in labels:
            labels.append(label)
        reason = details.get("unavailable")
        if reason and f"{details.get('task')}: – ({reason})" not in notes:
            notes.append(f"{details.get('task')}: – ({reason})")
        if "nll_nats" in details and "chars" in details:
            cell = obj["cell"]
            sentences[(cell["model"], cell["language"], cell["method"])] = (details["nll_nats"], details["chars"])
        records = list(obj["records"])
        if details.get("n") and any(r.get("metric") == headline.TOKENS[1] for r in records):
            # how many held-out sentences tokens_per_sentence counts over, so the pages can say which set it is
            records.append({"task": headline.SENTENCES[0], "metric": headline.SENTENCES[1], "value": details["n"]})
        for rec in speed_table.flatten(records):
            row = {c: obj["cell"].get(c) for c in CELL_COLUMNS}
            # generation tasks run several times: each record carries its run and seed
            row.update(rec, seed=rec.get("seed", details.get("seed")), run=rec.get("run"))
            rows.append(row)
    return _typed(pd.DataFrame(rows, columns=COLUMNS)), labels + [f"note: {n}" for n in notes], sentences


def _cell_key(row: pd.Series) -> tuple:
    # .get: a frame from a results.csv written before a column was added (train_seed) reads it as empty
    return tuple(None if _missing(row.get(c)) else row.get(c) for c in CELL_COLUMNS)


def _group_key(row: pd.Series | dict) -> tuple:
    """A cell's key with its seed left out: the key of its row name's group of seeds."""
    key = dict(zip(CELL_COLUMNS, _cell_key(row), strict=True))
    key.update(method=method_group(key["method"], key["train_seed"]), train_seed=None)
    return tuple(key[c] for c in CELL_COLUMNS)


def fill_train_seed(frame: pd.DataFrame, seed: int | None) -> pd.DataFrame:
    """The config's seed (``seed``) in ``train_seed`` where a cell that is not Source records none (a cell of the
    config's seed keeps its evaluation command: grid.Method.cell)."""
    if seed is None or frame.empty:
        return frame
    adapted = [not is_source(m, lb) for m, lb in zip(frame["method"], frame["label"], strict=True)]
    frame.loc[frame["train_seed"].isna() & pd.Series(adapted, index=frame.index), "train_seed"] = seed
    return frame


def _is_cpt_for(gkey: tuple) -> Callable[[tuple], bool]:
    """Whether a group key is the CPT-only of ``gkey``'s training (procedure, objective, sequence length)."""
    col = {c: i for i, c in enumerate(CELL_COLUMNS)}
    same = ("procedure", "objective", "seq_len", "posthoc")
    return lambda k: k[col["label"]] == "CPT-only" and all(k[col[c]] == gkey[col[c]] for c in same)


def add_intervals(frame: pd.DataFrame, sentences: Sentences) -> pd.DataFrame:
    """Append each cell's ``bits_per_char_diff@Source`` and ``@CPT-only`` rows (module docstring): the difference in
    held-out bits per character over its seeds, and its 95% paired bootstrap interval (over seeds and sentences:
    intervals.paired_bpc_diff) in min/max. CPT-only is the one with the cell's training (procedure, objective,
    sequence length)."""
    if frame.empty:
        return frame
    ppl = frame[(frame["task"] == "ppl") & (frame["metric"] == "bits_per_char")]
    groups: dict[tuple, list[tuple]] = {}
    for _, row in ppl.iterrows():
        groups.setdefault(_group_key(row), []).append(_cell_key(row))
    pooled = {}
    for gkey, keys in groups.items():
        keys = list(dict.fromkeys(keys))
        if any((k[0], k[1], k[2]) not in sentences for k in keys):
            continue  # a seed without per-sentence NLL (a result written before they were kept): no interval
        data = [sentences[(k[0], k[1], k[2])] for k in keys]
        if any(list(chars) != list(data[0][1]) for _, chars in data):
            log.warning("%s: its seeds scored different held-out sentences; no interval", gkey[2])
            continue
        pooled[gkey] = (intervals.stack([nll for nll, _ in data]), list(data[0][1]), keys)
    derived = []
    for gkey, (nll, chars, keys) in pooled.items():
        for ref, match in (("Source", lambda k: is_source(k[2], k[3])), ("CPT-only", _is_cpt_for(gkey))):
            other = next((g for g in pooled if g[:2] == gkey[:2] and g != gkey and match(g)), None)
            if other is None or match(gkey) or pooled[other][1] != chars:
                continue  # no reference, the reference itself, or other sentences: no paired interval
            iv = intervals.paired_bpc_diff(nll, pooled[other][0], chars)
            for key in keys:
                row = dict(zip(CELL_COLUMNS, key, strict=True))
                row.update(task="ppl", metric=headline.BPC_DIFF + ref, value=iv.diff, min=iv.low, max=iv.high)
                derived.append(row)
    if not derived:
        return frame
    return _typed(pd.concat([frame, _typed(pd.DataFrame(derived, columns=COLUMNS))], ignore_index=True))


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Integer settings stay integers in the CSV (512, not 512.0) while missing values stay empty."""
    for column in INT_COLUMNS:
        try:
            frame[column] = frame[column].astype("Int64")
        except (TypeError, ValueError):
            log.warning("column %s holds non-integer values; kept as is", column)
    return frame


def add_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """Append the speed-up and token-ratio rows (module docstring) for every cell that has a Source to compare to."""
    derived = []
    for rec in speed_table.derived_speedups(frame, _cell_key, is_source):
        row = dict(zip(CELL_COLUMNS, rec.pop("key"), strict=True))
        derived.append({**row, **rec, "seed": None})
    for metric_out, metric_in in DERIVED:
        part = frame[frame["metric"] == metric_in]
        if part.empty:
            continue
        means: dict[tuple, list] = {}
        for _, row in part.iterrows():
            means.setdefault((_cell_key(row), row["task"]), []).append(row["value"])
        source = {
            (key[0], key[1], task): sum(v) / len(v)
            for (key, task), v in means.items()
            if is_source(key[CELL_COLUMNS.index("method")], key[CELL_COLUMNS.index("label")])
        }
        for (key, task), values in means.items():
            base = source.get((key[0], key[1], task))
            if base is None or base == 0:
                continue
            row = dict(zip(CELL_COLUMNS, key, strict=True))
            row.update(task=task, metric=metric_out, value=(sum(values) / len(values)) / base, seed=None)
            derived.append(row)
    if not derived:
        return frame
    return _typed(pd.concat([frame, _typed(pd.DataFrame(derived, columns=COLUMNS))], ignore_index=True))


def _fmt_setting(value: object) -> str:
    if _missing(value):
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def settings_text(row: dict) -> str:
    """A cell's settings in words, e.g. "2x2 LS, clm, sequence length 512; 100 new tokens (auxiliary vocabulary
    8000)"."""
    parts = [names.training_text(row)]
    k, aux = _fmt_setting(row.get("k")), _fmt_setting(row.get("aux_vocab_size"))
    if row.get("vocab") == "replace" and aux:
        parts.append(f"vocabulary replaced ({aux} tokens)")
    elif k:
        parts.append(f"{k} new tokens" + (f" (auxiliary vocabulary {aux})" if aux else ""))
    return "; ".join(p for p in parts if p) or MISSING


def _grouped(frame: pd.DataFrame) -> tuple[dict, dict, dict]:
    """Per row of the page (a cell, its training seeds together): its fields, its values per (task, metric) and its
    number of seeds. Over several seeds the values are each seed's mean (their ± sd is over seeds); over one seed,
    each run's value (± sd over runs)."""
    per_cell: dict[tuple, dict[tuple, list]] = {}
    members: dict[tuple, list[tuple]] = {}
    cells: dict[tuple, dict] = {}
    for _, row in frame.iterrows():
        key, gkey = _cell_key(row), _group_key(row)
        if key not in per_cell:
            members.setdefault(gkey, []).append(key)
        cells.setdefault(gkey, dict(zip(CELL_COLUMNS, gkey, strict=True)))
        per_cell.setdefault(key, {}).setdefault((row["task"], row["metric"]), []).append(row["value"])
    values: dict[tuple, dict[tuple, list]] = {}
    for gkey, keys in members.items():
        if len(keys) == 1:
            values[gkey] = per_cell[keys[0]]
            continue
        metrics = dict.fromkeys(m for k in keys for m in per_cell[k])
        values[gkey] = {
            m: [sum(per_cell[k][m]) / len(per_cell[k][m]) for k in keys if m in per_cell[k]] for m in metrics
        }
    return cells, values, {gkey: len(keys) for gkey, keys in members.items()}


def not_run(tasks: set) -> list[str]:
    """The main table's tasks no result fills, in words, with why where it is known (NOT_RUN_NOTES)."""
    absent = dict.fromkeys(task for _, task, _, _ in MARKDOWN_COLUMNS if task not in tasks)
    return [names.TASK_NAMES.get(t, t) + (f" ({NOT_RUN_NOTES[t]})" if t in NOT_RUN_NOTES else "") for t in absent]


def markdown(
    frame: pd.DataFrame, data_labels: list[str] | None = None, figure: str | None = None, steps: dict | None = None
) -> str:
    """The results page: the lead (headline.py: tokens per sentence, paired speed-up and bound, bits per character,
    whether quality is held, ``figure`` beside it), then one table per model (rows language x method, Source first;
    mean ± sd over runs where a task ran more than once) with the columns some result fills, what this configuration
    did not run, token perplexity apart, and the speed section with its spreads."""
    lines = ["# Results", ""]
    notes = [label.removeprefix("note: ") for label in data_labels or [] if label.startswith("note: ")]
    tasks = set(frame["task"]) if not frame.empty else set()
    labels = [label for label in data_labels or [] if not label.startswith("note: ")]
    for label in headline.labels_for(labels, tasks):
        # the stand-in data of the embedded default is not the paper's; other data speaks for itself
        lines += [f"{DATA_PREFIX}{label}{DATA_SUFFIX if 'stand-in' in label else '.'}", ""]
    if frame.empty:
        return "\n".join([*lines, "No results.", ""])
    lines += headline.markdown(headline.lead_rows(frame, is_source, headline.row_name), figure, steps)
    cells, values, seeds = _grouped(frame)
    present = {(t, m) for t, m in zip(frame["task"], frame["metric"], strict=True)}
    columns = [c for c in MARKDOWN_COLUMNS if (c[1], c[2]) in present]
    proxy = any(headline.label_task(lb) == "mc" and "proxy" in lb for lb in labels)
    columns = [(c[0].replace("accuracy", "accuracy (proxy)"), *c[1:]) if proxy and c[1] == "mc" else c for c in columns]
    order = {key: i for i, key in enumerate(cells)}
    ordered = sorted(
        cells,
        key=lambda k: (
            str(cells[k]["model"]),
            str(cells[k]["language"]),
            not is_source(cells[k]["method"], cells[k]["label"]),
            order[k],
        ),
    )
    for model in dict.fromkeys(c["model"] for c in cells.values()):
        keys = [k for k in ordered if cells[k]["model"] == model]
        lines += [f"## All results: {names.model_name(model)}", ""]
        several = any(seeds[k] > 1 for k in keys)
        lead = ["Language", "Method", "Settings", *(["Seeds"] if several else [])]
        lines += _table(lead, columns, keys, cells, values, seeds)
        if several:
            lines += [SEEDS_NOTE, ""]
    missing = not_run(tasks)
    if missing:
        lines += ["Not run by this configuration: " + "; ".join(missing) + ".", ""]
    ppl_keys = [k for k in ordered if (PPL_COLUMN[1], PPL_COLUMN[2]) in values[k]]
    if ppl_keys:
        lines += [
            "## Token perplexity (not comparable across vocabularies)",
            "",
            "Per token of each model's own vocabulary: an expanded model's token covers more text, so its "
            "perplexity is not comparable with Source's; bits per character (above) is.",
            "",
        ]
        lines += _table(["Model", "Language", "Method"], [PPL_COLUMN], ppl_keys, cells, values, seeds)
    lines += speed_table.markdown_section(frame)
    lines += [f"- {note}" for note in notes] + ([""] if notes else [])
    return "\n".join(lines)


def _table(lead: list[str], columns: list, keys: list, cells: dict, values: dict, seeds: dict) -> list[str]:
    """A Markdown table: the ``lead`` columns of each row, then ``columns``' mean (± sd) per row."""
    header = [*lead, *(c[0] for c in columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in keys:
        c = cells[key]
        first = {
            "Model": names.model_name(c["model"]),
            "Language": names.language_name(c["language"]),
            "Method": headline.row_name(c),
            "Settings": settings_text(c),
            "Seeds": str(seeds[key]),
        }
        row = [first[name] for name in lead]
        for _, task, metric, fmt in columns:
            v = values[key].get((task, metric))
            row.append(_mean_sd(v, fmt) if v else MISSING)
        lines.append("| " + " | ".join(row) + " |")
    return [*lines, ""]


def _mean_sd(values: list[float], fmt: str) -> str:
    """The mean, with "± sd" (sample standard deviation) when there is more than one run."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return fmt.format(mean)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{fmt.format(mean)} ± {fmt.format(sd).rstrip('x')}"


def build_tables(
    paths: list[str | Path],
    *,
    strict: bool = True,
    figure: str | None = None,
    losses: list[Path] = (),
    seed: int | None = None,
) -> tuple[pd.DataFrame, str]:
    """The long table with derived rows and its Markdown rendering (naming ``figure`` beside the lead), from result
    JSON files and the training runs' ``losses`` (their last step: how long each model trained); ``seed``: the
    config's, the training seed of the cells that record none."""
    from workflow_scripts.paper.figures import read_losses

    frame, labels, sentences = load_results(paths, strict=strict)
    frame = fill_train_seed(frame, seed)
    frame = add_intervals(add_derived(frame), sentences)
    curves = read_losses(losses)
    steps = {} if curves.empty else curves.groupby(["model", "language", "method"])["step"].max().to_dict()
    return frame, markdown(frame, labels, figure, {k: int(v) for k, v in steps.items()})


def write_figure(frame: pd.DataFrame, losses: list[Path], path: Path, md: str) -> None:
    """The lead's figure (headline.figure) at ``path``, its data labels those of results.md's header."""
    from workflow_scripts.paper.figures import read_losses

    cells = frame.drop_duplicates("method")[CELL_COLUMNS].to_dict("records") if not frame.empty else []
    names = {str(c["method"]): headline.row_name(c) for c in cells}
    rows = headline.lead_rows(frame, is_source, headline.row_name)
    labels = markdown_data_labels(md)
    headline.figure(rows, read_losses(losses), names, path.with_suffix(""), headline.labels_for(labels, ["ppl"]))


def find_results(results_dir: str | Path) -> list[Path]:
    """Result files under ``results_dir`` (a run's folder, or the folder of runs): every evaluation record
    (workflow_scripts/plan/paths.py eval_file)."""
    return sorted(Path(results_dir).glob(eval_file("*", "*", "*", "*.json", root="**")))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--inputs", nargs="+", help="result JSON files")
    src.add_argument("--results-dir", help="folder searched for **/eval/*.json")
    p.add_argument("--csv", required=True, help="output long table")
    p.add_argument("--markdown", required=True, help="output Markdown rendering")
    p.add_argument("--figure", type=Path, help="output PNG of the lead (a PDF is written beside it)")
    p.add_argument("--html", type=Path, help="output HTML of the page, figure embedded (the report's first page)")
    p.add_argument("--losses", nargs="*", default=[], help="training runs' loss.tsv files (the lead's loss curves)")
    p.add_argument("--seed", type=int, help="the config's seed: the training seed of cells that record none")
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    paths = [Path(x) for x in a.inputs] if a.inputs else find_results(a.results_dir)
    figure_name = a.figure.name if a.figure else None
    losses = [Path(x) for x in a.losses]
    frame, md = build_tables(paths, strict=bool(a.inputs), figure=figure_name, losses=losses, seed=a.seed)
    with atomic_path(a.csv) as tmp:
        frame.to_csv(tmp, index=False)
    write_text(a.markdown, md)
    if a.figure:
        write_figure(frame, losses, a.figure, md)
    if a.html:
        write_text(a.html, headline.to_html(md, {figure_name: a.figure} if a.figure else {}))
    log.info("tables: %d files, %d rows -> %s, %s", len(paths), len(frame), a.csv, a.markdown)


if __name__ == "__main__":
    main()
