"""The pages of a default-style run (SmolLM2 on Thai and Sinhala; Source, CPT-only, Mean; mt, ppl, paired speed), built
from hand-made result files by the rules' own commands (tables, paper tables, findings): plain names only, no empty
table or figure, one tokens per held-out sentence everywhere, and what the numbers say about quality and the bound
written on the page."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from workflow_scripts import tables
from workflow_scripts.paper import figures, headline

LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"
CELLS = {
    "Source": {"method": "Source", "label": "Source", "procedure": "none"},
    "CPT-only": {
        "method": "CPT-only.2x2LS.clm.L128",
        "label": "CPT-only",
        "procedure": "2x2LS",
        "objective": "clm",
        "seq_len": 128,
    },
    "Mean": {
        "method": "Mean.k100.2x2LS.clm.L128",
        "label": "Mean",
        "init": "Mean",
        "procedure": "2x2LS",
        "objective": "clm",
        "seq_len": 128,
        "k": 100,
        "aux_vocab_size": 4000,
        "vocab": "expand",
    },
}
# per language and cell: tokens per held-out sentence, bits per character, chrF, source tokens of the references
NUMBERS = {
    "th": {"Source": (74.9, 3.21, 5.2), "CPT-only": (74.9, 3.05, 5.9), "Mean": (35.5, 4.10, 3.1)},
    "si": {"Source": (97.5, 6.47, 4.5), "CPT-only": (97.5, 5.90, 4.8), "Mean": (29.7, 6.80, 2.0)},
}
# the paired teacher-forced speed-up of Mean [worst, median, best] and its bound
PAIRED = {"th": ((2.0, 2.38, 2.5), 2.14), "si": ((3.6, 3.74, 3.9), 3.54)}
TF = {"mode": "teacher_forced", "decoding": "greedy", "batch_size": 1}
GEN = {"mode": "generate", "decoding": "greedy", "batch_size": 1}
STEPS = 16


def _cell(name: str, lang: str) -> dict:
    base = dict.fromkeys(tables.CELL_COLUMNS)
    return {**base, "model": "smollm2", "language": lang, "posthoc": "none", **CELLS[name]}


def _write(path: Path, cell: dict, records: list[dict], **details) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cell": cell, "records": records, "details": {"data_label": LABEL, **details}}))
    return path


def _speed(name: str, lang: str) -> list[dict]:
    rate = 10.0 if name == "Source" else 6.0  # unpaired generation: noise between jobs
    records = [
        {"task": "mt", "metric": m, "value": rate, "min": rate * 0.8, "max": rate * 1.2, **GEN}
        for m in ("chars_per_second", "source_tokens_per_second", "tokens_per_second")
    ]
    if name == "Mean":
        (low, value, high), bound = PAIRED[lang]
        records += [
            {"task": "mt", "metric": "paired_speedup", "value": value, "min": low, "max": high, **TF},
            {"task": "mt", "metric": "token_ratio_bound", "value": bound, **TF},
        ]
    return records


def _sentences(bpc: float) -> dict:
    """The ppl step's per-sentence NLL (nats) and characters of 50 held-out sentences, ``bpc`` bits per character in
    all, ± ``bpc`` nats alternating from sentence to sentence (cells differ sentence by sentence)."""
    chars = [20 + i % 7 for i in range(50)]
    return {"nll_nats": [bpc * math.log(2) * c + bpc * (-1) ** i for i, c in enumerate(chars)], "chars": chars}


@pytest.fixture(scope="module")
def drawn():
    """Every figure drawn (kept open: the tests read their texts and bars), and still written."""
    kept, save = [], figures.save
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures, "save", lambda fig, stem: kept.append(fig) or save(fig, stem))
        yield kept


@pytest.fixture(scope="module")
def run(tmp_path_factory, drawn):
    """results/default of a default-style run: result files, loss curves, fragmentation; then rule tables' and rule
    paper_tables' commands, and the findings command (built once: the tests only read the pages and figures)."""
    root = tmp_path_factory.mktemp("paper_default") / "results" / "default"
    paths, losses = [], []
    for lang, cells in NUMBERS.items():
        for name, (tokens, bpc, chrf) in cells.items():
            cell, folder = _cell(name, lang), root / "smollm2" / lang / CELLS[name]["method"]
            ppl = [
                {"task": "ppl", "metric": "tokens_per_sentence", "value": tokens},
                {"task": "ppl", "metric": "bits_per_char", "value": bpc},
                {"task": "ppl", "metric": "perplexity", "value": 2**bpc},
            ]
            paths.append(_write(folder / "eval/ppl.json", cell, ppl, n=50, **_sentences(bpc)))
            paths.append(_write(folder / "eval/mt.json", cell, [{"task": "mt", "metric": "chrF", "value": chrf}]))
            paths.append(_write(folder / "eval/speed.json", cell, _speed(name, lang)))
            if name != "Source":
                losses.append(folder / "loss.tsv")
                rows = "".join(f"{s}\t{3 - s / 10}\n" for s in range(1, STEPS + 1))
                losses[-1].write_text("step\tloss\n" + rows)
    analysis = root / "analysis" / "fragmentation.csv"
    analysis.parent.mkdir(parents=True)
    rows = [
        "smollm2,en,64,3373,742,11.6,0.22,1.0",
        "smollm2,th,32,1506,2711,84.7,1.8,7.0",
        "smollm2,si,32,1482,3713,116.0,2.5,10.5",
    ]
    header = "tokenizer,language,sentences,characters,tokens,tokens_per_sentence,tokens_per_character,ratio_to_english"
    analysis.write_text(f"{header},texts\n" + "".join(f"{row},{LABEL}\n" for row in rows))
    for bench in (
        "lapt/smollm2.th.Mean.k100.2x2LS.clm.L128",
        "evaluate_cell/smollm2.si.Source",
        "initialize/smollm2.th.Mean.aux4000.k100",
        "prepare_source_model/smollm2",
    ):
        (root / "benchmarks" / f"{bench}.tsv").parent.mkdir(parents=True, exist_ok=True)
        (root / "benchmarks" / f"{bench}.tsv").write_text("s\th:m:s\tcpu_time\n60.0\t0:01:00\t50.0\n")
    out = root / "tables"
    tables.main(
        [
            "--inputs",
            *map(str, paths),
            "--losses",
            *map(str, losses),
            "--csv",
            str(out / "results.csv"),
            "--markdown",
            str(out / "results.md"),
            "--figure",
            str(out / "results.png"),
            "--html",
            str(out / "results.html"),
        ]
    )
    _paper(root)
    _findings(root)
    return root


