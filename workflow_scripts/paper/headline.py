"""The lead of the results page (results.md, the first page of `snakemake --report`): per model and language, what even
the small default run shows of the paper's claim, as a table and as one figure.

- tokens per held-out sentence, Source → model (the perplexity step's held-out set): the expansion shortens the text
  the model reads and writes (paper 002 §3, Figure 2);
- the paired teacher-forced speed-up over Source on the reference translations, with [worst–best] over repeats (Source
  decoded in the same job, so machine load cancels; workflow_scripts/speed/table.py) and its token-count bound
  (Source tokens ÷ model tokens of the same text): the paper's speed-up (§6.4, Table 4) without generation-length noise;
- where the cells were served in llama.cpp (export.gguf, rule serve_speed, docs/serving.md), the same paired
  speed-up measured in llama.cpp and its ratio to the bound of the text it timed;
- bits per character, Source → model: the held-out likelihood in a unit every vocabulary shares (token perplexity is
  per token of each model's own vocabulary and is not comparable across vocabularies);
- the training loss curves (per token of each model's own vocabulary: their levels are not comparable across
  vocabularies, their shapes are).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from workflow_scripts.intervals import Interval, verdict
from workflow_scripts.paper.names import language_name, model_name, panel_name
from workflow_scripts.plan.grid import unseeded_slug
from workflow_scripts.tasks import TASKS

TOKENS = ("ppl", "tokens_per_sentence")
SENTENCES = ("ppl", "sentences")  # how many held-out sentences the perplexity step read (tables.load_results)
BPC = ("ppl", "bits_per_char")
# + Source or CPT-only: a cell's difference in bits per character and its 95% paired bootstrap interval in min/max
# (tables.add_intervals, workflow_scripts/intervals.py)
BPC_DIFF = "bits_per_char_diff@"
PAIRED = "paired_speedup"  # speed/table.py PAIRED, with its variant: paired_speedup@teacher_forced.greedy.b1
BOUND = "token_ratio_bound"
TEACHER_FORCED = "teacher_forced"
SERVED = "llama.cpp-"  # the variant prefix of a speed record timed in llama.cpp (speed/table.py variant_name)
FIGURE_TITLE = "Tokens per held-out sentence, paired speed-up against its bound, bits per character, training loss"
MISSING = "–"


# The tasks a data label may be about by its first word ("mc proxy: ...", "mt: FLORES-200"): those the tables and
# figures name (a task with words in workflow_scripts/tasks/).
TASK_LABEL_TASKS = tuple(name for name, spec in TASKS.items() if spec.words)


def label_task(label: str) -> str | None:
    """The task a data label is about ("mc proxy: ..." -> mc; "mc: Belebele" -> mc), None for one about all tasks."""
    first = label.replace(":", " ").split(" ", 1)[0]
    return first if first in TASK_LABEL_TASKS else None


def labels_for(labels: Iterable[str], tasks: Iterable[str]) -> list[str]:
    """The data labels that apply to a table or figure showing ``tasks``: the general ones and those of its tasks."""
    tasks = set(tasks)
    return [lb for lb in labels if label_task(lb) is None or label_task(lb) in tasks]


def row_name(cell: dict) -> str:
    """A cell's row name: its label (the paper's), "+ ElChat" for the post-hoc step (Table 10)."""
    label = cell.get("label")
    name = str(cell["method"] if label is None or (not isinstance(label, str) and pd.isna(label)) else label)
    return name + (" + ElChat" if cell.get("posthoc") == "elchat" else "")


def _mean(part: pd.DataFrame, column: str = "value") -> float | None:
    values = pd.to_numeric(part[column], errors="coerce").dropna() if column in part else pd.Series(dtype=float)
    return float(values.mean()) if len(values) else None


def _metric(part: pd.DataFrame, task: str, metric: str) -> pd.DataFrame:
    return part[(part["task"] == task) & (part["metric"] == metric)]


def metric_mean(part: pd.DataFrame, task: str, metric: str) -> float | None:
    """The mean value of ``task``'s ``metric`` in rows of results.csv (over runs and seeds), None without one."""
    return _mean(_metric(part, task, metric))


