"""Write one configuration's dated snapshot into docs/measurements.md, from the files of its finished run.

    python -m tools.snapshot                                   # results/default/ (config.yaml's run)
    python -m tools.snapshot --configfile configs/demo-full.yaml --wall-time "30m29s" --note "loaded machine"
    make snapshot RUN=default WALL="8m12s" NOTE="loaded machine: three other jobs running"

Everything in the section is read from ``results/<run>/``: the headline per language and method from
``tables/results.csv`` (tokens per held-out sentence, the paired teacher-forced speed-up with its bound, bits per
character, as results.md's lead computes them; mt chrF), the cost per rule from the Snakemake ``benchmark:`` files
(job wall and CPU seconds, peak memory), the date from the newest of those files, the machine from the speed step's
``details.hardware`` and the training runs' ``train_stats.json``, the config files from the run's ``.run.json``.
What the files do not hold is passed on the command line: the whole run's wall time (``--wall-time``, as ``time``
prints it), the machine's load (``--note``), and when it finished if its last jobs were run again later
(``--finished``).

Each snapshot given a wall time adds a row to the section's "Timed runs" table (when the run finished, its wall time,
its summed job time and heaviest rules, the note); the rows of earlier snapshots of the same configuration are kept,
so repeated timings of a configuration stand side by side. A run snapshotted again replaces its own row.

The section lies between ``<!-- snapshot: RUN -->`` and ``<!-- /snapshot: RUN -->``; only that run's section is
replaced (appended at the end when the page has none yet), and the page is written atomically.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd

from workflow_scripts.io import write_text
from workflow_scripts.paper import headline
from workflow_scripts.paper.costs import read_benchmarks
from workflow_scripts.plan import paths
from workflow_scripts.plan.runs import MARKER, RESULTS, run_of_configfiles
from workflow_scripts.tables import is_source

DOC = Path("docs/measurements.md")
FINDINGS_HEADING = "## At a glance"
TIMINGS_HEADING = "### Timed runs"
TIMINGS_HEAD = (
    "| finished (UTC) | wall time | jobs | job wall time, summed | heaviest rules, summed | machine |",
    "|---|---:|---:|---:|---|---|",
)
MISSING = "–"
WIDTH = 120
CHRF = ("mt", "chrF")


def begin_marker(run: str) -> str:
    return f"<!-- snapshot: {run} -->"


def end_marker(run: str) -> str:
    return f"<!-- /snapshot: {run} -->"


def parse_wall_time(text: str) -> float:
    """Seconds from ``time``'s ``real 8m12.345s``, ``1h2m3s``, ``8m12s``, plain seconds, or GNU ``time -v``'s
    ``1:02:04`` / ``56:06.26`` (h:mm:ss or m:ss)."""
    value = text.strip().removeprefix("real").strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    if re.fullmatch(r"(\d+:)?\d+:\d+(\.\d+)?", value):
        *rest, seconds = value.split(":")
        return sum(int(n) * 60 ** (len(rest) - i) for i, n in enumerate(rest)) + float(seconds)
    match = re.fullmatch(r"(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+(?:\.\d+)?)s)?", value)
    if not value or not match:
        raise ValueError(f"--wall-time {text!r}: give seconds or the form `time` prints, e.g. 8m12.3s")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def duration(seconds: float) -> str:
    """``7 min 19 s``, ``1 h 2 min 3 s`` or ``42 s``."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(hours or minutes) + [f"{secs} s"]
    return " ".join(parts)


def cost_rows(bench: pd.DataFrame) -> list[dict]:
    """Per rule, largest summed wall time first: jobs, summed wall and CPU seconds, the largest peak memory."""
    if bench.empty:
        return []
    grouped = bench.groupby("rule").agg(
        jobs=("s", "size"), s=("s", "sum"), cpu_s=("cpu_s", "sum"), max_rss=("max_rss", "max")
    )
    return grouped.reset_index().sort_values(["s", "rule"], ascending=[False, True]).to_dict("records")