def _findings(root: Path) -> Path:
    from workflow_scripts.findings.__main__ import main

    main(["--results", str(root / "tables/results.csv"), "--out", str(root / "findings")])
    return root / "findings"


def _paper(root: Path) -> Path:
    from workflow_scripts.paper.__main__ import main

    main(["--results", str(root / "tables/results.csv"), "--out", str(root / "paper"), "--size", "smollm2=135M"])
    return root / "paper"


# What a reader must never see: configuration keys, method slugs, metric fields, speed variants, rule names.
RAW = [
    r"smollm2",
    r"\bth\b(?! bound)",
    r"\bsi\b",
    r"Mean\.k100",
    r"CPT-only\.2x2LS",
    r"2x2LS",
    r"teacher_forced",
    r"\.b1\b",
    r"@",
    r"paired_speedup",
    r"tokens_per_sentence",
    r"bits_per_char",
    r"\bppl\b",
    r"mt chrF",
    r"\brule\b",
    r"evaluate_\w+",
    r"measure_speed",
    r"expand_tokenizer",
    r"No data yet",
    r"per method: bars",
    r"↑ \(green\)",
    r"\|V_new\| per method",
    r"rougeL",
    r"speedup",
    r"\w+_\w+\.json",
]


def _texts(fig) -> list[str]:
    found = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return [t for t in found if t]


def test_no_raw_name_and_no_empty_output(run, drawn):
    paper, findings = run / "paper", run / "findings"
    pages = {
        p.name: p.read_text(encoding="utf-8")
        for p in [*paper.iterdir(), *(run / "tables").iterdir(), *findings.iterdir()]
        if p.suffix in (".md", ".html", ".tex", ".csv") and p.name != "results.csv"
    }
    assert {"findings.md", "findings.html"} <= set(pages) and "Not in this run: learning curves" in pages["findings.md"]
    # the words a reader sees: HTML without its style, tags and embedded images
    pages = {name: re.sub(r"<style>.*?</style>|<[^>]+>", " ", text, flags=re.S) for name, text in pages.items()}
    texts = {f"figure {i}": "\n".join(_texts(fig)) for i, fig in enumerate(drawn)}
    hits = [(name, pattern) for name, text in {**pages, **texts}.items() for pattern in RAW if re.search(pattern, text)]
    assert not hits, hits
    # what the default cannot fill is not written: no all-"–" table, no figure without data, one list instead
    written = sorted(p.name for p in paper.iterdir())
    assert "figure5.png" not in written and "table3.md" not in written and "table_mumo.md" not in written
    assert {"table1.md", "table2.md", "table4a.md", "figure2.png", "figure3.png", "loss_curves.png"} <= set(written)
    for name, text in pages.items():
        if name.startswith("table") and name.endswith(".csv"):
            values = [row.split(",")[4:] for row in text.splitlines()[1:]]
            assert any(v not in ("–", "") for row in values for v in row), name
    index = (paper / "tables.md").read_text(encoding="utf-8")
    assert "## Not run by this configuration" in index and "Table 3: Mean performance on classification" in index
    assert "Figure 5" in index and "Table 1, left out: rows: Random, FOCUS, Merge, Align" in index
    assert "Not run by this configuration: summarization" in pages["results.md"]
    assert (
        "| SmolLM2-135M | Thai | Mean, 100 new tokens, 2x2 LS, clm, sequence length 128 | training |"
        in pages["costs.md"]
    )


