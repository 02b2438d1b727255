"""The paper's figures from the results (paper 002 Figures 2-5) and the training loss curves of every run.

Each figure function takes tidy data and an output stem and writes ``stem.png`` and ``stem.pdf``; where the results
hold nothing a figure could show, it writes nothing and returns no paths (the index page lists it as not run).
A sweep over |V_new| is drawn as lines; where a run has one |V_new| per series, the figure is a bar chart (a line
through one point says nothing). Bars start at zero, so that no axis magnifies a difference.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes and CI
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from workflow_scripts.io import atomic_path
from workflow_scripts.paper.names import METRIC_NAMES, TASK_NAMES, language_name, model_name, panel_name
from workflow_scripts.paper.specs import BOUND, GMMLU, MC, MT, PAIRED, SUM, cell_metric

# Per-task shares of new (target) tokens in prompts and generations, one field each (Figure 4).
INPUT_SHARE = "input_new_token_share"
OUTPUT_SHARE = "output_new_token_share"
FOOTER_LINE_INCHES = 0.13  # room per line of the data note under the axes, so that it never overlaps an axis label


def save(fig: plt.Figure, stem: str | Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf atomically and close the figure."""
    out = []
    for ext in ("png", "pdf"):
        path = Path(f"{stem}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=120, bbox_inches="tight")
        out.append(path)
    plt.close(fig)
    return out


def footer(fig: plt.Figure, data_labels: Iterable[str]) -> None:
    """Lay the figure out with the data line in its own strip under the axes (and their labels)."""
    labels = list(data_labels)
    if not labels:
        fig.tight_layout()
        return
    width = max(40, int(fig.get_figwidth() * 15))  # characters of 7-point text per line across the figure
    lines = [line for label in labels for line in textwrap.wrap(f"Data: {label}", width)]
    bottom = min(0.4, (0.1 + FOOTER_LINE_INCHES * len(lines)) / fig.get_figheight())
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7, ha="left", va="bottom", style="italic")


# Accuracies on their whole scale; chrF and ROUGE-L (0-100) on an axis fitted to the data, which the label says.
FULL_SCALE = {"acc": 1.0, "bleurt": 1.0}
HUNDRED = {"chrF", "rougeL_mt5", "rougeL_script", "rougeL_reference"}


def paired_metric(task: str) -> str:
    """The paired speed-up a figure shows for ``task``: Source timed in the same job (speed/table.py)."""
    return cell_metric(task, PAIRED)


def bound_metric(task: str) -> str:
    return cell_metric(task, BOUND)


def value_label(task: str, metric: str) -> str:
    """A performance axis' label in words, saying where the axis is fitted to the data."""
    if metric in HUNDRED:
        return f"{METRIC_NAMES.get(metric, metric)} (0–100 scale;\naxis fitted to the data)"
    return METRIC_NAMES.get(metric, metric)


def _value_axis(ax: plt.Axes, metric: str, values: Iterable[float]) -> None:
    """y from zero: to the metric's full scale where it is a fraction, else a quarter above the largest value."""
    top = FULL_SCALE.get(metric)
    peak = max([float(v) for v in values if pd.notna(v)], default=0.0)
    ax.set_ylim(0, top if top else max(peak * 1.25, 1e-9) if peak > 0 else 1.0)