def _value(frame: pd.DataFrame, method: str, task: str, metric: str) -> float | None:
    return headline.metric_mean(frame[frame["method"] == method], task, metric)


def result_rows(frame: pd.DataFrame) -> list[dict]:
    """Per model and language, Source first, then each adapted cell of results.md's lead (headline.lead_rows): tokens
    per held-out sentence, paired speed-up (mean, worst, best), its bound, bits per character, mt chrF."""
    rows = []
    for lead in headline.lead_rows(frame, is_source, headline.row_name):
        part = frame[(frame["model"] == lead["model"]) & (frame["language"] == lead["language"])]
        if not rows or (rows[-1]["model"], rows[-1]["language"]) != (lead["model"], lead["language"]):
            sources = [m for m, lb in zip(part["method"], part["label"], strict=True) if is_source(m, lb)]
            chrf = _value(part, sources[0], *CHRF) if sources else None
            rows.append(
                {
                    "model": lead["model"],
                    "language": lead["language"],
                    "name": "Source",
                    "tokens": lead["tokens"][0],
                    "paired": (None, None, None),
                    "bound": None,
                    "bpc": lead["bpc"][0],
                    "chrf": chrf,
                }
            )
        rows.append(
            {
                "model": lead["model"],
                "language": lead["language"],
                "name": lead["name"],
                "tokens": lead["tokens"][1],
                "paired": lead["paired"],
                "bound": lead["bound"],
                "bpc": lead["bpc"][1],
                "chrf": _value(part, lead["method"], *CHRF),
                "k": _k(part, lead["method"]),
            }
        )
    return _named_apart(rows)


def _k(part: pd.DataFrame, method: str) -> int | None:
    """The number of new tokens of a cell (None without expansion)."""
    values = pd.to_numeric(part[part["method"] == method]["k"], errors="coerce").dropna() if "k" in part else []
    return int(values.iloc[0]) if len(values) else None


def _named_apart(rows: list[dict]) -> list[dict]:
    """Rows whose name repeats within a model and language get their number of new tokens: "Mean, 50 new tokens"."""
    seen = Counter((r["model"], r["language"], r["name"]) for r in rows)
    for r in rows:
        if seen[(r["model"], r["language"], r["name"])] > 1 and r.get("k") is not None:
            r["name"] = f"{r['name']}, {r['k']} new tokens"
    return rows


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def machine(root: Path, cpu_model: str | None) -> dict:
    """Where the run ran: the speed step's ``details.hardware`` (device, CPUs, torch threads, evaluation dtype,
    versions) and the training runs' precision and threads. The CPU model is ``cpu_model``; "auto" reads
    /proc/cpuinfo when the machine running the command is the one the speed step recorded (same platform string and
    CPU count)."""
    hardware: dict = {}
    for path in paths.found(paths.eval_file("*", "*", "*", "speed.json", paths.glob_root(root))):
        hardware = (_json(path).get("details") or {}).get("hardware") or {}
        if hardware:
            break
    stats = [_json(p) for p in paths.found(paths.train_stats("*", "*", "*", paths.glob_root(root)))]
    if cpu_model == "auto":
        same = hardware.get("platform") == platform.platform() and hardware.get("cpu_count") == os.cpu_count()
        cpu_model = _cpuinfo_model() if same else None
    return {
        "cpu_model": cpu_model,
        "hardware": hardware,
        "training": sorted({str(s["precision"]) for s in stats if s.get("precision")}),
        "training_threads": sorted({int(s["threads"]) for s in stats if s.get("threads")}),
        "training_devices": sorted({str(s["device"]) for s in stats if s.get("device")}),
    }


def _first_details(root: Path, name: str) -> dict:
    """The ``details`` of the first ``<model>/<lang>/<method>/eval/<name>`` of the run, or {}."""
    for path in paths.found(paths.eval_file("*", "*", "*", name, paths.glob_root(root))):
        details = _json(path).get("details") or {}
        if details:
            return details
    return {}


