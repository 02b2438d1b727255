"""Declarative specifications of the paper's tables (paper 002, Tables 1-11 and 14): one `TableSpec` per table.

A table is model blocks x rows x (language x column). A `Column` names one task and one metric of
results/<run>/tables/results.csv; a `Row` selects grid cells by their settings (``label``, ``procedure``, ...) on top of
the table's ``recipe`` (the paper's settings for that table). A new table is a few lines: pick the models, the
languages, the columns and the rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from workflow_scripts import languages
from workflow_scripts.paper.names import PAPER_MODELS

# Metric names, one field each: (task, metric) as the evaluation steps write them into results.csv.
MT = ("mt", "chrF")
SUM = ("sum", "rougeL_mt5")  # ROUGE-L on mT5 pieces (§6.6); cells.rouge_metric falls back to ROUGE_SCRIPT, per table
ROUGE_SCRIPT = ("sum", "rougeL_script")  # script-aware segmentation: where mT5's spiece.model is not configured
BLEURT = ("sum", "bleurt")  # BLEURT-20 (Table 8; rule score_bleurt)
MC = ("mc", "acc")  # log-likelihood accuracy (workflow_scripts/harness; acc_token and acc_char are the normalized ones)
GMMLU = ("gmmlu", "acc")
EN_MC = ("mc_en", "acc")  # English Belebele after LAPT on the target language (Table 9; rule evaluate_mc_en)
EN_MMLU = ("gmmlu_en", "acc")  # original English MMLU, the paper's mmlu column (rule evaluate_gmmlu_en)
PPL = ("ppl", "perplexity")
SPEEDUP = "speedup"  # tokens_per_second / Source's on the same task and language (the paper's T/S speed-up)
# The speed-up every table and figure leads with: Source timed in the same job on the same text (speed/table.py),
# teacher-forced for the generation tasks, the log-likelihood pass for mc and gmmlu; and that speed-up ÷ its bound.
PAIRED = "paired_speedup"
PAIRED_OVER_BOUND = "paired_speedup_over_bound"
BOUND = "token_ratio_bound"
PAIRED_VARIANT = {
    "mt": "teacher_forced.greedy.b1",
    "sum": "teacher_forced.greedy.b1",
    "mc": "loglikelihood.choices.b1",
    "gmmlu": "loglikelihood.choices.b1",
}

LANGUAGES = tuple(languages.PAPER_LANGUAGES)  # the paper's ten, in its tables' order
NO_GMMLU = ("my", "th")  # Global-MMLU has no Burmese or Thai

# The paper's recipes: §7.1 (LoRA + clm + 2048) for Tables 1-4; §7.3 (2x2 LS + mtp + 512) for Tables 6-11.
DEFAULT_RECIPE = {
    "procedure": "LoRA",
    "objective": "clm",
    "seq_len": 2048,
    "k": 100,
    "vocab": "expand",
    "posthoc": "none",
}
RECOMMENDED = {**DEFAULT_RECIPE, "procedure": "2x2LS", "objective": "mtp", "seq_len": 512}


@dataclass(frozen=True)
class Column:
    """One value per language: ``metric`` of ``task``, shown under ``header``, ``scale`` times the stored value."""

    task: str
    metric: str
    header: str
    fmt: str = "{:.1f}"  # a format string, or "frac2": two decimals without the leading zero (the paper's .08)
    scale: float = 1.0
    higher_is_better: bool | None = True  # None: not compared with Source (perplexity across vocabularies)
    skip_languages: tuple[str, ...] = ()  # shown "n/a": the benchmark has no such language


@dataclass(frozen=True)
class Row:
    """Grid cells selected by ``select`` (cell columns of results.csv, plus ``vocab`` and ``posthoc``)."""

    label: str
    select: dict[str, Any]
    group: str = ""  # shown in the first column where it changes (the paper's "+Speedup", "LoRA", ...)
    metric: str | None = None  # replaces every column's metric (the "Speedup" rows of Tables 6, 10 and 11)
    fmt: str | None = None
    ranked: bool = True  # competes for best / second best
    gray: bool = False  # not comparable with the other rows (same vocabulary as Source, Tables 2 and 7)
    baseline: bool = False  # the Source row the "better than Source" marks compare to


@dataclass(frozen=True)
class TableSpec:
    """One paper table: blocks per model, rows, and per language the columns."""

    number: str
    caption: str
    models: tuple[str, ...]
    languages: tuple[str, ...]
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    recipe: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_RECIPE))
    best: str | None = None  # "min" or "max": bold / underline the best and second best of the ranked rows
    mark_source: bool = True  # mark cells better than Source
    heading: str | None = None  # the title of a table the paper does not number
    subject: tuple[str, ...] | None = None  # rows one of which must have a value for the table to be written

    @property
    def name(self) -> str:
        return f"table{self.number}"

    @property
    def subject_rows(self) -> tuple[str, ...]:
        """The rows the table is about: ``subject``, else every row but the baselines (Source, CPT-only)."""
        if self.subject is not None:
            return self.subject
        return tuple(r.label for r in self.rows if r.select.get("label") not in ("Source", "CPT-only"))

    @property
    def title(self) -> str:
        """ "Table 4a", or the heading of a table that is not the paper's."""
        return self.heading or f"Table {self.number}"


