"""Fill a table specification from the long results table: which grid cell fills each entry, mean ± sd over runs,
best / second-best ranks, better-than-Source marks, and footnotes saying what would fill each missing entry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from workflow_scripts import paths
from workflow_scripts.grid import MUMO, MUMO_INITS, MUMO_POSTHOC, Method
from workflow_scripts.paper.specs import MODEL_NAMES, PAPER_MODELS, ROUGE_SCRIPT, SUM, Row, TableSpec, cell_metric

MISSING = "–"
NOT_APPLICABLE = "n/a"
SETTINGS = ("label", "init", "procedure", "objective", "seq_len", "k", "aux_vocab_size", "vocab", "posthoc")
# Settings a stand-in cell may differ in (footnoted); vocab, posthoc and what a row selects must match.
SOFT = ("procedure", "objective", "seq_len", "k")
SPEED_METRICS = ("tokens_per_second", "chars_per_second", "speedup", "speedup_chars", "prompt_token_ratio")
SPEED_METRICS += ("items_per_second",)  # mc, gmmlu: workflow_scripts/speed/choices.py


@dataclass
class Cell:
    """One entry: the mean and sd over runs (n values), its text, rank (1 best, 2 second) and Source comparison."""

    text: str = MISSING
    mean: float | None = None
    sd: float | None = None
    n: int = 0
    rank: int = 0
    better: bool = False
    low: float | None = None  # the measured spread: mean ± sd over runs, or [min, max] over a speed test's repeats
    high: float | None = None
    method: str | None = None
    status: str = "missing"  # "ok", "missing" or "na"


@dataclass
class Block:
    """The rows of one source model; ``model`` is the paper's, ``results_model`` the one whose results fill it."""

    model: str
    results_model: str
    rows: list[tuple[Row, list[Cell]]] = field(default_factory=list)


@dataclass
class Filled:
    """A filled table: its spec, the blocks and the footnotes."""

    spec: TableSpec
    blocks: list[Block]
    notes: list[str]

    def cell(self, model: str, row: str, language: str, header: str) -> Cell:
        """The entry of block ``model``, row label ``row``, column ``header`` of ``language`` (tests, README)."""
        block = next(b for b in self.blocks if b.model == model)
        index = [c.header for c in self.spec.columns].index(header)
        cells = next(cells for r, cells in block.rows if r.label == row)
        return cells[self.spec.languages.index(language) * len(self.spec.columns) + index]


def _norm(value: Any) -> Any:
    """One representation per value: None for missing, int for whole numbers, else the string."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) or hasattr(value, "is_integer"):
        number = float(value)
        return int(number) if number.is_integer() else number
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def method_fields(frame: pd.DataFrame) -> pd.DataFrame:
    """The results table with the method fields ``vocab`` and ``posthoc`` always present (results.csv carries them;
    an empty ``posthoc`` is no post-hoc step)."""
    frame = frame.copy()
    if "vocab" not in frame:
        frame["vocab"] = None
    frame["posthoc"] = frame["posthoc"].fillna("none") if "posthoc" in frame else "none"
    return frame


def stand_ins(frame: pd.DataFrame, requested: Mapping[str, str] | None = None) -> dict[str, str]:
    """Paper model -> results model. Without a request, when the results hold none of the paper's models, the first
    model in them stands in for Llama2 (the embedded default: SmolLM2 on stand-in data)."""
    if requested is not None:
        return dict(requested)
    present = list(dict.fromkeys(frame["model"].astype(str)))
    if present and not set(PAPER_MODELS) & set(present):
        return {"llama2": present[0]}
    return {}


def expected_method(settings: Mapping[str, Any]) -> Method:
    """The grid method a row asks for (the table's recipe with the row's selection on top)."""
    label = settings["label"]
    if label.startswith(MUMO):  # the MuMo method whose label (grid.Method.label) this is
        mumo = [Method(i, "expand", None, MUMO, None, None, p) for i in MUMO_INITS for p in sorted(MUMO_POSTHOC)]
        return next(m for m in mumo if m.label == label)
    trains = label != "Source"
    init = "none" if label in ("Source", "CPT-only") else label
    return Method(
        init=init,
        vocab=settings.get("vocab") or "expand",
        k=settings.get("k") or 100,
        procedure=settings["procedure"] if trains else "none",
        objective=settings["objective"] if trains else None,
        seq_len=settings["seq_len"] if trains else None,
        posthoc=settings.get("posthoc") or "none",
    )


def _matches(cand: Mapping[str, Any], wanted: Mapping[str, Any], keys: tuple[str, ...] | None = None) -> bool:
    """True when every wanted setting (among ``keys``) is the candidate's, or does not apply to it (None)."""
    for key, value in wanted.items():
        if keys is not None and key not in keys:
            continue
        have = cand.get(key)
        if value is None or (have is None and key in (*SOFT, "vocab")):
            continue
        if _norm(have) != _norm(value):
            return False
    return True