def _teacher_forced(part: pd.DataFrame, base: str) -> pd.DataFrame:
    """The mt rows of ``base`` in the first teacher-forced variant the cell has (greedy at batch size 1 by default)."""
    names = sorted(m for m in set(part["metric"].astype(str)) if m.startswith(f"{base}@{TEACHER_FORCED}."))
    return part[(part["task"] == "mt") & (part["metric"] == names[0])] if names else part.iloc[0:0]


def _served(part: pd.DataFrame, base: str) -> pd.DataFrame:
    """The mt rows of ``base`` timed in llama.cpp, teacher-forced (the first GGUF type the cell has)."""
    prefix = f"{base}@{SERVED}"
    names = sorted(m for m in set(part["metric"].astype(str)) if m.startswith(prefix) and f".{TEACHER_FORCED}." in m)
    return part[(part["task"] == "mt") & (part["metric"] == names[0])] if names else part.iloc[0:0]


def method_group(method: object, train_seed: object) -> str:
    """A cell's method slug without its training seed (grid.unseeded_slug): the name its seeds share."""
    missing = train_seed is None or (not isinstance(train_seed, str) and bool(pd.isna(train_seed)))
    return unseeded_slug(str(method), None if missing else int(train_seed))


def method_groups(part: pd.DataFrame) -> list[str]:
    """Each row's method without its training seed: the cells a lead row pools (results.csv ``train_seed``)."""
    seeds = part["train_seed"] if "train_seed" in part else [None] * len(part)
    return [method_group(m, s) for m, s in zip(part["method"], seeds, strict=True)]


def number(text: object) -> float | None:
    """A cell of results.csv as a float; None where it is empty or not a number."""
    try:
        value = float(str(text))
    except ValueError:
        return None
    return None if math.isnan(value) else value


def bpc_interval(rows: Iterable[dict], reference: str) -> Interval | None:
    """A cell's bits-per-character difference to ``reference`` (Source, CPT-only) with its paired bootstrap interval,
    as results.csv records it (tables.add_intervals) in its rows (dicts); None where they have none."""
    for r in rows:
        if r["task"] == BPC[0] and r["metric"] == BPC_DIFF + reference:
            diff, low, high = (number(r.get(k)) for k in ("value", "min", "max"))
            if None not in (diff, low, high):
                return Interval(diff, low, high, 0)
    return None


def _seed_sd(cell: pd.DataFrame) -> float | None:
    """The sample standard deviation over seeds of the cells' bits per character (None with one seed)."""
    per_seed = pd.to_numeric(_metric(cell, *BPC)["value"], errors="coerce").groupby(cell["method"]).mean().dropna()
    return float(per_seed.std()) if len(per_seed) > 1 else None


