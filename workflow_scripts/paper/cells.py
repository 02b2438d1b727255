"""Fill a table specification from the long results table: which grid cell fills each entry, mean ± sd over runs,
best / second-best ranks, better-than-Source marks, and footnotes saying what would fill each missing entry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from workflow_scripts.languages import PAPER_LANGUAGES
from workflow_scripts.paper.headline import method_groups
from workflow_scripts.paper.names import PAPER_MODELS, language_name, model_name, task_metric, training_text
from workflow_scripts.paper.specs import ROUGE_SCRIPT, SUM, Row, TableSpec, cell_metric

MISSING = "–"
ROUGE_NOTE = "ROUGE-L"  # how the note on the ROUGE-L segmentation starts
NOT_APPLICABLE = "n/a"
SETTINGS = ("label", "init", "procedure", "objective", "seq_len", "k", "aux_vocab_size", "vocab", "posthoc")
# Settings a stand-in cell may differ in (footnoted); vocab, posthoc and what a row selects must match.
SOFT = ("procedure", "objective", "seq_len", "k")
SPEED_METRICS = ("tokens_per_second", "chars_per_second", "speedup", "speedup_chars", "prompt_token_ratio")
SPEED_METRICS += ("items_per_second",)  # log-likelihood tasks: workflow_scripts/speed/choices.py


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
    an empty ``posthoc`` is no post-hoc step), and each cell's method without its training seed (``train_seed``):
    a method's seeds fill one entry, their mean ± sd."""
    frame = frame.copy()
    if "vocab" not in frame:
        frame["vocab"] = None
    frame["posthoc"] = frame["posthoc"].fillna("none") if "posthoc" in frame else "none"
    frame["method"] = method_groups(frame)
    return frame


def is_papers_grid(frame: pd.DataFrame) -> bool:
    """Whether the results hold one of the paper's models or languages: a grid the paper's tables can show."""
    return bool(
        set(PAPER_MODELS) & set(frame["model"].astype(str)) or set(PAPER_LANGUAGES) & set(frame["language"].astype(str))
    )


def stand_ins(frame: pd.DataFrame, requested: Mapping[str, str] | None = None) -> dict[str, str]:
    """Paper model -> results model. Without a request, when the results hold none of the paper's models but some of
    its languages, the first model in them stands in for Llama2 (the embedded default: SmolLM2 on stand-in data); a
    grid of other languages stands in for nothing."""
    if requested is not None:
        return dict(requested)
    present = list(dict.fromkeys(frame["model"].astype(str)))
    if present and not set(PAPER_MODELS) & set(present) and is_papers_grid(frame):
        return {"llama2": present[0]}
    return {}


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
        return pool[0], f"{differs(pool[0], wanted)}"
    if pool:
        names = "; ".join(sorted(settings_text(c) for c in pool))
        return None, f"left empty: several cells ({names}) and none has the paper's settings"
    return None, None


def settings_text(cell: Mapping[str, Any]) -> str:
    """A cell's training and |V_new| in words."""
    k = _norm(cell.get("k"))
    return ", ".join(p for p in (training_text(dict(cell)), f"{k} new tokens" if k is not None else "") if p)