def choose(candidates: list[dict], row: Row, recipe: Mapping[str, Any]) -> tuple[dict | None, str | None]:
    """The cell filling ``row`` among one model x language's cells, and a note when it is not the paper's setting."""
    wanted = {**recipe, **row.select}
    hard = {k: v for k, v in wanted.items() if k not in SOFT or k in row.select}
    pool = [c for c in candidates if _matches(c, hard)]
    exact = [c for c in pool if _matches(c, wanted)]
    if exact:
        return sorted(exact, key=lambda c: str(c["method"]))[0], None
    if len(pool) == 1:
        return pool[0], f"uses {pool[0]['method']}, not the paper's {expected_method(wanted).slug}"
    if pool:
        names = ", ".join(sorted(str(c["method"]) for c in pool))
        return None, f"ambiguous: {names} (none has the paper's settings)"
    return None, None


def fmt_value(value: float, fmt: str, scale: float = 1.0) -> str:
    """A value in the table's format; "frac2" drops the leading zero (".08") as the paper prints fractions."""
    value = value * scale
    if fmt == "frac2":
        text = f"{value:.2f}"
        return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text
    return fmt.format(value)


def task_file(task: str, metric: str) -> tuple[str, str]:
    """(rule, result file) that writes ``metric`` of ``task`` for one grid cell."""
    if metric in SPEED_METRICS or metric.endswith("_ratio") or "@" in metric:
        return "rule measure_speed (speed-ups by rule tables)", "speed.json"
    if metric == "bleurt":
        return "rule score_bleurt (evaluation.sum.bleurt)", "sum_bleurt.json"
    return f"rule evaluate_{task}", f"{task}.json"


class _Index:
    """The results table indexed by grid cell, for the lookups of one table."""

    def __init__(self, frame: pd.DataFrame):
        frame = method_fields(frame)
        cols = [c for c in ("model", "language", "method", *SETTINGS) if c in frame]
        cells = frame.drop_duplicates(["model", "language", "method"])[cols]
        self.cells: dict[tuple[str, str], list[dict]] = {}
        for rec in cells.to_dict("records"):
            rec = {k: _norm(v) if k not in ("model", "language", "method") else str(v) for k, v in rec.items()}
            self.cells.setdefault((rec["model"], rec["language"]), []).append(rec)
        keys = ["model", "language", "method", "task", "metric"]
        frame = frame.assign(**{k: frame[k].astype(str) for k in keys})
        self.values = {key: list(v) for key, v in frame.groupby(keys, sort=False)["value"]}
        spread = frame.dropna(subset=["min", "max"]) if {"min", "max"} <= set(frame) else frame.iloc[0:0]
        self.spread = {key: (v["min"].mean(), v["max"].mean()) for key, v in spread.groupby(keys, sort=False)}