def lead_rows(frame: pd.DataFrame, is_source: Callable, name: Callable[[dict], str]) -> list[dict]:
    """One row per model, language and adapted method (its training seeds pooled: means over seeds, the first
    seed's slug as ``method``): the lead's quantities (module docstring), None where missing."""
    rows = []
    if frame.empty:
        return rows
    for (model, lang), part in frame.groupby(["model", "language"], sort=False):
        source_mask = [is_source(m, lb) for m, lb in zip(part["method"], part["label"], strict=True)]
        source = part[source_mask]
        src_tokens, src_bpc = _mean(_metric(source, *TOKENS)), _mean(_metric(source, *BPC))
        adapted = part[[not s for s in source_mask]]
        for _, cell in adapted.groupby(method_groups(adapted), sort=False):
            first = cell.iloc[0].to_dict()
            method = first["method"]
            paired, bound = _teacher_forced(cell, PAIRED), _teacher_forced(cell, BOUND)
            served, served_bound = _served(cell, PAIRED), _served(cell, BOUND)
            row = {
                "model": model,
                "language": lang,
                "method": method,
                "name": name(first),
                "tokens": (src_tokens, _mean(_metric(cell, *TOKENS))),
                "sentences": _mean(_metric(pd.concat([source, cell]), *SENTENCES)),
                "bpc": (src_bpc, _mean(_metric(cell, *BPC))),
                "paired": (_mean(paired), _mean(paired, "min"), _mean(paired, "max")),
                "bound": _mean(bound),
                "served": (_mean(served), _mean(served, "min"), _mean(served, "max")),
                "served_bound": _mean(served_bound),
                "seeds": int(cell["method"].nunique()),
                "slugs": [str(m) for m in dict.fromkeys(cell["method"])],
                "bpc_sd": _seed_sd(cell),
                "vs_source": bpc_interval(cell.to_dict("records"), "Source"),
                "vs_cpt": bpc_interval(cell.to_dict("records"), "CPT-only"),
            }
            if any(v is not None for v in (*row["tokens"][1:], row["bpc"][1], row["paired"][0])):
                rows.append(row)
    return rows


def _num(value: float | None, fmt: str) -> str:
    return MISSING if value is None or math.isnan(value) else fmt.format(value)


def _arrow(pair: tuple[float | None, float | None], fmt: str) -> str:
    return f"{_num(pair[0], fmt)} → {_num(pair[1], fmt)}"


def _ratio(value: float | None, bound: float | None) -> str:
    return MISSING if value is None or not bound else f"{value / bound:.2f}"  # no ratio to a bound of 0 (no text)


def _paired(paired: tuple[float | None, ...]) -> str:
    value, low, high = paired
    if value is None:
        return MISSING
    spread = f" [{low:.2f}–{high:.2f}]" if low is not None and high is not None else ""
    return f"{value:.2f}x{spread}"


def sentences_text(rows: list[dict]) -> str:
    """ "the first 50 held-out sentences" (the perplexity step's set), or "the held-out sentences" where the count
    is not recorded."""
    counts = {int(r["sentences"]) for r in rows if r.get("sentences") is not None}
    return f"the first {counts.pop()} held-out sentences" if len(counts) == 1 else "the held-out sentences"


def markdown(rows: list[dict], figure: str | None, steps: dict[tuple, int] | None = None) -> list[str]:
    """The lead section of results.md: the table, what it says about quality and the bound (generated from the
    numbers), the figure beside it, and what each column means; ``steps``: training steps per (model, language,
    method)."""
    lines = ["## At a glance", ""]
    if not rows:
        return [*lines, "No held-out, speed or perplexity results of an adapted model yet.", ""]
    served = any(r.get("served", (None,))[0] is not None for r in rows)
    head = [
        "Model",
        "Language",
        "Method",
        "tokens per held-out sentence (Source → model)",
        "paired speed-up [worst–best]",
        "bound",
        "paired ÷ bound",
        "bits per character (Source → model)",
    ]
    if served:
        head[7:7] = ["llama.cpp paired speed-up [worst–best]", "llama.cpp ÷ its bound"]
    lines += ["| " + " | ".join(head) + " |", "|---|---|---|" + "---:|" * (len(head) - 3)]
    for r in rows:
        cells = [
            model_name(r["model"]),
            language_name(r["language"]),
            r["name"],
            _arrow(r["tokens"], "{:.1f}"),
            _paired(r["paired"]),
            _num(r["bound"], "{:.2f}x"),
            _ratio(r["paired"][0], r["bound"]),
            _arrow(r["bpc"], "{:.3f}"),
        ]
        if served:
            cells[7:7] = [_paired(r["served"]), _ratio(r["served"][0], r["served_bound"])]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", *quality_lines(rows, steps or {}), *bound_lines(rows)]
    if figure:
        lines += [f"![{FIGURE_TITLE}]({figure})", ""]
    lines += [
        f"- tokens per held-out sentence: {sentences_text(rows)} (the set bits per character is measured on) under "
        "Source's and the model's tokenizer; the same numbers as in the figure.",
        "- paired speed-up: teacher-forced decoding of the reference translations (the same text for both models, one "
        "forward pass per token), Source timed in the same job; [worst–best] over the repeats. bound: Source tokens ÷ "
        "model tokens of that text, the speed-up of a model whose every step costs what Source's does.",
        *(
            [
                "- llama.cpp: the same paired teacher-forced measurement with the cell's and Source's GGUF in llama.cpp"
                " (docs/serving.md); ÷ bound: the speed-up over the bound of the text timed (1: all of the token "
                "saving turns into time)."
            ]
            if served
            else []
        ),
        "- bits per character: held-out negative log-likelihood per character, comparable across vocabularies (token "
        "perplexity is not; it is listed apart below).",
        "- loss curves (figure): training loss per token of each model's own vocabulary; levels are not comparable "
        "across vocabularies.",
        "",
    ]
    return lines