def test_one_tokens_per_held_out_sentence_everywhere(run, drawn):
    md = (run / "tables/results.md").read_text(encoding="utf-8")
    assert "| SmolLM2-135M | Thai | Mean | 74.9 → 35.5 |" in md and "the first 50 held-out sentences" in md
    lead, figure2 = drawn[0], next(f for f in drawn if "Figure 2" in f._suptitle.get_text())
    expected = {74.9, 35.5, 97.5, 29.7}  # CPT-only keeps Source's tokenizer: its bars repeat Source's
    assert {round(p.get_height(), 1) for p in lead.axes[0].patches} == expected
    held = figure2.axes[1]
    assert sorted(round(p.get_height(), 1) for p in held.patches) == sorted(expected)
    assert "first 50 held-out sentences" in held.get_title() and "first 50" in lead.axes[0].get_title()


def test_the_page_says_whether_quality_is_held_and_why_a_speed_up_passes_its_bound(run):
    md = (run / "tables/results.md").read_text(encoding="utf-8")
    # better or worse only where the paired bootstrap interval of the difference excludes zero
    assert re.search(
        r"- Mean ends 0\.89 bits per character above Source on Thai \(3\.210 → 4\.100\) after 16 "
        r"training steps: worse \(95% interval \[\+0\.8\d\d, \+0\.9\d\d\]\), quality is not held\.",
        md,
    )
    assert re.search(
        r"- CPT-only ends 0\.16 bits per character below Source on Thai .*: better \(95% interval "
        r"\[-0\.1\d\d, -0\.1\d\d\]\), quality is held\.",
        md,
    )
    # si: every repeat above the bound; th: its worst repeat under it
    assert "Mean on Sinhala: 3.74x against a bound of 3.54x: every repeat above it" in md
    assert "Mean on Thai: 2.38x against a bound of 2.14x; its worst repeat (2.00x) lies under the bound" in md
    # the unpaired generation speed-ups are apart and labelled
    speed = md[md.index("## Speed") :]
    assert "unpaired speed-up (characters)" in speed and "generation, greedy, batch 1" in speed
    assert "unpaired" not in md[: md.index("## Speed")].replace("the unpaired", "")


def test_figures_fit_chrf_to_its_data_and_count_steps_in_whole_numbers(run, drawn):
    fig3 = next(f for f in drawn if "Figure 3" in f._suptitle.get_text())
    chrf = next(ax for ax in fig3.axes if "chrF" in ax.get_ylabel())
    assert chrf.get_ylim()[1] < 10 and "fitted to the data" in chrf.get_ylabel()
    speed = next(ax for ax in fig3.axes if "paired speed-up" in ax.get_ylabel())
    assert any(line.get_label().startswith("bound") for line in speed.lines)  # the paired figure with its bound
    loss = next(f for f in drawn if "Training loss" in f._suptitle.get_text())
    ticks = [t for t in loss.axes[0].get_xticks() if loss.axes[0].get_xlim()[0] <= t <= loss.axes[0].get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    table4a = (run / "paper/table4a.md").read_text(encoding="utf-8")
    assert "3.74x" in table4a and "0.95x" not in table4a  # paired, not the unpaired 6 / 10 = 0.60x rate ratio
    assert "0.60x" in (run / "paper/table4c.md").read_text(encoding="utf-8")  # unpaired: apart, labelled


def test_bound_lines_follow_the_numbers():
    row = {"name": "Mean", "language": "si", "paired": (3.74, 3.6, 3.9), "bound": 3.54}
    (line,) = headline.bound_lines([row])[2:-1]
    assert "every repeat above it" in line and "6 % longer" in line
    assert headline.bound_lines([{**row, "paired": (3.4, 3.2, 3.6)}]) == []  # under its bound: nothing to explain