def settings(root: Path) -> dict:
    """The item counts and training length the run's files record (what ran, whatever the config says today)."""
    stats = [_json(p) for p in paths.found(paths.train_stats("*", "*", "*", paths.glob_root(root)))]
    ppl, mt, speed = (_first_details(root, f"{task}.json") for task in ("ppl", "mt", "speed"))
    return {
        "ppl": ppl.get("n_used"),
        "mt": (mt.get("n_used", mt.get("n_items")), mt.get("decoding"), mt.get("runs")),
        "speed": tuple(speed.get(k) for k in ("n_used", "repeats", "warmup", "reference_chars")),
        "steps": sorted({int(s["steps"]) for s in stats if s.get("steps") is not None}),
        "tokens_per_second": [float(s["tokens_per_second"]) for s in stats if s.get("tokens_per_second")],
        "data": "; ".join(data_labels(root)) or None,
    }


def data_labels(root: Path) -> list[str]:
    """The distinct data labels of the run's held-out evaluations, in file order (one per corpus kind)."""
    labels = []
    for path in paths.found(paths.eval_file("*", "*", "*", "ppl.json", paths.glob_root(root))):
        label = (_json(path).get("details") or {}).get("data_label")
        if label and label not in labels:
            labels.append(label)
    return labels


def settings_text(s: dict) -> str:
    """One sentence: what each step measured on, as the result files record it."""
    parts = []
    if s["ppl"]:
        parts.append(f"bits per character and tokens per sentence on {s['ppl']} held-out sentences")
    n, decoding, runs = s["mt"]
    if n:
        parts.append(f"mt on {n} sentences ({decoding or MISSING} decoding, {_count(runs or 1, 'run')})")
    n, repeats, warmup, chars = s["speed"]
    if n:
        text = f"speed on {n} references, {repeats} repeats after {warmup} warm-up"
        parts.append(text + (f", teacher forcing on their first {chars} characters" if chars else ""))
    if s["steps"]:
        rates = s["tokens_per_second"]
        span = f"{min(rates):.0f}-{max(rates):.0f}" if rates and round(min(rates)) != round(max(rates)) else None
        rate = f" at {span or f'{rates[0]:.0f}'} tokens/s" if rates else ""
        parts.append(f"training {'/'.join(map(str, s['steps']))} steps{rate}")
    text = "; ".join(parts) or "no result files"
    return text + (f". Data: {s['data']}" if s["data"] else "")


def _cpuinfo_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def run_finished(root: Path) -> dt.datetime:
    """The UTC time of the newest results table or benchmark file: when the run finished."""
    files = [
        Path(paths.table("results.csv", str(root))),
        *paths.found(paths.benchmark("*", "*", paths.glob_root(root))),
    ]
    times = [f.stat().st_mtime for f in files if f.is_file()]
    if not times:
        raise FileNotFoundError(f"{root}: no tables/results.csv and no benchmarks/*/*.tsv: has the run finished?")
    return dt.datetime.fromtimestamp(max(times), dt.UTC)


def _count(n: object, noun: str) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _num(value: float | None, fmt: str) -> str:
    return MISSING if value is None or pd.isna(value) else fmt.format(value)


def _paired(paired: tuple) -> str:
    value, low, high = paired
    if value is None:
        return MISSING
    return f"{value:.2f}x" + (f" [{low:.2f}–{high:.2f}]" if low is not None and high is not None else "")


def results_table(rows: list[dict]) -> list[str]:
    """The headline per language and method as Markdown (a Model column only when the run has several models)."""
    several = len({r["model"] for r in rows}) > 1
    head = [
        "Language",
        "Method",
        "tokens / held-out sentence",
        "paired teacher-forced speed-up [worst–best]",
        "bound",
        "paired ÷ bound",
        "bits / character",
        "mt chrF",
    ]
    head = ["Model", *head] if several else head
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---|" * several + "---:|" * (len(head) - 2 - several)]
    for r in rows:
        ratio = r["paired"][0] / r["bound"] if r["paired"][0] is not None and r["bound"] else None
        cells = [
            r["language"],
            r["name"],
            _num(r["tokens"], "{:.1f}"),
            _paired(r["paired"]),
            _num(r["bound"], "{:.2f}x"),
            _num(ratio, "{:.2f}"),
            _num(r["bpc"], "{:.3f}"),
            _num(r["chrf"], "{:.1f}"),
        ]
        lines.append("| " + " | ".join([str(r["model"])] * several + cells) + " |")
    return lines