def seeds_text(r: dict) -> str:
    """ "(mean of 3 seeds, sd 0.012)" for a lead row over several training seeds, else ""."""
    if r.get("seeds", 1) < 2:
        return ""
    sd = f", sd {r['bpc_sd']:.3f}" if r.get("bpc_sd") is not None else ""
    return f" (mean of {r['seeds']} seeds{sd})"


def quality_lines(rows: list[dict], steps: dict[tuple, int]) -> list[str]:
    """Whether each adapted model holds Source's quality, in words, from the bits per character and the paired
    bootstrap interval of its difference to Source's (docs/findings.md): worse where the interval lies above zero
    (not held), better where below, within noise where it holds zero (held: no difference is measured); without an
    interval (a ppl result with no per-sentence NLL) the page does not judge."""
    lines = []
    for r in rows:
        source, model = r["bpc"]
        if source is None or model is None:
            continue
        diff = model - source
        trained = steps.get((r["model"], r["language"], r["method"]))
        after = f" after {trained} training steps" if trained else ""
        interval = r.get("vs_source")
        if interval is None:
            judged = "not judged (no interval: its held-out scores record no per-sentence NLL)"
        else:
            held = "quality is not held" if interval.excludes_zero and interval.low > 0 else "quality is held"
            judged = f"{verdict(interval)}, {held}"
        lines.append(
            f"- {r['name']} ends {abs(diff):.2f} bits per character {'above' if diff > 0 else 'below'} Source on "
            f"{language_name(r['language'])} ({source:.3f} → {model:.3f}){seeds_text(r)}{after}: {judged}."
        )
    return (
        [
            "**Quality** (bits per character on the held-out sentences; lower is better; better or worse only where "
            "the 95% paired bootstrap interval of the difference excludes zero):",
            "",
            *lines,
            "",
        ]
        if lines
        else []
    )


def bound_lines(rows: list[dict]) -> list[str]:
    """Where a paired speed-up exceeds its bound, by how much and whether the repeats' spread covers the bound, in
    words, from the numbers."""
    lines = []
    for r in rows:
        (value, low, _), bound = r["paired"], r["bound"]
        if value is None or not bound or value <= bound:
            continue
        step = (value / bound - 1) * 100
        where = f"{r['name']} on {language_name(r['language'])}: {value:.2f}x against a bound of {bound:.2f}x"
        if low is not None and low <= bound:
            lines.append(f"- {where}; its worst repeat ({low:.2f}x) lies under the bound: within the repeats' noise.")
        else:
            lines.append(
                f"- {where}: every repeat above it, so Source's steps took {step:.0f} % longer each than the model's "
                f"in the same job. {BOUND_REASON}"
            )
    return ["**Above the bound**:", "", *lines, ""] if lines else []


# Why a paired speed-up can pass its bound with every repeat (docs/speed.md, "The bound").
BOUND_REASON = (
    'The bound counts steps and assumes a step costs both models the same; docs/speed.md ("The bound") lists what '
    "makes Source's steps dearer and what was measured."
)