def _value_cell(values: list[float], fmt: str, scale: float, method: str, spread: tuple | None = None) -> Cell:
    """Mean ± sample sd over runs (seeds, or the ``run`` column) of one entry; its spread is mean ± sd, or the
    [min, max] over repeats that a speed entry carries (``spread``)."""
    values = [float(v) for v in values if not math.isnan(float(v))]
    if not values:
        return Cell(method=method)
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else None
    text = fmt_value(mean, fmt, scale) + (f" ± {fmt_value(sd, fmt, scale)}" if sd is not None else "")
    low, high = spread if spread is not None else (None, None) if sd is None else (mean - sd, mean + sd)
    return Cell(text=text, mean=mean, sd=sd, n=len(values), low=low, high=high, method=method, status="ok")


def _row_cells(index: _Index, spec: TableSpec, row: Row, model: str, notes: dict[str, set]) -> list[Cell]:
    cells = []
    for lang in spec.languages:
        chosen, note = choose(index.cells.get((model, lang), []), row, spec.recipe)
        if note:
            notes.setdefault(f"{row.label} ({model}): {note}", set()).add(lang)
        for col in spec.columns:
            if lang in col.skip_languages:
                cells.append(Cell(text=NOT_APPLICABLE, status="na"))
                continue
            metric = cell_metric(col.task, row.metric or col.metric)
            key = (model, lang, chosen["method"], col.task, metric) if chosen else None
            values = index.values.get(key, [])
            fmt, scale = row.fmt or col.fmt, 1.0 if row.fmt else col.scale
            cell = _value_cell(values, fmt, scale, chosen and chosen["method"], index.spread.get(key))
            cells.append(cell)
    return cells


def _apart(a: Cell, b: Cell) -> bool:
    """True when both entries have a measured spread and the spreads do not overlap."""
    if None in (a.low, a.high, b.low, b.high):
        return False
    return a.high < b.low or b.high < a.low


def _shown(c: Cell) -> float:
    return float(c.text.split(" ")[0].rstrip("x"))


def _rank(block: Block, spec: TableSpec) -> None:
    """Dense ranks 1 and 2 by the displayed value among the ranked rows, per language and column; an entry keeps its
    rank only where its spread lies apart from every entry shown worse (ties share a rank)."""
    if spec.best is None:
        return
    for j in range(len(spec.languages) * len(spec.columns)):
        entries = [cells[j] for row, cells in block.rows if row.ranked and cells[j].status == "ok"]
        shown = sorted({_shown(c) for c in entries}, reverse=spec.best == "max")
        for c in entries:
            position = shown.index(_shown(c))
            worse = [o for o in entries if shown.index(_shown(o)) > position]
            c.rank = position + 1 if position < 2 and worse and all(_apart(c, o) for o in worse) else 0
        if not any(c.rank == 1 for c in entries):  # a second-best needs a best above it
            for c in entries:
                c.rank = 0


def _mark_source(block: Block, spec: TableSpec) -> None:
    """Better than Source: a higher (or lower) shown value whose spread lies apart from Source's."""
    base = next((cells for row, cells in block.rows if row.baseline), None)
    if base is None or not spec.mark_source:
        return
    for row, cells in block.rows:
        if row.baseline or row.metric:
            continue
        for j, c in enumerate(cells):
            col = spec.columns[j % len(spec.columns)]
            if col.higher_is_better is None or c.status != "ok" or base[j].status != "ok":
                continue
            higher = _shown(c) > _shown(base[j]) if col.higher_is_better else _shown(c) < _shown(base[j])
            c.better = higher and _apart(c, base[j])