def _col(task_metric: tuple[str, str], header: str, **kw: Any) -> Column:
    return Column(task_metric[0], task_metric[1], header, **kw)


MT_COL = _col(MT, "mt")  # chrF on its 0-100 scale, as results.md and sacrebleu give it (the paper prints chrF / 100)
SUM_COL = _col(SUM, "sum", fmt="{:.0f}")
MC_COL = _col(MC, "mc", fmt="frac2")
GMMLU_COL = _col(GMMLU, "gmmlu", fmt="frac2", skip_languages=NO_GMMLU)
PPL_COL = _col(PPL, "ppl", higher_is_better=None)
SOURCE = Row("Source", {"label": "Source"}, ranked=False, baseline=True)
CPT = Row("CPT-only", {"label": "CPT-only"}, ranked=False)


def inits(*names: str, group: str = "+Speedup", **select: Any) -> tuple[Row, ...]:
    """One row per initialization method, the group label on the first."""
    return tuple(Row(n, {"label": n, **select}, group=group if i == 0 else "") for i, n in enumerate(names))


def speed_columns(*task_metrics: tuple[str, str], metric: str = SPEEDUP) -> tuple[Column, ...]:
    """Speed-up columns for the given tasks (higher is better, never compared with Source)."""
    return tuple(Column(t, metric, t, fmt="{:.2f}x", higher_is_better=None) for t, _ in task_metrics)


def strategies(*, group_names: dict[str, str] | None = None) -> tuple[Row, ...]:
    """Align under each training procedure x objective x sequence length (Tables 5 and 14)."""
    names = group_names or {"LoRA": "LoRA", "2-stage": "2-stage", "2x2LS": "2x2 LS"}
    rows = []
    for procedure, group in names.items():
        for i, (objective, seq_len) in enumerate([("clm", 2048), ("mtp", 2048), ("clm", 512), ("mtp", 512)]):
            select = {"label": "Align", "procedure": procedure, "objective": objective, "seq_len": seq_len}
            rows.append(Row(f"{objective}+{seq_len}", select, group=group if i == 0 else ""))
    return tuple(rows)


def cell_metric(task: str, metric: str) -> str:
    """The metric a table entry reads: the paired speed-up (and its ratio to the bound) in the task's paired variant;
    the unpaired T/S speed-up of mc and gmmlu (one token per item) is the time ratio on the same items,
    ``speedup_chars`` of their forward passes (workflow_scripts/speed/choices.py)."""
    if metric in (PAIRED, PAIRED_OVER_BOUND, BOUND):
        return f"{metric}@{PAIRED_VARIANT.get(task, PAIRED_VARIANT['mt'])}"
    return "speedup_chars" if metric == SPEEDUP and task in ("mc", "gmmlu") else metric


def speed_row(label: str, init: str, **select: Any) -> Row:
    """The paper's "Speedup" row under a block: one method's paired speed-up over Source, per task."""
    return Row(label, {"label": init, **select}, metric=PAIRED, fmt="{:.2f}x", ranked=False)