def _categories(rows: list[dict]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r["model"], r["language"]) for r in rows))


def _bars(ax, rows: list[dict], key: str, ylabel: str, colors: dict[str, str], fmt: str, source: bool = True) -> None:
    """Grouped bars per model x language, each with its value (``fmt``, as the table prints it): Source's value
    (key[0]) first, then each adapted cell's (key[1])."""
    cats = _categories(rows)
    names = list(dict.fromkeys(r["name"] for r in rows))
    series = (["Source"] if source else []) + names
    width = 0.8 / max(1, len(series))
    multi = len({m for m, _ in cats}) > 1
    for i, (model, lang) in enumerate(cats):
        here = [r for r in rows if (r["model"], r["language"]) == (model, lang)]
        values = {"Source": here[0][key][0]} if source and here else {}
        values.update({r["name"]: r[key][1] for r in here})
        for j, s in enumerate(series):
            v = values.get(s)
            if v is not None:
                first = s not in ax.get_legend_handles_labels()[1]
                bar = ax.bar(
                    i + (j - (len(series) - 1) / 2) * width, v, width, color=colors[s], label=s if first else None
                )
                ax.bar_label(bar, fmt=fmt, fontsize=7)
    ax.set_xticks(range(len(cats)), [panel_name(m, lg, multi) for m, lg in cats])
    ax.set_ylabel(ylabel)


def figure(
    rows: list[dict], losses: pd.DataFrame, names: dict[str, str], stem: str | Path, data_labels: Iterable[str] = ()
) -> list[Path]:
    """One PNG (and PDF) of the lead: tokens per sentence, paired speed-up with its bound, bits per character, and the
    loss curves; ``names`` maps a method slug (loss.tsv's folder) to its row name."""
    from workflow_scripts.paper.figures import footer, plt, save

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.2))
    axes = list(axes.flat)
    names_all = list(dict.fromkeys([r["name"] for r in rows] + [names.get(m, m) for m in losses.get("method", [])]))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {"Source": "#888888", **{n: palette[i % len(palette)] for i, n in enumerate(names_all)}}
    if rows:
        _bars(axes[0], rows, "tokens", "tokens per sentence", colors, "%.1f")
        axes[0].set_title(f"Tokens per sentence ({sentences_text(rows)})", fontsize=9)
        axes[0].legend(fontsize=7)
        _speedups(axes[1], rows, colors)
        _bars(axes[2], rows, "bpc", "bits per character (lower is better)", colors, "%.2f")
        axes[2].set_title("Bits per character (held-out)", fontsize=10)
    for ax in axes[:3] if not rows else ():
        _empty(ax, "no adapted model's results yet")
    _loss_panel(axes[3], losses, names, colors)
    fig.suptitle(FIGURE_TITLE, fontsize=11)
    footer(fig, data_labels)
    return save(fig, stem)


def _speedups(ax, rows: list[dict], colors: dict[str, str]) -> None:
    """One bar per adapted cell with its [worst–best] range, its bound as a black tick, and Source's 1x line."""
    cats = _categories(rows)
    names = list(dict.fromkeys(r["name"] for r in rows))
    width = 0.8 / max(1, len(names))
    multi = len({m for m, _ in cats}) > 1
    for i, cat in enumerate(cats):
        for j, n in enumerate(names):
            r = next((r for r in rows if (r["model"], r["language"]) == cat and r["name"] == n), None)
            if r is None or r["paired"][0] is None:
                continue
            x = i + (j - (len(names) - 1) / 2) * width
            value, low, high = r["paired"]
            err = [[value - low], [high - value]] if low is not None and high is not None else None
            bar = ax.bar(x, value, width, color=colors[n], yerr=err, capsize=3)
            ax.bar_label(bar, fmt="%.2fx", fontsize=7, label_type="center")
            if r["bound"] is not None:
                ax.plot(
                    [x - width / 2, x + width / 2],
                    [r["bound"]] * 2,
                    color="black",
                    linewidth=2,
                    label="bound" if not ax.get_legend_handles_labels()[1] else None,
                )
    ax.axhline(1.0, color="#888888", linestyle=":", label="Source (1x)")
    ax.set_xticks(range(len(cats)), [panel_name(m, lg, multi) for m, lg in cats])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("speed-up over Source (x)")
    ax.set_title("Paired teacher-forced speed-up", fontsize=10)
    ax.legend(fontsize=7)