def _missing_notes(block: Block, spec: TableSpec, root: str) -> list[str]:
    """What would fill each row's missing entries: the grid cell, the rules and their result files under the run
    folder ``root``."""
    notes = []
    for row, cells in block.rows:
        slug = expected_method({**spec.recipe, **row.select}).slug
        missing: dict[tuple[str, str], dict[str, list[str]]] = {}
        for j, c in enumerate(cells):
            if c.status != "missing":
                continue
            col, lang = spec.columns[j % len(spec.columns)], spec.languages[j // len(spec.columns)]
            rule_file = task_file(col.task, row.metric or col.metric)
            missing.setdefault(rule_file, {}).setdefault(f"{col.task} {row.metric or col.metric}", []).append(lang)
        for (rule, file), columns in missing.items():
            for what, langs in columns.items():
                notes.append(
                    f"{row.label}, {what}: {block.results_model} × {{{', '.join(langs)}}} × {slug} — {rule}: "
                    + paths.eval_file(block.results_model, "{lang}", slug, file, str(root))
                )
    return notes


def rouge_metric(frame: pd.DataFrame) -> str:
    """The ROUGE-L every table shows: on mT5 pieces (the paper's, §6.6) where any result has it, else the
    script-aware one; a table never mixes the two segmentations."""
    present = set(frame["metric"].astype(str)) if not frame.empty else set()
    return ROUGE_SCRIPT[1] if ROUGE_SCRIPT[1] in present and SUM[1] not in present else SUM[1]


def _rouge_columns(spec: TableSpec, frame: pd.DataFrame) -> tuple[TableSpec, list[str]]:
    """``spec`` with its ROUGE-L columns on ``rouge_metric``'s segmentation, and the note saying which it is."""
    if not any((c.task, c.metric) == SUM for c in spec.columns):
        return spec, []
    metric = rouge_metric(frame)
    if metric == SUM[1]:
        note = "ROUGE-L on mT5 SentencePiece pieces (rougeL_mt5, the paper's segmentation, §6.6)."
        if not frame.empty and ROUGE_SCRIPT[1] in set(frame["metric"].astype(str)):
            note += " Script-aware ROUGE-L results (rougeL_script) exist too and are not shown."
        return spec, [note]
    columns = tuple(replace(c, metric=metric) if (c.task, c.metric) == SUM else c for c in spec.columns)
    note = ("ROUGE-L on the script-aware segmentation (rougeL_script: words, or grapheme clusters in unspaced "
            "scripts), not on the paper's mT5 pieces: evaluation.sum.rouge_tokenizer was script.")  # fmt: skip
    return replace(spec, columns=columns), [note]


def fill(
    spec: TableSpec, frame: pd.DataFrame, models: Mapping[str, str] | None = None, root: str = "results/<run>"
) -> Filled:
    """Fill ``spec`` from the long results table; ``models`` maps a paper model to the results model standing in."""
    index = _Index(frame)
    models = stand_ins(frame, None) if models is None else models
    spec, rouge_note = _rouge_columns(spec, frame)
    blocks, notes, missing = [], [], []
    for model in spec.models:
        results_model = models.get(model, model)
        block = Block(model, results_model)
        settings_notes: dict[str, set] = {}
        for row in spec.rows:
            block.rows.append((row, _row_cells(index, spec, row, results_model, settings_notes)))
        _rank(block, spec)
        _mark_source(block, spec)
        if results_model != model:
            notes.append(
                f"{results_model} stands in for {MODEL_NAMES.get(model, model)}: its numbers are not the paper's."
            )
        notes += [f"{n} [{', '.join(sorted(langs))}]" for n, langs in settings_notes.items()]
        missing += _missing_notes(block, spec, root)
        blocks.append(block)
    notes += rouge_note
    if any(c.status == "na" for b in blocks for _, cells in b.rows for c in cells):
        notes.append(f"{NOT_APPLICABLE}: the benchmark has no such language (Global-MMLU: no Burmese or Thai).")
    if missing:
        notes.append(f"{MISSING}: no result yet; these grid cells and rules would fill it:")
        notes += [f"  {m}" for m in missing]
    return Filled(spec, blocks, notes)