def mumo_rows() -> tuple[Row, ...]:
    """MuMo (paper 000; Multi-init), without verification and with Random-init (its Table 6 ablations): procedure
    MuMo, no LAPT settings, the source vocabulary."""
    mumo = {"procedure": "MuMo", "objective": None, "seq_len": None, "k": None}
    return (
        Row("MuMo", {"label": "MuMo", **mumo}, group="MuMo"),
        Row("w/o verification", {"label": "MuMo w/o verification", **mumo, "posthoc": "noverify"}),
        Row("Random-init", {"label": "MuMo (Random-init)", **mumo}),
    )


EXPANDED = ("Random", "FOCUS", "Mean", "Merge", "Align")
SIX = ("ar", "my", "el", "hi", "si", "te")
THREE = ("my", "si", "te")
FOUR_TASKS = (MT_COL, SUM_COL, MC_COL, GMMLU_COL)
TS_ROW = Row("Source (T/S)", {"label": "Source"}, metric="tokens_per_second", fmt="{:.1f}", ranked=False)
ITEMS_ROW = Row("Source (items/s)", {"label": "Source"}, metric="items_per_second", fmt="{:.2f}", ranked=False)

TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "1",
        "Mean performance on generation tasks (mt: chrF, 0–100; sum: ROUGE-L) over runs, Llama2 as source. "
        "Marked: better than Source per language and task.",
        ("llama2",),
        LANGUAGES,
        (MT_COL, SUM_COL),
        (SOURCE, CPT, *inits(*EXPANDED)),
    ),
    TableSpec(
        "2",
        "Perplexity on the language-specific held-out set, Llama2 as source. Gray (italic) rows share Source's "
        "vocabulary and are not comparable with the others. Bold / underlined: best / second-best among adapted "
        "models.",
        ("llama2",),
        LANGUAGES,
        (PPL_COL,),
        (
            Row("Source", {"label": "Source"}, ranked=False, gray=True, baseline=True),
            Row("CPT-only", {"label": "CPT-only"}, ranked=False, gray=True),
            *(Row(n, {"label": n}) for n in EXPANDED),
        ),
        best="min",
        mark_source=False,
    ),
    TableSpec(
        "3",
        "Mean performance on classification tasks (mc, gmmlu accuracy), Llama2 as source. gmmlu has no Burmese or "
        "Thai.",
        ("llama2",),
        LANGUAGES,
        (MC_COL, GMMLU_COL),
        (SOURCE, CPT, *inits(*EXPANDED)),
    ),
    TableSpec(
        "4a",
        "Inference efficiency on generation tasks: every model's paired speed-up over Source (teacher-forced decoding "
        "of the reference text, identical for both models, Source timed in the same job, so machine load cancels) "
        "and that speed-up divided by its bound (Source tokens ÷ model tokens of the same text). The paper's "
        "unpaired T/S speed-up is Table 4c. Bold / underlined: best / second-best speed-up per language and task.",
        ("llama2",),
        LANGUAGES,
        (
            Column("mt", PAIRED, "mt speed-up", fmt="{:.2f}x", higher_is_better=None),
            Column("mt", PAIRED_OVER_BOUND, "mt ÷ bound", fmt="{:.2f}", higher_is_better=None),
            Column("sum", PAIRED, "sum speed-up", fmt="{:.2f}x", higher_is_better=None),
            Column("sum", PAIRED_OVER_BOUND, "sum ÷ bound", fmt="{:.2f}", higher_is_better=None),
        ),
        (CPT, *inits(*EXPANDED)),
        best="max",
    ),
    TableSpec(
        "4b",
        "Inference efficiency on classification tasks (mc, gmmlu): Source's items per second (the paper's T/S: one "
        "token per item) and every model's paired speed-up over Source, the forward pass over prompt and choices "
        "timed on the same items with Source in the same job (workflow_scripts/speed/choices.py).",
        ("llama2",),
        LANGUAGES,
        speed_columns(MC, GMMLU, metric=PAIRED),
        (ITEMS_ROW, CPT, *inits(*EXPANDED)),
        best="max",
    ),
    TableSpec(
        "4c",
        "Unpaired generation speed-ups: the paper's T/S speed-up (tokens generated per second, each model's own "
        "tokens) and the speed-up in characters per second, each model's rate over Source's timed in a separate job: "
        "machine load between the jobs is not cancelled, so where these disagree with Table 4a they are noise.",
        ("llama2",),
        LANGUAGES,
        (
            Column("mt", SPEEDUP, "mt T/S", fmt="{:.2f}x", higher_is_better=None),
            Column("mt", "speedup_chars", "mt characters", fmt="{:.2f}x", higher_is_better=None),
            Column("sum", SPEEDUP, "sum T/S", fmt="{:.2f}x", higher_is_better=None),
            Column("sum", "speedup_chars", "sum characters", fmt="{:.2f}x", higher_is_better=None),
        ),
        (TS_ROW, CPT, *inits(*EXPANDED)),
    ),
    TableSpec(
        "5",
        "Mean performance of Align models on generation tasks per training strategy, Llama2 as source.",
        ("llama2",),
        SIX,
        (MT_COL, SUM_COL),
        (SOURCE, CPT, *strategies()),
    ),
    TableSpec(
        "6",
        "Mean performance and inference speed-up with Llama3 and Gemma2 as source (2x2 LS + mtp + 512). "
        "The Speedup row is Align's.",
        ("llama3", "gemma2"),
        THREE,
        FOUR_TASKS,
        (SOURCE, CPT, *inits("Random", "Mean", "Align"), speed_row("Speedup", "Align")),
        recipe=RECOMMENDED,
    ),
    TableSpec(
        "7",
        "Perplexity on the language-specific held-out set, Llama3 and Gemma2 as source. Gray (italic) rows are not "
        "comparable with the others (different vocabulary).",
        ("llama3", "gemma2"),
        THREE,
        (PPL_COL,),
        (
            Row("Source", {"label": "Source"}, ranked=False, gray=True, baseline=True),
            Row("CPT-only", {"label": "CPT-only"}, ranked=False, gray=True),
            *(Row(n, {"label": n}) for n in ("Random", "Mean", "Align")),
        ),
        recipe=RECOMMENDED,
        mark_source=False,
    ),
    TableSpec(
        "8",
        "Mean sum performance in ROUGE-L and BLEURT over runs, all three source models (2x2 LS + mtp + 512).",
        PAPER_MODELS,
        THREE,
        (_col(SUM, "ROUGE-L", fmt="{:.0f}"), _col(BLEURT, "BLEURT", fmt="frac2")),
        (SOURCE, CPT, *inits("Random", "Mean", "Align")),
        recipe=RECOMMENDED,
    ),
    TableSpec(
        "9",
        "Source knowledge retention on English benchmarks (Belebele mc, mmlu). Each language names the target "
        "language the model was adapted to.",
        PAPER_MODELS,
        THREE,
        (_col(EN_MC, "mc", fmt="frac2"), _col(EN_MMLU, "mmlu", fmt="frac2")),
        (SOURCE, CPT, Row("Align", {"label": "Align"})),
        recipe=RECOMMENDED,
    ),
    TableSpec(
        "10a",
        "Gemma2 with ElChat (post-hoc, training-free) on target-language tasks; Speedup rows are Align's without and "
        "with ElChat.",
        ("gemma2",),
        THREE,
        FOUR_TASKS,
        (
            SOURCE,
            CPT,
            Row("Align", {"label": "Align"}, group="+Speedup"),
            Row("+ ElChat", {"label": "Align", "posthoc": "elchat"}),
            speed_row("Speedup", "Align"),
            speed_row("(ElChat)", "Align", posthoc="elchat"),
        ),
        recipe=RECOMMENDED,
    ),
    TableSpec(
        "10b",
        "Gemma2 with ElChat on English tasks (Belebele mc, mmlu).",
        ("gemma2",),
        THREE,
        (_col(EN_MC, "mc", fmt="frac2"), _col(EN_MMLU, "mmlu", fmt="frac2")),
        (SOURCE, CPT, Row("Align", {"label": "Align"}), Row("+ ElChat", {"label": "Align", "posthoc": "elchat"})),
        recipe=RECOMMENDED,
    ),
    TableSpec(
        "11",
        "Vocabulary replacement on target-language tasks, Gemma2 as source. The Speedup row is Mean's.",
        ("gemma2",),
        THREE,
        FOUR_TASKS,
        (
            SOURCE,
            CPT,
            *inits("Random", "FOCUS", "Mean", vocab="replace"),
            speed_row("Speedup", "Mean", vocab="replace"),
        ),
        recipe={**RECOMMENDED, "k": None},
    ),
    TableSpec(
        "14",
        "Mean performance of Align models on classification tasks per training strategy, Llama2 as source.",
        ("llama2",),
        SIX,
        (MC_COL, GMMLU_COL),
        (SOURCE, CPT, *strategies()),
    ),
)
TABLES += (
    TableSpec(
        "_mumo",
        "Not in the paper: MuMo (a target-language head on the frozen source model, top-k verification "
        "decoding) next to vocabulary expansion, Llama2 as source: mt (chrF, 0–100) and sum (ROUGE-L), and the "
        "teacher-forced speed-up over Source on the reference translations (Source decoded in the same job; a MuMo "
        "step is one forward-maximum-matching unit) with that speed-up divided by its token-count bound (source "
        "tokens ÷ model tokens, or ÷ MuMo steps).",
        ("llama2",),
        ("my", "si", "te", "th"),
        (
            MT_COL,
            SUM_COL,
            Column("mt", PAIRED, "speed-up", fmt="{:.2f}x", higher_is_better=None),
            Column("mt", PAIRED_OVER_BOUND, "÷ bound", fmt="{:.2f}", higher_is_better=None),
        ),
        (SOURCE, CPT, *inits("Mean", "Align"), *mumo_rows()),
        recipe=RECOMMENDED,
        heading="MuMo beside vocabulary expansion",
        subject=tuple(r.label for r in mumo_rows()),
    ),
)
TABLES_BY_NAME = {t.name: t for t in TABLES}