def _empty(ax, text: str) -> None:
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True, transform=ax.transAxes)


def _loss_panel(ax, losses: pd.DataFrame, names: dict[str, str], colors: dict[str, str]) -> None:
    from matplotlib.ticker import MaxNLocator

    if losses.empty:
        _empty(ax, "no training runs")
        return
    panels = list(dict.fromkeys(zip(losses["model"], losses["language"], strict=True)))
    styles = ("-", "--", ":", "-.")  # the method is the colour, the model x language the line style
    for (model, lang, method), run in losses.groupby(["model", "language", "method"], sort=False):
        name = names.get(method, method)
        label = f"{name} ({panel_name(model, lang)})" if len(panels) > 1 else name
        style = styles[panels.index((model, lang)) % len(styles)]
        ax.plot(run["step"], run["loss"], style, label=label, color=colors.get(name))
    ax.set_xlabel("training step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_ylabel("loss per own token (nats)")
    ax.set_title("Training loss: per token, not comparable\nacross vocabularies", fontsize=9)
    ax.legend(fontsize=7)


def to_html(markdown_text: str, images: dict[str, Path]) -> str:
    """results.md as an HTML fragment for the report's first page; each image named in ``images`` embedded as a data
    URI so that the self-contained report shows it."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown_text)
    for name, path in images.items():
        if Path(path).is_file():
            data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
            body = body.replace(f'src="{name}"', f'src="data:image/png;base64,{data}" style="max-width:100%"')
    # The report's landing view centers its content vertically in a scrolling box (which cuts off the top of a page
    # taller than the window) and narrows it to a column: while this page is shown, it starts at the top, full width.
    style = (
        "<style>.overflow-auto:has(.vx-results){align-items:flex-start;justify-content:flex-start}"
        " .max-w-lg:has(.vx-results){max-width:52rem}"
        " .vx-results blockquote p:before,.vx-results blockquote p:after{content:none}"
        " .vx-results table{border-collapse:collapse;margin:0.5em 0 1em} .vx-results th,.vx-results td"
        "{border:1px solid #ccc;padding:2px 6px} .vx-results h1{font-size:1.5em} .vx-results h2{font-size:1.2em;"
        "margin-top:1em} .vx-results blockquote{color:#555} .vx-results ul{list-style:disc;margin-left:1.5em}</style>"
    )
    return f'{style}<div class="vx-results">{body}</div>\n'


# The data line of results.md, which the paper tables and the findings page read back.
DATA_PREFIX, DATA_SUFFIX = "> Data: ", ". The embedded default's numbers are not comparable to the paper's."


def markdown_data_labels(md: str) -> list[str]:
    """The data labels of results.md's text ("> Data: ..." lines)."""
    lines = md.splitlines()
    return [ln[len(DATA_PREFIX) :].removesuffix(DATA_SUFFIX).rstrip(".") for ln in lines if ln.startswith(DATA_PREFIX)]


def data_labels(results_md: Path) -> list[str]:
    """The data labels rule tables wrote into results.md, if the file is there."""
    return markdown_data_labels(results_md.read_text(encoding="utf-8")) if results_md.is_file() else []


def read_results(path: Path) -> pd.DataFrame:
    """results.csv (rule tables), or a stop naming the file."""
    if not path.is_file():
        raise SystemExit(f"--results {path}: no such file (rule tables writes results/<run>/tables/results.csv)")
    return pd.read_csv(path)