def held_out_tokens(frame: pd.DataFrame) -> pd.DataFrame:
    """Tokens per held-out sentence from results.csv (the perplexity step's, the numbers results.md shows): one row
    per model x language x tokenizer, Source's (k empty) and each expanded one's (its |V_new|), with the count of
    sentences."""
    columns = ["model", "language", "k", "tokens", "sentences"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    ppl = frame[frame["task"] == "ppl"]
    rows = []
    for (model, lang), part in ppl.groupby(["model", "language"], sort=False):
        sentences = part.loc[part["metric"] == "sentences", "value"]
        count = int(sentences.iloc[0]) if len(sentences) else None
        tokens = part[part["metric"] == "tokens_per_sentence"]
        source = tokens[[str(lb) == "Source" for lb in tokens["label"]]]
        if len(source):
            rows.append(
                {"model": model, "language": lang, "k": None, "tokens": source["value"].mean(), "sentences": count}
            )
        for k, by_k in tokens[tokens["k"].notna()].groupby("k"):
            rows.append(
                {"model": model, "language": lang, "k": int(k), "tokens": by_k["value"].mean(), "sentences": count}
            )
    return pd.DataFrame(rows, columns=columns)


def figure2(
    frag: pd.DataFrame | None, frame: pd.DataFrame, stem: str | Path, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figure 2: over-fragmentation (left: tokens of each language's MT test sentences relative to their English
    translations, per source tokenizer) and what the expansion does to it (right: tokens per held-out sentence under
    Source's tokenizer next to each expanded one, from results.csv). Nothing is written where neither exists."""
    frag = frag if frag is not None else pd.DataFrame()
    frag = frag[frag["language"] != "en"] if "language" in frag else frag
    held = held_out_tokens(frame)
    panels = [p for p, data in (("frag", frag), ("held", held)) if not data.empty]
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        (_fragmentation_panel if panel == "frag" else _held_out_panel)(ax, frag if panel == "frag" else held)
    fig.suptitle("Figure 2: how many tokens a sentence takes", fontsize=11)
    footer(fig, data_labels)
    return save(fig, stem)


def _fragmentation_panel(ax: plt.Axes, frag: pd.DataFrame) -> None:
    table = frag.pivot_table(index="language", columns="tokenizer", values="ratio_to_english", aggfunc="mean")
    table.index = [language_name(lg) for lg in table.index]
    table.columns = [model_name(m) for m in table.columns]
    bars = table.plot.bar(ax=ax, rot=0, color="#888888" if len(table.columns) == 1 else None)
    for container in bars.containers:
        ax.bar_label(container, fmt="%.1fx", fontsize=7)
    ax.set_ylabel("tokens ÷ tokens of the English translation")
    ax.set_title("Source tokenizer: MT test sentences against their English", fontsize=9)
    ax.legend(title="source tokenizer", fontsize=7)


def _held_out_panel(ax: plt.Axes, held: pd.DataFrame) -> None:
    # in the left panel's order (by name), so that a language sits in the same place in both
    cats = sorted(
        dict.fromkeys(zip(held["model"], held["language"], strict=True)),
        key=lambda c: (model_name(c[0]), language_name(c[1])),
    )
    series = [None, *sorted(held["k"].dropna().unique())]  # None: Source's tokenizer
    width = 0.8 / len(series)
    for j, k in enumerate(series):
        xs, ys = [], []
        for i, (model, lang) in enumerate(cats):
            rows = held[(held["model"] == model) & (held["language"] == lang)]
            rows = rows[rows["k"].isna()] if k is None else rows[rows["k"] == k]
            if len(rows):
                xs.append(i + (j - (len(series) - 1) / 2) * width)
                ys.append(rows["tokens"].mean())
        name = "Source's tokenizer" if k is None else f"expanded, |V_new| = {int(k)}"
        bars = ax.bar(xs, ys, width, label=name, color="#888888" if k is None else None)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    multi = len({m for m, _ in cats}) > 1
    ax.set_xticks(range(len(cats)), [panel_name(m, lg, multi) for m, lg in cats])
    counts = set(held["sentences"].dropna().astype(int))
    which = f"the first {counts.pop()} held-out sentences" if len(counts) == 1 else "held-out sentences"
    ax.set_ylabel("tokens per sentence")
    ax.set_title(f"Source's and the expanded tokenizer: {which}", fontsize=9)
    ax.legend(fontsize=7)


def _sweep(frame: pd.DataFrame, tasks: list[tuple[str, str]]) -> pd.DataFrame:
    """Mean value per (model, language, label, k, task, metric) of each task's metric, its paired speed-up and the
    speed-up's bound."""
    wanted = (
        {(t, m) for t, m in tasks}
        | {(t, paired_metric(t)) for t, _ in tasks}
        | {(t, bound_metric(t)) for t, _ in tasks}
    )
    mask = [(t, m) in wanted for t, m in zip(frame["task"], frame["metric"], strict=True)]
    keep = frame[pd.Series(mask, index=frame.index, dtype=bool)]
    keys = ["model", "language", "label", "k", "task", "metric"]
    return keep.groupby(keys, dropna=False, sort=True)["value"].mean().reset_index()


def _sweep_axes(ax: plt.Axes, part: pd.DataFrame, base: pd.DataFrame, ylabel: str) -> None:
    """Lines over |V_new| per method label, with Source / CPT-only as dotted lines; the y axis starts at zero."""
    for label, points in part.groupby("label"):
        points = points.sort_values("k")
        ax.plot(points["k"].astype(float), points["value"], marker="o", label=str(label))
    for label, color in (("Source", "red"), ("CPT-only", "gray")):
        v = base[base["label"] == label]["value"]
        if len(v):
            ax.axhline(v.mean(), color=color, linestyle=":", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("|V_new| (new tokens)")
    _value_axis(ax, str(part["metric"].iloc[0]), [*part["value"], *base["value"]])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6)


def _bar_names(part: pd.DataFrame) -> list[str]:
    return [
        str(lb) if pd.isna(k) else f"{lb}\n|V_new| = {int(k)}" for lb, k in zip(part["label"], part["k"], strict=True)
    ]


def _bar_axes(ax: plt.Axes, part: pd.DataFrame, ylabel: str) -> None:
    """One bar per method (its |V_new| in the name), Source and CPT-only first; the y axis starts at zero."""
    order = {"Source": 0, "CPT-only": 1}
    part = part.assign(order=[order.get(str(lb), 2) for lb in part["label"]]).sort_values(["order", "label", "k"])
    colors = ["#888888" if o < 2 else "#1f77b4" for o in part["order"]]
    bars = ax.bar(range(len(part)), part["value"], color=colors)
    metric = str(part["metric"].iloc[0])
    ax.bar_label(bars, fmt="%.2f" if metric in FULL_SCALE else "%.1f", fontsize=7)  # a zero stays visible
    ax.set_xticks(range(len(part)), _bar_names(part), fontsize=7)
    _value_axis(ax, metric, part["value"])
    ax.set_ylabel(ylabel)


def _speedup_axes(ax: plt.Axes, part: pd.DataFrame, bound: pd.DataFrame, sweep: bool) -> None:
    """The paired speed-up per adapted cell (lines over a sweep, else bars), its bound (black), Source's 1x."""
    part = part[[str(lb) != "Source" for lb in part["label"]]].sort_values(["label", "k"])
    if sweep:
        for label, points in part[part["k"].notna()].groupby("label"):
            ax.plot(points["k"].astype(float), points["value"], marker="o", label=str(label))
        ax.set_xscale("log")
        ax.set_xlabel("|V_new| (new tokens)")
    else:
        colors = ["#888888" if str(lb) == "CPT-only" else "#1f77b4" for lb in part["label"]]
        bars = ax.bar(range(len(part)), part["value"], color=colors)
        ax.bar_label(bars, fmt="%.2fx", fontsize=7, label_type="center", color="white")
        for i, (label, k) in enumerate(zip(part["label"], part["k"], strict=True)):
            b = bound[(bound["label"] == label) & ((bound["k"] == k) | (bound["k"].isna() & pd.isna(k)))]["value"]
            if len(b):
                ax.plot(
                    [i - 0.4, i + 0.4],
                    [b.mean()] * 2,
                    color="black",
                    linewidth=2,
                    label="bound (Source ÷ model tokens)" if i == 0 else None,
                )
        ax.set_xticks(range(len(part)), _bar_names(part), fontsize=7)
    ax.axhline(1.0, color="#888888", linestyle=":", label="Source (1x)")
    ax.set_ylim(0, max([*part["value"], *bound["value"], 1.0]) * 1.2)
    ax.set_ylabel("paired speed-up over Source (x)")
    ax.legend(fontsize=6)


def figure_vnew(
    frame: pd.DataFrame, stem: str | Path, tasks: list[tuple[str, str]], title: str, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figures 3 and 5: task performance and, where timed, the paired speed-up over Source (Source timed in the same
    job) against |V_new| per model x language: lines over a |V_new| sweep, bars where each method has one |V_new|.
    Only tasks with results get panels; nothing is written where no expanded model has any."""
    data = _sweep(frame, tasks)
    expanded = data[data["k"].notna()]
    rows = []  # (task, metric, speed-up?) of each row of panels with data
    for task, metric in tasks:
        rows += [
            (task, m, speed)
            for m, speed in ((metric, False), (paired_metric(task), True))
            if not expanded[(expanded["task"] == task) & (expanded["metric"] == m)].empty
        ]
    if not rows:
        return []
    sweep = expanded.groupby(["model", "language", "label"])["k"].nunique().max() > 1
    panels = sorted({(m, lang) for m, lang in zip(expanded["model"], expanded["language"], strict=True)})
    multi = len({m for m, _ in panels}) > 1
    fig, axes = plt.subplots(len(rows), len(panels), figsize=(3.8 * len(panels), 2.9 * len(rows)), squeeze=False)
    for j, (model, lang) in enumerate(panels):
        cell = data[(data["model"] == model) & (data["language"] == lang)]
        for i, (task, metric, speed) in enumerate(rows):
            ax = axes[i][j]
            part = cell[(cell["task"] == task) & (cell["metric"] == metric)]
            ax.set_title(f"{panel_name(model, lang, multi)}: {TASK_NAMES.get(task, task)}", fontsize=9)
            if part.empty:
                ax.axis("off")
            elif speed:
                _speedup_axes(ax, part, cell[(cell["task"] == task) & (cell["metric"] == bound_metric(task))], sweep)
            elif sweep:
                _sweep_axes(ax, part[part["k"].notna()], part[part["k"].isna()], value_label(task, metric))
            else:
                _bar_axes(ax, part, value_label(task, metric))
    fig.suptitle(textwrap.fill(title, max(30, int(fig.get_figwidth() * 9))), fontsize=10)
    footer(fig, data_labels)
    return save(fig, stem)


def read_reports(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The expansion reports, one row per model x language x k: the new-token share of held-out text and the tokens
    per held-out sentence under the source and the expanded tokenizer."""
    rows = []
    for path in paths:
        path = Path(path)
        rep = json.loads(path.read_text(encoding="utf-8"))
        if "new_token_share" not in rep:
            continue
        model, lang = path.parts[-4], path.parts[-3]
        rows.append(
            {
                "model": model,
                "language": lang,
                "k": rep.get("k"),
                "share": rep["new_token_share"],
                "tokens_source": rep.get("tokens_per_sentence_source"),
                "tokens_expanded": rep.get("tokens_per_sentence_target"),
            }
        )
    return pd.DataFrame(rows, columns=["model", "language", "k", "share", "tokens_source", "tokens_expanded"])


def figure4(
    reports: pd.DataFrame, frame: pd.DataFrame, stem: str | Path, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figure 4: share of new target tokens in inputs (x) and outputs (o) against |V_new|; bars where every series has
    one |V_new|.

    Inputs: the expansion reports' share on held-out text, and the per-task prompt shares where results carry them;
    outputs: the per-task generation shares where results carry them.
    """
    tasks = frame[frame["metric"].isin([INPUT_SHARE, OUTPUT_SHARE])] if not frame.empty else frame
    multi = len(set(reports["model"]) | set(tasks["model"] if not tasks.empty else [])) > 1
    series = []
    for (model, lang), part in reports.groupby(["model", "language"]):
        name = f"{panel_name(model, lang, multi)}, held-out text (input)"
        series.append((name, part.groupby("k")["share"].mean(), "x"))
    for (model, lang, task, metric), part in tasks.groupby(["model", "language", "task", "metric"]):
        io_name = "input" if metric == INPUT_SHARE else "output"
        marker = "x" if metric == INPUT_SHARE else "o"
        name = f"{panel_name(model, lang, multi)}, {TASK_NAMES.get(task, task)} ({io_name})"
        series.append((name, part.groupby("k")["value"].mean(), marker))
    series = [x for x in series if len(x[1])]  # rows without a |V_new| (MuMo cells: no k) have no point
    if not series:
        return []
    sweep = any(len(s) > 1 for _, s, _ in series)
    fig, ax = plt.subplots(figsize=(6.4 if sweep else 1.6 + 1.1 * len(series), 3.4))
    if sweep:
        for name, s, marker in series:
            ax.plot(s.index.astype(float), s.values, marker=marker, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("|V_new|")
        ax.legend(fontsize=6, loc="best")
    else:
        names = [f"{name}\n|V_new| = {int(s.index[0])}".replace(", ", "\n", 2) for name, s, _ in series]
        bars = ax.bar(range(len(series)), [s.iloc[0] for _, s, _ in series], color="#1f77b4")
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.set_xticks(range(len(series)), names, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of new target tokens")
    ax.set_title("Figure 4: target-token ratio", fontsize=10)
    footer(fig, data_labels)
    return save(fig, stem)


def read_losses(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The loss.tsv files of training runs (results/<run>/{model}/{lang}/{method}/loss.tsv) as one table."""
    frames = []
    for path in paths:
        path = Path(path)
        part = pd.read_csv(path, sep="\t")
        frames.append(part.assign(model=path.parts[-4], language=path.parts[-3], method=path.parts[-2]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def loss_curves(
    losses: pd.DataFrame, stem: str | Path, names: dict[str, str] | None = None, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Training loss per step of every run, one panel per model x language, one line per method (``names``: its row
    name by slug); the losses are per token of each model's own vocabulary, which the axis and title say."""
    if losses.empty:
        return []
    names = names or {}
    panels = sorted({(m, lang) for m, lang in zip(losses["model"], losses["language"], strict=True)})
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.2 * nrows), squeeze=False)
    for ax, (model, lang) in zip(axes.flat, panels, strict=False):
        part = losses[(losses["model"] == model) & (losses["language"] == lang)]
        for method, run in part.groupby("method"):
            ax.plot(run["step"], run["loss"], label=names.get(method, method))
        ax.set_title(panel_name(model, lang), fontsize=9)
        ax.set_xlabel("training step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)  # the same footing in every panel: no axis magnifies a small change
        ax.set_ylabel("loss (nats per token\nof its own vocabulary)")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle("Training loss: per token of each model's vocabulary, not comparable across vocabularies", fontsize=10)
    footer(fig, data_labels)
    return save(fig, stem)


FIGURE3_TASKS = [MT, SUM]
FIGURE5_TASKS = [MC, GMMLU]
