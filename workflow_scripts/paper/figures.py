"""The paper's figures from the results (paper 002 Figures 2-5) and the training loss curves of every run.

Each figure function takes tidy data and an output stem and writes ``stem.png`` and ``stem.pdf``. Where the data a
figure needs does not exist yet, the figure says so in words (what would produce it), so the report stays complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on cluster nodes and CI
import matplotlib.pyplot as plt
import pandas as pd

from workflow_scripts.io import atomic_path
from workflow_scripts.paper.cells import prepare
from workflow_scripts.paper.specs import GMMLU, MC, MT, SPEEDUP, SUM

# Per-task shares of new (target) tokens in prompts and generations, one field each (Figure 4; a later issue adds them).
INPUT_SHARE = "input_new_token_share"
OUTPUT_SHARE = "output_new_token_share"


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


def _subtitle(fig: plt.Figure, data_labels: Iterable[str]) -> None:
    labels = list(data_labels)
    if labels:
        fig.text(0.01, -0.02, "Data: " + "; ".join(labels), fontsize=7, ha="left", va="top", style="italic")


def figure2(frag: pd.DataFrame | None, stem: str | Path) -> list[Path]:
    """Figure 2: mean tokens per sentence per language, one bar per source tokenizer (over-fragmentation)."""
    if frag is None or frag.empty:
        return placeholder(stem, "Figure 2", "results/analysis/fragmentation.csv (rule fragmentation)")
    table = frag.pivot_table(index="language", columns="tokenizer", values="tokens_per_sentence", aggfunc="mean")
    fig, ax = plt.subplots(figsize=(1.2 + 0.6 * len(table) * max(1, len(table.columns) / 2), 3.2))
    table.plot.bar(ax=ax, rot=0)
    ax.set_xlabel("language")
    ax.set_ylabel("tokens per sentence")
    ax.set_title("Figure 2: tokens per sentence by source tokenizer")
    _subtitle(fig, frag["texts"].dropna().unique() if "texts" in frag else [])
    return save(fig, stem)


def _sweep(frame: pd.DataFrame, tasks: list[tuple[str, str]]) -> pd.DataFrame:
    """Mean value per (model, language, series, k, task, metric) for expanded cells, plus their speed-ups."""
    frame = prepare(frame)
    wanted = [(t, m) for t, m in tasks] + [(t, SPEEDUP) for t, _ in tasks]
    mask = pd.Series([(t, m) in wanted for t, m in zip(frame["task"], frame["metric"], strict=True)], dtype=bool)
    keep = frame[mask.to_numpy()]
    keep = keep.assign(series=(keep["label"].astype(str) + " " + keep["procedure"].fillna("").astype(str)).str.strip())
    keys = ["model", "language", "label", "series", "k", "task", "metric"]
    return keep.groupby(keys, dropna=False, sort=True)["value"].mean().reset_index()


def _baselines(ax: plt.Axes, data: pd.DataFrame, task: str, metric: str) -> None:
    """Red / gray dotted lines for Source and CPT-only, as in the paper."""
    for label, color in (("Source", "red"), ("CPT-only", "gray")):
        v = data[(data["label"] == label) & (data["task"] == task) & (data["metric"] == metric)]["value"]
        if len(v):
            ax.axhline(v.mean(), color=color, linestyle=":", label=label)


def figure_vnew(
    frame: pd.DataFrame, stem: str | Path, tasks: list[tuple[str, str]], title: str, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figures 3 and 5: task performance (top) and speed-up (bottom) against |V_new| per model x language."""
    data = _sweep(frame, tasks)
    present = {(t, m) for t, m in zip(data["task"], data["metric"], strict=True)} if not data.empty else set()
    tasks = [t for t in tasks if t in present] or tasks
    expanded = data[data["k"].notna() & (data["metric"] != SPEEDUP)]
    if expanded.empty:
        names = ", ".join(f"{t} {m}" for t, m in tasks)
        return placeholder(stem, title, f"{names} of expanded models (rules evaluate_{tasks[0][0]}, measure_speed)")
    panels = sorted({(m, lang) for m, lang in zip(expanded["model"], expanded["language"], strict=True)})
    fig, axes = plt.subplots(
        2 * len(tasks), len(panels), figsize=(3.2 * len(panels), 2.4 * 2 * len(tasks)), squeeze=False
    )
    for j, (model, lang) in enumerate(panels):
        cell = data[(data["model"] == model) & (data["language"] == lang)]
        for i, (task, metric) in enumerate(tasks):
            for r, (m, ylabel) in enumerate(((metric, f"{task} {metric}"), (SPEEDUP, f"{task} speed-up"))):
                ax = axes[2 * i + r][j]
                part = cell[(cell["task"] == task) & (cell["metric"] == m) & cell["k"].notna()]
                for series, points in part.groupby("series"):
                    ax.plot(points["k"].astype(float), points["value"], marker="o", label=series)
                _baselines(ax, cell, task, m)
                ax.set_xscale("log")
                ax.set_xlabel("|V_new|")
                ax.set_ylabel(ylabel)
                ax.set_title(f"{model} · {lang}", fontsize=9)
                if ax.lines:
                    ax.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    _subtitle(fig, data_labels)
    return save(fig, stem)


