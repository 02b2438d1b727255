"""The paper's figures from the results (paper 002 Figures 2-5) and the training loss curves of every run.

Each figure function takes tidy data and an output stem and writes ``stem.png`` and ``stem.pdf``. Where the data a
figure needs does not exist yet, the figure says so in words (what would produce it), so the report stays complete.
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

from workflow_scripts.io import atomic_path
from workflow_scripts.paper.specs import GMMLU, MC, MT, SPEEDUP, SUM, cell_metric

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


def placeholder(stem: str | Path, title: str, needs: str) -> list[Path]:
    """A figure that states which data it is waiting for."""
    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.axis("off")
    ax.text(0.5, 0.6, title, ha="center", va="center", fontsize=11, weight="bold")
    ax.text(0.5, 0.3, f"No data yet: {needs}", ha="center", va="center", fontsize=9, wrap=True)
    return save(fig, stem)


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


# Fixed value ranges, so that a panel never stretches a small difference over the whole axis.
SCALES = {"acc": 1.0, "chrF": 100.0, "rougeL_mt5": 100.0, "rougeL_script": 100.0, "bleurt": 1.0}


def _value_axis(ax: plt.Axes, metric: str) -> None:
    """y from zero, to the metric's full scale where it has one."""
    top = SCALES.get(metric)
    ax.set_ylim(0, top) if top else ax.set_ylim(bottom=0)


def _no_data(ax: plt.Axes, text: str) -> None:
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=8, wrap=True, transform=ax.transAxes)


def figure2(frag: pd.DataFrame | None, reports: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Figure 2: over-fragmentation (left: tokens per sentence per language under each source tokenizer) and what the
    expansion does to it (right: tokens per held-out sentence, source tokenizer next to each expanded one)."""
    frag = frag if frag is not None else pd.DataFrame()
    if frag.empty and reports.empty:
        return placeholder(stem, "Figure 2", "results/<run>/analysis/fragmentation.csv (rule fragmentation)")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    if frag.empty:
        _no_data(left, "no fragmentation.csv (rule fragmentation)")
    else:
        table = frag.pivot_table(index="language", columns="tokenizer", values="tokens_per_sentence", aggfunc="mean")
        table.plot.bar(ax=left, rot=0)
        left.set_xlabel("language (MT test sentences)")
        left.set_ylabel("tokens per sentence")
        left.set_title("Source tokenizers", fontsize=10)
        left.legend(title="source tokenizer", fontsize=7)
    if reports.empty or "tokens_source" not in reports:
        _no_data(right, "no expansion reports (rule expand_tokenizer)")
    else:
        part = reports.dropna(subset=["tokens_source", "tokens_expanded"])
        cats = list(dict.fromkeys(zip(part["model"], part["language"], strict=True)))
        series = [None, *sorted(part["k"].dropna().unique())]  # None: the source tokenizer
        width = 0.8 / len(series)
        for j, k in enumerate(series):
            xs, ys = [], []
            for i, (model, lang) in enumerate(cats):
                rows = part[(part["model"] == model) & (part["language"] == lang)]
                rows = rows if k is None else rows[rows["k"] == k]
                if len(rows):
                    xs.append(i + (j - (len(series) - 1) / 2) * width)
                    ys.append(rows["tokens_source" if k is None else "tokens_expanded"].mean())
            name = "source tokenizer" if k is None else f"expanded, |V_new| = {int(k)}"
            right.bar(xs, ys, width, label=name, color="#888888" if k is None else None)
        right.set_xticks(range(len(cats)), [f"{m} · {lg}" for m, lg in cats])
        right.set_ylabel("tokens per held-out sentence")
        right.set_title("Source vs expanded tokenizer", fontsize=10)
        right.legend(fontsize=7)
    fig.suptitle("Figure 2: tokens per sentence", fontsize=11)
    labels = frag["texts"].dropna().unique() if "texts" in frag else []
    footer(fig, labels)
    return save(fig, stem)


def _sweep(frame: pd.DataFrame, tasks: list[tuple[str, str]]) -> pd.DataFrame:
    """Mean value per (model, language, label, k, task, metric) of each task's metric and its speed-up."""
    wanted = {(t, m) for t, m in tasks} | {(t, cell_metric(t, SPEEDUP)) for t, _ in tasks}
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
    ax.set_xlabel("|V_new|")
    _value_axis(ax, str(part["metric"].iloc[0]))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6)


def _bar_axes(ax: plt.Axes, part: pd.DataFrame, ylabel: str) -> None:
    """One bar per method (its |V_new| in the name), Source and CPT-only first; the y axis starts at zero."""
    order = {"Source": 0, "CPT-only": 1}
    part = part.assign(order=[order.get(str(lb), 2) for lb in part["label"]]).sort_values(["order", "label", "k"])
    names = [str(lb) if pd.isna(k) else f"{lb}\nk={int(k)}" for lb, k in zip(part["label"], part["k"], strict=True)]
    colors = ["#888888" if o < 2 else "#1f77b4" for o in part["order"]]
    bars = ax.bar(range(len(part)), part["value"], color=colors)
    metric = str(part["metric"].iloc[0])
    ax.bar_label(bars, fmt="%.1f" if SCALES.get(metric) == 100.0 else "%.2f", fontsize=7)  # a zero stays visible
    ax.set_xticks(range(len(part)), names, fontsize=7)
    _value_axis(ax, metric)
    ax.set_ylabel(ylabel)