def differs(cell: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    """What the cell filling a row was trained with, against the paper's settings, in words."""
    paper = {**wanted, "k": wanted.get("k") if cell.get("k") is not None else None}
    return f"trained with {settings_text(cell)} (the paper's: {settings_text(paper)})"


def fmt_value(value: float, fmt: str, scale: float = 1.0) -> str:
    """A value in the table's format; "frac2" drops the leading zero (".08") as the paper prints fractions."""
    value = value * scale
    if fmt == "frac2":
        text = f"{value:.2f}"
        return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text
    return fmt.format(value)


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
    """Mean ± sample sd over runs (training seeds, evaluation seeds, the ``run`` column) of one entry; its spread is
    mean ± sd, or the [min, max] over repeats that a speed entry carries (``spread``)."""
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
            notes.setdefault(f"{row.label}: {note}", set()).add(lang)
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


def _missing_notes(block: Block, spec: TableSpec) -> list[str]:
    """The entries of a row left empty ("–") beside filled ones: which language and column, in words."""
    notes = []
    for row, cells in block.rows:
        missing: dict[str, list[str]] = {}
        for j, c in enumerate(cells):
            if c.status != "missing":
                continue
            col, lang = spec.columns[j % len(spec.columns)], spec.languages[j // len(spec.columns)]
            what = task_metric(col.task, cell_metric(col.task, row.metric or col.metric).split("@")[0])
            missing.setdefault(what, []).append(language_name(lang))
        notes += [f"{row.label}, {what}: no result for {', '.join(langs)}" for what, langs in missing.items()]
    return notes


def trim(filled: Filled) -> tuple[Filled | None, list[str]]:
    """``filled`` without the model blocks, rows, languages and columns no result fills, and those left out in words;
    None where none of the table's subject rows (``TableSpec.subject_rows``) has a value."""
    spec, ncol = filled.spec, len(filled.spec.columns)
    entries = [(b, row, j, c) for b in filled.blocks for row, cells in b.rows for j, c in enumerate(cells)]
    ok = [(b, row, j) for b, row, j, c in entries if c.status == "ok"]
    langs = [i for i in range(len(spec.languages)) if any(j // ncol == i for _, _, j in ok)]
    cols = [k for k in range(ncol) if any(j % ncol == k for _, _, j in ok)]
    rows = [r for r in spec.rows if any(row is r for _, row, _ in ok)]
    blocks = [b for b in filled.blocks if any(block is b for block, _, _ in ok)]
    if not any(r.label in spec.subject_rows for r in rows):
        return None, []
    left = [
        ("models", [model_name(b.model) for b in filled.blocks if b not in blocks]),
        ("rows", [r.label for r in spec.rows if r not in rows]),
        ("languages", [language_name(lang) for i, lang in enumerate(spec.languages) if i not in langs]),
        ("columns", list(dict.fromkeys(c.header for k, c in enumerate(spec.columns) if k not in cols))),
    ]
    kept = replace(
        spec,
        models=tuple(b.model for b in blocks),
        rows=tuple(rows),
        languages=tuple(spec.languages[i] for i in langs),
        columns=tuple(spec.columns[k] for k in cols),
    )
    new_blocks = [
        Block(
            b.model,
            b.results_model,
            [(row, [cells[i * ncol + k] for i in langs for k in cols]) for row, cells in b.rows if row in rows],
        )
        for b in blocks
    ]
    sums = any(c.task == "sum" for c in kept.columns)
    notes = [
        n for n in filled.notes if not n.startswith((f"{MISSING}:", "  ")) and (sums or not n.startswith(ROUGE_NOTE))
    ]
    missing = [m for b in new_blocks for m in _missing_notes(b, kept)]
    if missing:
        notes += [f"{MISSING}: no result yet:", *(f"  {m}" for m in missing)]
    return Filled(kept, new_blocks, notes), [f"{what}: {', '.join(names)}" for what, names in left if names]


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
        note = f"{ROUGE_NOTE} on mT5 SentencePiece pieces (the paper's segmentation, §6.6)."
        if not frame.empty and ROUGE_SCRIPT[1] in set(frame["metric"].astype(str)):
            note += " Script-aware ROUGE-L results exist too and are not shown."
        return spec, [note]
    columns = tuple(replace(c, metric=metric) if (c.task, c.metric) == SUM else c for c in spec.columns)
    note = (
        f"{ROUGE_NOTE} on the script-aware segmentation (words, or grapheme clusters in unspaced scripts), not "
        "on the paper's mT5 pieces: the configuration's evaluation.sum.rouge_tokenizer is script."
    )
    return replace(spec, columns=columns), [note]


def fill(spec: TableSpec, frame: pd.DataFrame, models: Mapping[str, str] | None = None) -> Filled:
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
                f"{model_name(results_model)} stands in for {model_name(model)}: its numbers are not the paper's."
            )
        langs_of = {n: ", ".join(language_name(lg) for lg in sorted(langs)) for n, langs in settings_notes.items()}
        notes += [f"{n.split(': ', 1)[0]} on {langs_of[n]}: {n.split(': ', 1)[1]}" for n in settings_notes]
        missing += _missing_notes(block, spec)
        blocks.append(block)
    notes += rouge_note
    if any(c.status == "na" for b in blocks for _, cells in b.rows for c in cells):
        notes.append(f"{NOT_APPLICABLE}: the benchmark has no such language (Global-MMLU: no Burmese or Thai).")
    if missing:
        notes.append(f"{MISSING}: no result yet:")
        notes += [f"  {m}" for m in missing]
    return Filled(spec, blocks, notes)