def cost_table(costs: list[dict]) -> list[str]:
    """Job time per rule from the benchmark files, with the total."""
    if not costs:
        return ["No benchmark files under benchmarks/."]
    lines = [
        "| rule | jobs | job wall time, summed | job CPU time, summed | largest peak memory |",
        "|---|---:|---:|---:|---:|",
    ]
    for c in costs:
        memory = _num(c["max_rss"] / 1024 if pd.notna(c["max_rss"]) else None, "{:.1f} GB")
        lines.append(f"| `{c['rule']}` | {c['jobs']} | {c['s']:.0f} s | {_num(c['cpu_s'], '{:.0f} s')} | {memory} |")
    jobs, wall, cpu = (sum(c[k] for c in costs) for k in ("jobs", "s", "cpu_s"))
    lines.append(f"| **total** | {jobs} | {wall:.0f} s ({duration(wall)}) | {_num(cpu, '{:.0f} s')} | |")
    return lines


def machine_text(m: dict, note: str | None) -> str:
    """One sentence: CPU model, CPUs, device, torch and its threads, evaluation dtype, training precision, load."""
    hw = m["hardware"]
    parts = [m["cpu_model"] or "CPU model not recorded"]
    if hw.get("cpu_count"):
        parts.append(f"{hw['cpu_count']} CPUs")
    parts.append(f"device {hw.get('device', MISSING)}" + (f" ({hw['gpu']})" if hw.get("gpu") else ""))
    if hw.get("torch"):
        parts.append(f"torch {hw['torch']}, transformers {hw.get('transformers', MISSING)}")
    if hw.get("dtype"):
        parts.append(
            f"evaluation and speed in {hw['dtype']} on {_count(hw.get('torch_threads', MISSING), 'torch thread')}"
        )
    if m["training"]:
        threads = "/".join(str(t) for t in m["training_threads"]) or MISSING
        noun = "torch thread" if m["training_threads"] == [1] else "torch threads"
        parts.append(f"training in {'; '.join(m['training'])} on {threads} {noun}")
    return "; ".join(parts) + (f"; {note}" if note else "")


def _wrap(text: str) -> list[str]:
    """A paragraph wrapped at the page's 120 columns (Markdown joins the lines again)."""
    return textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)


def render(run: str, root: Path, snap: dict) -> str:
    """The run's section, markers included."""
    configs = ", ".join(f"`{c}`" for c in snap["configfiles"]) or MISSING
    models = list(dict.fromkeys(str(r["model"]) for r in snap["rows"]))
    model = ("Models: " if len(models) > 1 else "Model: ") + (", ".join(f"`{m}`" for m in models) or MISSING)
    wall = snap["wall_time"]
    total = f"The whole run took **{duration(wall)}** of wall time. " if wall is not None else ""
    head = (
        f"Written by `python -m tools.snapshot --run {run}` from the run folder `{root.as_posix()}/` (configuration "
        f"{configs}), which finished on {snap['date']} (UTC). {model}. "
        f"Machine: {machine_text(snap['machine'], snap['note'])}. "
        f"Settings, as the result files record them: {settings_text(snap['settings'])}."
    )
    lines = [
        begin_marker(run),
        f"## The `{run}` run ({configs}), {snap['date']}",
        "",
        *_wrap(head),
        "",
        "### Results",
        "",
        *(results_table(snap["rows"]) if snap["rows"] else ["results.csv holds no adapted cell with a headline."]),
        "",
        *_wrap(
            "tokens / held-out sentence: the perplexity step's held-out sentences under each model's tokenizer. "
            "Paired speed-up: teacher-forced decoding of the same reference text, Source timed in the same job, "
            "[worst–best] over the repeats; bound: Source tokens ÷ the model's tokens of that text. bits / character: "
            "held-out negative log-likelihood per character, comparable across vocabularies."
        ),
        "",
        *_findings_lines(run, snap.get("findings")),
        "### Cost",
        "",
        *cost_table(snap["costs"]),
        "",
        *_wrap(
            f"{total}Job times are summed over jobs (`benchmarks/<rule>/*.tsv`); jobs that ran side by side overlap, "
            "so the sum exceeds the run's wall time."
        ),
        *_timings_lines(snap.get("timings", [])),
        end_marker(run),
    ]
    return "\n".join(lines) + "\n"