def figure_vnew(
    frame: pd.DataFrame, stem: str | Path, tasks: list[tuple[str, str]], title: str, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figures 3 and 5: task performance (top) and speed-up over Source (bottom) against |V_new| per model x language:
    lines over a |V_new| sweep, bars where each method has one |V_new|; a panel without data says which is missing."""
    data = _sweep(frame, tasks)
    present = set(zip(data["task"], data["metric"], strict=True))
    tasks = [t for t in tasks if t in present] or tasks  # a task with no result anywhere gets no empty panels
    expanded = data[data["k"].notna()]
    if expanded.empty:
        names = ", ".join(f"{t} {m}" for t, m in tasks)
        return placeholder(stem, title, f"{names} of expanded models (rules evaluate_{tasks[0][0]}, measure_speed)")
    sweep = expanded.groupby(["model", "language", "label"])["k"].nunique().max() > 1
    panels = sorted({(m, lang) for m, lang in zip(expanded["model"], expanded["language"], strict=True)})
    fig, axes = plt.subplots(2 * len(tasks), len(panels), figsize=(3.6 * len(panels), 2.5 * 2 * len(tasks)),
                             squeeze=False)  # fmt: skip
    for j, (model, lang) in enumerate(panels):
        cell = data[(data["model"] == model) & (data["language"] == lang)]
        for i, (task, metric) in enumerate(tasks):
            speed = cell_metric(task, SPEEDUP)
            for r, (m, ylabel) in enumerate(((metric, f"{task} {metric}"), (speed, f"{task} speed-up (x)"))):
                ax = axes[2 * i + r][j]
                part = cell[(cell["task"] == task) & (cell["metric"] == m)]
                ax.set_title(f"{model} · {lang}", fontsize=9)
                if part.empty:
                    _no_data(ax, f"{model} · {lang}: no {task} {'speed-up' if r else metric} result")
                elif sweep:
                    _sweep_axes(ax, part[part["k"].notna()], part[part["k"].isna()], ylabel)
                else:
                    _bar_axes(ax, part, ylabel)
    fig.suptitle(title + ("" if sweep else " (one |V_new| per method: bars)"))
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
        rows.append({"model": model, "language": lang, "k": rep.get("k"), "share": rep["new_token_share"],
                     "tokens_source": rep.get("tokens_per_sentence_source"),
                     "tokens_expanded": rep.get("tokens_per_sentence_target")})  # fmt: skip
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
    if reports.empty and tasks.empty:
        return placeholder(stem, "Figure 4", "expansion reports (rule expand_tokenizer) or per-task token shares")
    series = []
    for (model, lang), part in reports.groupby(["model", "language"]):
        series.append((f"{model} · {lang} · held-out text (input)", part.groupby("k")["share"].mean(), "x"))
    for (model, lang, task, metric), part in tasks.groupby(["model", "language", "task", "metric"]):
        io_name = "input" if metric == INPUT_SHARE else "output"
        marker = "x" if metric == INPUT_SHARE else "o"
        series.append((f"{model} · {lang} · {task} ({io_name})", part.groupby("k")["value"].mean(), marker))
    series = [x for x in series if len(x[1])]  # rows without a |V_new| (MuMo cells: no k) have no point
    if not series:
        return placeholder(stem, "Figure 4", "expansion reports (rule expand_tokenizer) or per-task token shares")
    sweep = any(len(s) > 1 for _, s, _ in series)
    fig, ax = plt.subplots(figsize=(6.4 if sweep else 1.6 + 1.1 * len(series), 3.4))
    if sweep:
        for name, s, marker in series:
            ax.plot(s.index.astype(float), s.values, marker=marker, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("|V_new|")
        ax.legend(fontsize=6, loc="best")
    else:
        names = [f"{name}\n|V_new| = {int(s.index[0])}".replace(" · ", "\n", 2) for name, s, _ in series]
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
        return placeholder(stem, "Training loss curves", "results/<run>/{model}/{lang}/{method}/loss.tsv (rule lapt)")
    names = names or {}
    panels = sorted({(m, lang) for m, lang in zip(losses["model"], losses["language"], strict=True)})
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.2 * nrows), squeeze=False)
    for ax, (model, lang) in zip(axes.flat, panels, strict=False):
        part = losses[(losses["model"] == model) & (losses["language"] == lang)]
        for method, run in part.groupby("method"):
            ax.plot(run["step"], run["loss"], label=names.get(method, method))
        ax.set_title(f"{model} · {lang}", fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("loss (nats per token\nof its own vocabulary)")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle("Training loss: per token of each model's vocabulary, not comparable across vocabularies", fontsize=10)
    footer(fig, data_labels)
    return save(fig, stem)


FIGURE3_TASKS = [MT, SUM]
FIGURE5_TASKS = [MC, GMMLU]