FIGURES = ("figure2", "figure3", "figure4", "figure5", "loss_curves")
FIGURE_TITLES = {
    "figure2": "Figure 2: tokens per sentence, source and expanded tokenizers",
    "figure3": "Figure 3: generation and its paired speed-up vs |V_new|",
    "figure4": "Figure 4: share of new target tokens vs |V_new|",
    "figure5": "Figure 5: classification and its paired speed-up vs |V_new|",
    "loss_curves": "Training loss curves",
}


NOT_IN_PAPER = "Not in the paper: "


def report_title(title: str, caption: str) -> str:
    """A table's line in the report's list: its title and the gist of its caption (the first sentence up to its first
    parenthesis, colon or semicolon), and whether the paper has it."""
    if not title.startswith("Table "):  # a table of this project's own, with its own heading
        return f"{title} (not in the paper)"
    first = caption.split(". ")[0].rstrip(".")
    extra = first.startswith(NOT_IN_PAPER)
    gist = re.split(r" \(|: |; ", first.removeprefix(NOT_IN_PAPER), maxsplit=1)[0]
    return f"{title}: {gist}" + (" (not in the paper)" if extra else "")


def output_names() -> list[str]:
    """Every file `python -m workflow_scripts.paper` can write, relative to --out: a run writes those its results
    fill (tables.md lists the rest), all in one folder (rule paper_tables' directory output)."""
    names = [f"{t.name}.{ext}" for t in TABLES for ext in ("md", "tex", "csv", "html")]
    names += [f"{f}.{ext}" for f in FIGURES for ext in ("png", "pdf")]
    return [*names, "costs.md", "costs.csv", "costs.html", "tables.md"]


def report_titles() -> dict[str, str]:
    """Each table's line in the report's list (``report_title``), by file name; a caption template reads them."""
    return {t.name: report_title(t.title, t.caption) for t in TABLES}


def report_category(wildcards) -> str:
    """The report category of a file of rule paper_tables' folder (``wildcards.name``: its name without extension)."""
    name = str(wildcards.name)
    return "Costs" if name == "costs" else "Tables" if name.startswith("table") else "Figures"


def report_labels(wildcards) -> dict[str, str]:
    """The report's labels of a file of rule paper_tables' folder: its number (the report sorts a category by its
    labels: Table 2 before Table 10a) and its title."""
    name = str(wildcards.name)
    tables = [t.name for t in TABLES]
    if name in tables:
        return {"no.": f"{tables.index(name) + 1:02d}", "table": report_titles()[name]}
    if name in FIGURES:
        return {"no.": f"{FIGURES.index(name) + 1:02d}", "figure": FIGURE_TITLES[name]}
    return {"no.": "01", "table": "Cost per grid cell"}