def read_reports(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The expansion reports' new-token share of held-out text, one row per model x language x k."""
    rows = []
    for path in paths:
        path = Path(path)
        rep = json.loads(path.read_text(encoding="utf-8"))
        if "new_token_share" not in rep:
            continue
        model, lang = path.parts[-4], path.parts[-3]
        rows.append({"model": model, "language": lang, "k": rep.get("k"), "share": rep["new_token_share"]})
    return pd.DataFrame(rows, columns=["model", "language", "k", "share"])


def figure4(
    reports: pd.DataFrame, frame: pd.DataFrame, stem: str | Path, data_labels: Iterable[str] = ()
) -> list[Path]:
    """Figure 4: share of new target tokens in inputs (x) and outputs (o) against |V_new|.

    Inputs: the expansion reports' share on held-out text, and the per-task prompt shares where results carry them;
    outputs: the per-task generation shares where results carry them.
    """
    tasks = frame[frame["metric"].isin([INPUT_SHARE, OUTPUT_SHARE])] if not frame.empty else frame
    if reports.empty and tasks.empty:
        return placeholder(stem, "Figure 4", "expansion reports (rule expand_tokenizer) or per-task token shares")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for (model, lang), part in reports.groupby(["model", "language"]):
        part = part.sort_values("k")
        ax.plot(part["k"], part["share"], marker="x", label=f"{model} · {lang} · held-out text (input)")
    for (model, lang, task, metric), part in tasks.groupby(["model", "language", "task", "metric"]):
        part = part.groupby("k")["value"].mean()
        marker = "x" if metric == INPUT_SHARE else "o"
        io_name = "input" if metric == INPUT_SHARE else "output"
        ax.plot(part.index.astype(float), part.values, marker=marker, label=f"{model} · {lang} · {task} ({io_name})")
    ax.set_xscale("log")
    ax.set_xlabel("|V_new|")
    ax.set_ylabel("share of new target tokens")
    ax.set_title("Figure 4: target-token ratio")
    ax.legend(fontsize=6)
    _subtitle(fig, data_labels)
    return save(fig, stem)


def read_losses(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The loss.tsv files of training runs (results/{model}/{lang}/{method}/loss.tsv) as one table."""
    frames = []
    for path in paths:
        path = Path(path)
        part = pd.read_csv(path, sep="\t")
        frames.append(part.assign(model=path.parts[-4], language=path.parts[-3], method=path.parts[-2]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def loss_curves(losses: pd.DataFrame, stem: str | Path, data_labels: Iterable[str] = ()) -> list[Path]:
    """Training loss per step of every run, one panel per model x language, one line per method."""
    if losses.empty:
        return placeholder(stem, "Training loss curves", "results/{model}/{lang}/{method}/loss.tsv (rule lapt)")
    panels = sorted({(m, lang) for m, lang in zip(losses["model"], losses["language"], strict=True)})
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3 * nrows), squeeze=False)
    for ax, (model, lang) in zip(axes.flat, panels, strict=False):
        part = losses[(losses["model"] == model) & (losses["language"] == lang)]
        for method, run in part.groupby("method"):
            ax.plot(run["step"], run["loss"], label=method)
        ax.set_title(f"{model} · {lang}", fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    _subtitle(fig, data_labels)
    return save(fig, stem)


FIGURE3_TASKS = [MT, SUM]
FIGURE5_TASKS = [MC, GMMLU]