def _findings_lines(run: str, glance: list[str] | None) -> list[str]:
    """The findings page's generated opening bullets, quoted under a heading of their own, each wrapped at the page's
    width (nothing without the page)."""
    if not glance:
        return []
    page = paths.findings_dir(f"results/{run}")
    bullets = [
        line
        for item in glance
        for line in textwrap.wrap(item, WIDTH, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    ]
    return ["### Findings", "", f"As `{page}/findings.md` opens, generated from these results:", "", *bullets, ""]


def _timings_lines(rows: list[str]) -> list[str]:
    """The table of every timed run of this configuration, oldest first (nothing when none was timed)."""
    if not rows:
        return []
    note = (
        "Each row: one whole run from an empty run folder, timed by its caller (`--wall-time`); the job sums are "
        "that run's benchmark files. The cost table above is the newest run's."
    )
    return ["", TIMINGS_HEADING, "", *TIMINGS_HEAD, *rows, "", *_wrap(note)]


def timing_row(snap: dict) -> str:
    """This run's row of the "Timed runs" table (needs the run's wall time)."""
    costs = snap["costs"]
    jobs, summed = sum(c["jobs"] for c in costs), sum(c["s"] for c in costs)
    heaviest = ", ".join(f"`{c['rule']}` {c['s']:.0f} s ({_count(c['jobs'], 'job')})" for c in costs[:2])
    note = (snap["note"] or MISSING).replace("|", "/")
    cells = [snap["finished"], duration(snap["wall_time"]), str(jobs), f"{summed:.0f} s", heaviest or MISSING, note]
    return "| " + " | ".join(cells) + " |"


def previous_timings(text: str, run: str) -> list[str]:
    """The "Timed runs" rows of ``run``'s section in ``text`` as written before (none without the section)."""
    span = section_span(text, run)
    if span is None:
        return []
    section = text[span[0] : span[1]].split(TIMINGS_HEADING, 1)
    if len(section) < 2:
        return []
    rows = [line for line in section[1].splitlines() if line.startswith("| ")]
    return [r for r in rows if r not in TIMINGS_HEAD]


def merge_timings(rows: list[str], new: str | None) -> list[str]:
    """``rows`` with ``new`` added (replacing a row of the same finishing time), ordered by finishing time."""
    by_finish = {_finish_cell(r): r for r in rows}
    if new is not None:
        by_finish[_finish_cell(new)] = new
    return [by_finish[k] for k in sorted(by_finish)]


def _finish_cell(row: str) -> str:
    return row.split("|")[1].strip()


def findings_glance(root: Path) -> list[str] | None:
    """The bullets under "At a glance" of the run's findings page, one item a string, or None without the page."""
    page = Path(paths.findings_dir(str(root))) / "findings.md"
    if not page.is_file():
        return None
    text = page.read_text(encoding="utf-8").split(FINDINGS_HEADING, 1)
    if len(text) < 2:
        return None
    items: list[str] = []
    for line in text[1].split("\n## ", 1)[0].splitlines():
        if line.startswith("- "):
            items.append(line.strip())
        elif line.strip() and items:
            items[-1] += " " + line.strip()
    return items or None


def replace_section(text: str, run: str, section: str) -> str:
    """``text`` with ``run``'s marked section replaced by ``section`` (appended when absent); nothing else moves."""
    span = section_span(text, run)
    if span is None:
        return text.rstrip("\n") + "\n\n" + section
    start, stop = span
    return text[:start] + section + text[stop:].removeprefix("\n")


def section_span(text: str, run: str) -> tuple[int, int] | None:
    """Where ``run``'s section lies in ``text``, its markers included (None when absent); refuses an unpaired marker."""
    begin, end = begin_marker(run), end_marker(run)
    start = text.find(begin)
    if start < 0:
        if end in text:
            raise ValueError(f"{end} without {begin}: restore the pair of markers, or remove both")
        return None
    stop = text.find(end, start)
    if stop < 0:
        raise ValueError(f"{begin} without {end}: restore the pair of markers, or remove both")
    return start, stop + len(end)


def parse_finished(text: str) -> dt.datetime:
    """``--finished``'s ``YYYY-MM-DD HH:MM`` (UTC)."""
    try:
        return dt.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M").replace(tzinfo=dt.UTC)
    except ValueError:
        raise ValueError(f"--finished {text!r}: give the UTC time as YYYY-MM-DD HH:MM, e.g. 2026-12-04 15:34") from None


def snapshot(
    root: Path,
    *,
    wall_time: float | None,
    note: str | None,
    cpu_model: str | None,
    date: str | None,
    finished: dt.datetime | None = None,
) -> dict:
    """Everything the section shows, read from the run folder ``root``; ``finished`` overrides the time of the run's
    newest file."""
    frame = pd.read_csv(paths.table("results.csv", str(root)))
    marker = root / MARKER
    finished = finished or run_finished(root)
    return {
        "configfiles": _json(marker).get("configfiles", []) if marker.is_file() else [],
        "rows": result_rows(frame) if not frame.empty else [],
        "costs": cost_rows(read_benchmarks(root)),
        "machine": machine(root, cpu_model),
        "settings": settings(root),
        "date": date or finished.date().isoformat(),
        "finished": finished.strftime("%Y-%m-%d %H:%M"),
        "wall_time": wall_time,
        "note": note,
        "findings": findings_glance(root),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tools.snapshot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--configfile", nargs="+", default=["config.yaml"], help="the config file(s) of the run")
    p.add_argument("--run", help="the run folder's name (default: the run of --configfile)")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results folder (default: results)")
    p.add_argument("--doc", type=Path, default=DOC, help=f"the page to write into (default: {DOC})")
    p.add_argument("--wall-time", help="the whole run's wall time: seconds, or as `time` prints it (8m12.3s)")
    p.add_argument("--note", help='the machine\'s load while it ran, e.g. "loaded machine: 3 other jobs"')
    p.add_argument("--cpu-model", default="auto", help="the CPU model (default: /proc/cpuinfo, if the run ran here)")
    p.add_argument("--date", help="the run's date, YYYY-MM-DD (default: the day it finished)")
    p.add_argument(
        "--finished",
        help="when the run finished, UTC, YYYY-MM-DD HH:MM (default: its newest results or "
        "benchmark file's time; give it when the run's last jobs were run again later)",
    )
    a = p.parse_args(argv)
    run = run_of_configfiles(a.configfile, a.run)
    root = a.results / run
    if not Path(paths.table("results.csv", str(root))).is_file():
        p.error(
            f"{root}/tables/results.csv does not exist: finish the run first (snakemake --configfile ...), "
            "or name another run (--run)"
        )
    try:
        wall = parse_wall_time(a.wall_time) if a.wall_time else None
        finished = parse_finished(a.finished) if a.finished else None
    except ValueError as e:
        p.error(str(e))
    snap = snapshot(root, wall_time=wall, note=a.note, cpu_model=a.cpu_model, date=a.date, finished=finished)
    text = a.doc.read_text(encoding="utf-8") if a.doc.is_file() else ""
    snap["timings"] = merge_timings(previous_timings(text, run), timing_row(snap) if wall is not None else None)
    write_text(a.doc, replace_section(text, run, render(run, root, snap)))
    print(f"{a.doc}: section {run!r} written from {root}/ ({len(snap['rows'])} rows, {len(snap['costs'])} rules)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
