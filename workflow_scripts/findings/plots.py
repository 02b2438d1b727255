"""The findings page's figures: quality against speed, the learning curves and the k trade-off, one panel per model
and language, in the house style of workflow_scripts/paper/figures.py (plain names, the data line under the axes,
axes from zero where a level is shown, legends only for what is marked). A figure with nothing to show is not
written: its function returns no paths."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matplotlib.colors import to_hex
from matplotlib.ticker import FuncFormatter, MaxNLocator

from workflow_scripts.findings.numbers import Panel, relative
from workflow_scripts.findings.text import tokens_text
from workflow_scripts.findings.titles import TITLES
from workflow_scripts.paper import figures
from workflow_scripts.paper.names import panel_name

plt = figures.plt
SOURCE_COLOR, CPT_COLOR = "#888888", "#444444"


def colors(panels: list[Panel]) -> dict[str, str]:
    """One colour per row name across every figure of the page (no gray: Source's and CPT-only's are gray)."""
    palette = [c for c in plt.rcParams["axes.prop_cycle"].by_key()["color"] if to_hex(c) != "#7f7f7f"]
    names = list(dict.fromkeys(r["name"] for p in panels for r in p.rows if r["kind"] != "cpt"))
    return {**{n: palette[i % len(palette)] for i, n in enumerate(names)}, "CPT-only": CPT_COLOR}


def _grid(n: int, width: float, height: float, legend: bool = False):
    """n panels in a row; with ``legend``, a narrower last axis for the shared legend."""
    ratios = [1.0] * n + ([0.55] if legend else [])
    fig, axes = plt.subplots(
        1, len(ratios), figsize=(width * sum(ratios), height), squeeze=False, gridspec_kw={"width_ratios": ratios}
    )
    return fig, list(axes[0])


def _shared_legend(ax, panels_axes: list) -> None:
    """Every label the panels draw, once, in ``ax`` (an axis without data)."""
    handles: dict[str, object] = {}
    for other in panels_axes:
        for handle, label in zip(*other.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    ax.axis("off")
    ax.legend(list(handles.values()), list(handles), fontsize=7, loc="center left", frameon=False)


def quality_speed(panels: list[Panel], stem: str | Path, labels: Iterable[str] = ()) -> list[Path]:
    """One panel per model x language: each adapted cell at (paired speed-up, final bits per character relative to
    Source in %), its [worst–best] as a horizontal bar, its bound as a black tick at the same height; Source (0%, 1x)
    and CPT-only as reference lines; one legend for every panel."""
    shown = [p for p in panels if any(_point(p, r) for r in p.rows)]
    if not shown:
        return []
    multi = len({p.model for p in shown}) > 1
    palette = colors(panels)
    fig, axes = _grid(len(shown), 4.4, 4.0, legend=True)
    for ax, panel in zip(axes, shown, strict=False):
        ax.axhline(0, color=SOURCE_COLOR, linestyle=":", label="Source (0%, 1x)")
        ax.plot([1.0], [0.0], "o", color=SOURCE_COLOR)
        cpt = panel.cpt()
        if cpt and cpt["bpc"][1] is not None:
            ax.axhline(
                relative(cpt["bpc"][1], panel.source["bpc"]),
                color=CPT_COLOR,
                linestyle="--",
                linewidth=0.8,
                label="CPT-only's bits per character",
            )
        for r in panel.rows:
            point = _point(panel, r)
            if point:
                _mark(ax, r, point, palette.get(r["name"], CPT_COLOR))
        ax.set_xlim(left=0, right=max([1.2, *(_right(r) for r in panel.rows)]) * 1.1)
        ax.margins(y=0.2)
        ax.set_xlabel("paired speed-up over Source (x)")
        ax.set_ylabel("final bits per character vs Source (%)\nlower is better")
        ax.set_title(panel_name(panel.model, panel.language, multi), fontsize=9)
    _shared_legend(axes[-1], axes[:-1])
    fig.suptitle(TITLES["quality_speed"], fontsize=10)
    figures.footer(fig, labels)
    return figures.save(fig, stem)


def _point(panel: Panel, row: dict) -> tuple[float, float] | None:
    value, y = row["paired"][0], relative(row["bpc"][1], panel.source["bpc"])
    return None if value is None or y is None else (value, y)


def _right(row: dict) -> float:
    return max(v for v in (*row["paired"], row["bound"], 0.0) if v is not None)


def _mark(ax, row: dict, point: tuple[float, float], color: str) -> None:
    """A cell's point (named in the legend), its repeats' range and its bound (a black tick joined to the point)."""
    (x, y), (_, low, high) = point, row["paired"]
    err = [[x - low], [high - x]] if low is not None and high is not None else None
    ax.errorbar([x], [y], xerr=err, fmt="o", color=color, capsize=3, label=row["name"])
    if row["bound"] is not None:
        ax.plot([x, row["bound"]], [y, y], color=color, linewidth=0.6, linestyle=":")
        ax.plot(
            [row["bound"]],
            [y],
            marker="|",
            markersize=14,
            color="black",
            linestyle="none",
            label=None if _has_bound(ax) else "bound (Source tokens ÷ model tokens)",
        )


def _has_bound(ax) -> bool:
    return any(label.startswith("bound") for label in ax.get_legend_handles_labels()[1])


def learning_curves(panels: list[Panel], stem: str | Path, labels: Iterable[str] = ()) -> list[Path]:
    """One panel per model x language with curves: held-out bits per character against training tokens, one line
    per cell (CPT-only's too; the mean over a method's seeds, with their range shaded, where several recorded the
    whole curve), Source's final bits per character as a horizontal line."""
    shown = [p for p in panels if p.curves()]
    if not shown:
        return []
    multi = len({p.model for p in shown}) > 1
    palette = colors(panels)
    fig, axes = _grid(len(shown), 4.8, 3.8)
    for ax, panel in zip(axes, shown, strict=True):
        for r in panel.curves():
            curve, seeds, color = r["curve"], r.get("curve_seeds", 1), palette.get(r["name"], CPT_COLOR)
            label = r["name"] + (f" (mean of {seeds} seeds)" if seeds > 1 else "")
            ax.plot(curve["tokens"], curve["bits_per_char"], marker="o", markersize=3, label=label, color=color)
            if seeds > 1:  # the seeds' lowest to highest at each step
                ax.fill_between(curve["tokens"], curve["bpc_min"], curve["bpc_max"], color=color, alpha=0.2, lw=0)
        if panel.source["bpc"] is not None:
            ax.axhline(panel.source["bpc"], color=SOURCE_COLOR, linestyle=":", label="Source")
        ax.set_ylim(bottom=0)  # levels from zero: no axis magnifies a small difference
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tokens_text(v) if v >= 0 else ""))
        ax.set_xlabel("training tokens (each model's own)")
        ax.set_ylabel("held-out bits per character\nlower is better")
        ax.set_title(panel_name(panel.model, panel.language, multi), fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(TITLES["learning_curves"], fontsize=10)
    figures.footer(fig, labels)
    return figures.save(fig, stem)


def k_series(panels: list[Panel]) -> list[tuple[Panel, str, list[dict]]]:
    """(panel, initialization, its rows by number of new tokens) for each initialization with several."""
    out = []
    for panel in panels:
        labels = dict.fromkeys(r["label"] for r in panel.expanded())
        for label in labels:
            rows = sorted((r for r in panel.expanded() if r["label"] == label), key=lambda r: r["k"])
            if len({r["k"] for r in rows}) > 1:
                out.append((panel, label, rows))
    return out


def k_tradeoff(panels: list[Panel], stem: str | Path, labels: Iterable[str] = ()) -> list[Path]:
    """For each initialization run with several numbers of new tokens: tokens per held-out sentence, the paired
    speed-up with its bound and the final bits per character against the number of new tokens (evenly spaced
    categories: only the values run)."""
    series = k_series(panels)
    if not series:
        return []
    multi = len({p.model for p in panels}) > 1
    fig, grid = plt.subplots(len(series), 3, figsize=(11, 3.3 * len(series)), squeeze=False)
    for axes, (panel, label, rows) in zip(grid, series, strict=True):
        xs = list(range(len(rows)))
        where = f"{panel_name(panel.model, panel.language, multi)}, {label}"
        tokens = [r["tokens"][1] for r in rows]
        _k_panel(axes[0], xs, tokens, panel.source["tokens"], "tokens per held-out sentence", name=label)
        bounds = [(x, r["bound"]) for x, r in zip(xs, rows, strict=True) if r["bound"] is not None]
        if bounds:
            axes[1].plot(
                *zip(*bounds, strict=True),
                marker="_",
                markersize=16,
                color="black",
                linestyle="none",
                label="bound (Source tokens ÷ model tokens)",
            )
        _k_panel(axes[1], xs, [r["paired"][0] for r in rows], 1.0, "paired speed-up over Source (x)", name=label)
        _k_panel(
            axes[2],
            xs,
            [r["bpc"][1] for r in rows],
            panel.source["bpc"],
            "final bits per character\nlower is better",
            panel.cpt(),
            label,
        )
        for ax, what in zip(axes, ("Tokens per sentence", "Paired speed-up", "Bits per character"), strict=True):
            ax.set_xticks(xs, [str(r["k"]) for r in rows])
            ax.set_xlabel("new tokens added")
            ax.set_title(f"{where}: {what}", fontsize=9)
            ax.legend(fontsize=7)
    fig.suptitle(TITLES["k_tradeoff"], fontsize=10)
    figures.footer(fig, labels)
    return figures.save(fig, stem)


def _k_panel(
    ax, xs: list[int], ys: list, source: float | None, ylabel: str, cpt: dict | None = None, name: str = "expanded"
) -> None:
    """One quantity at each number of new tokens, with Source's (and CPT-only's) level; y from zero to above every
    value and line drawn, so that no axis magnifies a small change."""
    points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if points:
        ax.plot(*zip(*points, strict=True), marker="o", color="#1f77b4", label=name)
    if source is not None:
        ax.axhline(source, color=SOURCE_COLOR, linestyle=":", label="Source")
    if cpt is not None and cpt["bpc"][1] is not None:
        ax.axhline(cpt["bpc"][1], color=CPT_COLOR, linestyle="--", linewidth=0.8, label="CPT-only")
    top = max([y for line in ax.lines for y in line.get_ydata()], default=1.0)
    ax.set_ylim(0, top * 1.2)
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylabel(ylabel)
