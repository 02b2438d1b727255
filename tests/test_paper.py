"""The paper's tables from a results CSV: cells in the right place, "–" and footnotes where missing, mean ± sd over
runs, best / second-best and better-than-Source marks, the paper's own Table 2 reproduced cell for cell, the costs."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts import tables
from workflow_scripts.paper import costs, render
from workflow_scripts.paper.cells import MISSING, NOT_APPLICABLE, fill, fmt_value, stand_ins, trim
from workflow_scripts.paper.names import language_name
from workflow_scripts.paper.specs import LANGUAGES, TABLES_BY_NAME, output_names

LORA = {"procedure": "LoRA", "objective": "clm", "seq_len": 2048}
PAIRED_TF = "paired_speedup@teacher_forced.greedy.b1"
REC = {"procedure": "2x2LS", "objective": "mtp", "seq_len": 512}


def rec(
    label,
    lang,
    task,
    metric,
    value,
    *,
    model="llama2",
    k=100,
    seed=None,
    run=None,
    method=None,
    vocab="expand",
    posthoc="none",
    spread=None,
    **settings,
):
    """One results.csv row with every method field; the slug is spelled as the grid does, but the tables read the
    fields. ``spread``: the row's (min, max), as a speed measurement's repeats give it."""
    expands = label not in ("Source", "CPT-only")
    trains = label != "Source"
    s = {**LORA, **settings} if trains else {}
    if method is None:
        parts = [label] + ([f"k{k}" if vocab == "expand" else "replace"] if expands else [])
        parts += [s["procedure"], s["objective"], f"L{s['seq_len']}"] if trains else []
        parts += [posthoc] if posthoc != "none" else []
        method = ".".join(parts) if label != "Source" else "Source"
    low, high = spread or (None, None)
    return {
        "model": model,
        "language": lang,
        "method": method,
        "label": label,
        "init": label if expands else None,
        "vocab": vocab if expands else None,
        "posthoc": posthoc,
        "procedure": s.get("procedure"),
        "objective": s.get("objective"),
        "seq_len": s.get("seq_len"),
        "k": (k if vocab == "expand" else None) if expands else None,
        "aux_vocab_size": 50000 if expands else None,
        "task": task,
        "metric": metric,
        "value": value,
        "seed": seed,
        "run": run,
        "min": low,
        "max": high,
    }


def frame(*rows):
    return pd.DataFrame(list(rows))


def test_cell_in_place_missing_and_footnote():
    f = frame(
        rec("Source", "th", "mt", "chrF", 10.0, seed=1),
        rec("Source", "th", "mt", "chrF", 12.0, seed=2),
        rec("Mean", "th", "mt", "chrF", 15.0, seed=1),
        rec("Mean", "th", "mt", "chrF", 16.0, seed=2),
        rec("Mean", "si", "mt", "chrF", 4.0),
    )
    filled = fill(TABLES_BY_NAME["table1"], f)
    # chrF on its 0-100 scale, as results.md shows it; two seeds give mean ± sample sd (sqrt 2 = 1.41)
    assert filled.cell("llama2", "Source", "th", "mt").text == "11.0 ± 1.4"
    mean_th = filled.cell("llama2", "Mean", "th", "mt")
    assert (mean_th.text, mean_th.better) == ("15.5 ± 0.7", True)  # 14.8-16.2 lies apart from 9.6-12.4
    assert filled.cell("llama2", "Mean", "si", "mt").better is False  # no Source for si: nothing to compare
    assert filled.cell("llama2", "Mean", "ar", "mt").text == MISSING
    assert filled.cell("llama2", "Mean", "th", "sum").text == MISSING
    csv_rows = render.plain_rows(filled)
    header, mean_row = csv_rows[0], next(r for r in csv_rows if r[3] == "Mean")
    assert mean_row[header.index("Thai mt")] == "15.5 ± 0.7" and mean_row[header.index("Sinhala mt")] == "4.0"
    # trimmed to what the results fill: Thai and Sinhala, the mt column, the rows with a value; the rest listed
    kept, left = trim(filled)
    assert kept.spec.languages == ("si", "th") and [c.header for c in kept.spec.columns] == ["mt"]
    assert [row.label for row, _ in kept.blocks[0].rows] == ["Source", "Mean"]
    others = "languages: Arabic, Burmese, German, Greek, Hindi, Japanese, Swahili, Telugu"
    assert left == ["rows: CPT-only, Random, FOCUS, Merge, Align", others, "columns: sum"]
    notes = "\n".join(kept.notes)
    assert "Source, translation chrF: no result for Sinhala" in notes  # a "–" beside filled entries, in words
    md = render.markdown(kept)
    assert "| 15.5 ± 0.7 ↑ |" in md  # the Markdown marker for better than Source
    assert "outside the measured spread" in md  # the legend says when a mark is given
    assert r"\cellcolor{green!15}15.5" in render.latex(filled)
    html = render.to_html(filled)
    assert 'class="better"><b>' not in html and 'class="better">15.5' in html


def test_no_mark_within_the_spread_or_without_one():
    f = frame(
        rec("Source", "th", "mt", "chrF", 10.0, seed=1),
        rec("Source", "th", "mt", "chrF", 14.0, seed=2),  # 12.0 ± 2.8
        rec("Mean", "th", "mt", "chrF", 13.0, seed=1),
        rec("Mean", "th", "mt", "chrF", 14.0, seed=2),  # 13.5 ± 0.7: higher, but inside Source's spread
        rec("Align", "th", "mt", "chrF", 30.0),  # one run, no spread measured: never marked
    )
    filled = fill(TABLES_BY_NAME["table1"], f)
    assert filled.cell("llama2", "Mean", "th", "mt").better is False
    assert filled.cell("llama2", "Align", "th", "mt").better is False
    # a speed-up of 1.02x [0.98-1.06] is not the best over 1.00x [0.95-1.05]: the repeats overlap
    g = frame(
        rec("Mean", "th", "mt", PAIRED_TF, 1.02, spread=(0.98, 1.06), **REC),
        rec("Align", "th", "mt", PAIRED_TF, 1.00, spread=(0.95, 1.05), **REC),
        rec("Random", "th", "mt", PAIRED_TF, 0.50, spread=(0.45, 0.55), **REC),
    )
    t4 = fill(TABLES_BY_NAME["table4a"], g)
    assert t4.cell("llama2", "Mean", "th", "mt speed-up").rank == 0
    assert t4.cell("llama2", "Align", "th", "mt speed-up").rank == 0  # second, but not apart from Mean
    assert t4.cell("llama2", "Random", "th", "mt speed-up").text == "0.50x"
    assert "**" not in render.markdown(t4) and "<u>" not in render.markdown(t4)


def test_mean_and_sd_over_the_run_column():
    runs = [rec("Align", "my", "mt", "chrF", v, run=i, seed=42) for i, v in enumerate([10, 11, 12, 13, 14])]
    cell = fill(TABLES_BY_NAME["table1"], frame(*runs)).cell("llama2", "Align", "my", "mt")
    assert (cell.n, cell.mean, cell.text) == (5, 12.0, "12.0 ± 1.6")  # sd of 10..14 = 1.58


def test_a_methods_training_seeds_fill_one_entry_with_their_mean_and_sd():
    """results.csv keeps each training seed's cell apart (``train_seed``, the slug's ``.s<seed>``); a paper table
    shows the method once, over its seeds."""
    slug = "Align.k100.LoRA.clm.L2048"
    seeds = [
        {**rec("Align", "my", "mt", "chrF", v, method=slug + suffix), "train_seed": seed}
        for v, suffix, seed in [(10.0, "", 42), (12.0, ".s43", 43), (14.0, ".s44", 44)]
    ]
    source = {**rec("Source", "my", "mt", "chrF", 9.0), "train_seed": None}
    filled = fill(TABLES_BY_NAME["table1"], frame(source, *seeds))
    cell = filled.cell("llama2", "Align", "my", "mt")
    assert (cell.n, cell.mean, cell.text, cell.method) == (3, 12.0, "12.0 ± 2.0", slug)
    assert filled.cell("llama2", "Source", "my", "mt").text == "9.0"


def test_best_and_second_among_adapted_rows_only():
    values = {"Source": 5.0, "CPT-only": 4.0, "Random": 10.0, "FOCUS": 12.0, "Mean": 9.0, "Merge": 9.0, "Align": 9.5}
    f = frame(*(rec(label, "ar", "ppl", "perplexity", v, spread=(v - 0.1, v + 0.1)) for label, v in values.items()))
    filled = fill(TABLES_BY_NAME["table2"], f)
    ranks = {label: filled.cell("llama2", label, "ar", "ppl").rank for label in values}
    # lowest perplexity wins; ties share the rank; Source and CPT-only (gray, same vocabulary) never rank
    assert ranks == {"Source": 0, "CPT-only": 0, "Random": 0, "FOCUS": 0, "Mean": 1, "Merge": 1, "Align": 2}
    md = render.markdown(filled)
    assert "| *Source* | 5.0 |" in md and "| Mean | **9.0** |" in md and "| Align | <u>9.5</u> |" in md
    assert r"\textbf{9.0}" in render.latex(filled) and r"\underline{9.5}" in render.latex(filled)
    assert not any(c.better for b in filled.blocks for _, cells in b.rows for c in cells)  # ppl: no Source marks


def test_the_papers_recipe_wins_and_a_lone_other_setting_is_footnoted():
    f = frame(
        rec("Mean", "th", "mt", "chrF", 20.0),  # LoRA + clm + 2048: the paper's Table 1 recipe
        rec("Mean", "th", "mt", "chrF", 30.0, **REC),
        rec("Mean", "si", "mt", "chrF", 40.0, **REC),  # the only Mean for si
        rec("Mean", "my", "mt", "chrF", 50.0, procedure="2x2LS", objective="clm", seq_len=128),
        rec("Mean", "my", "mt", "chrF", 60.0, **REC),  # two cells, neither the recipe: ambiguous
    )
    filled = fill(TABLES_BY_NAME["table1"], f)
    assert filled.cell("llama2", "Mean", "th", "mt").text == "20.0"
    assert filled.cell("llama2", "Mean", "si", "mt").text == "40.0"
    assert filled.cell("llama2", "Mean", "my", "mt").text == MISSING
    notes = "\n".join(filled.notes)
    assert (
        "Mean on Sinhala: trained with 2x2 LS, mtp, sequence length 512, 100 new tokens (the paper's: LoRA, clm, "
        "sequence length 2048, 100 new tokens)" in notes
    )
    assert (
        "Mean on Burmese: left empty: several cells (2x2 LS, clm, sequence length 128, 100 new tokens; 2x2 LS, mtp, "
        "sequence length 512, 100 new tokens) and none has the paper's settings" in notes
    )


def test_strategy_rows_select_procedure_objective_and_length():
    f = frame(
        rec("Align", "ar", "mt", "chrF", 11.0, procedure="2-stage", objective="mtp", seq_len=512),
        rec("Align", "ar", "mt", "chrF", 17.0, procedure="2x2LS", objective="mtp", seq_len=512),
    )
    filled = fill(TABLES_BY_NAME["table5"], f)
    block = filled.blocks[0]
    rows = [(row.select.get("procedure"), cells[0].text) for row, cells in block.rows if row.label == "mtp+512"]
    assert rows == [("LoRA", MISSING), ("2-stage", "11.0"), ("2x2LS", "17.0")]


def test_speedup_rows_blocks_and_not_applicable():
    f = frame(
        rec("Source", "my", "mt", "tokens_per_second", 20.0, model="llama3"),
        rec("Align", "my", "mt", "tokens_per_second", 50.0, model="llama3", **REC),  # unpaired: not the Speedup row
        rec("Align", "my", "mt", PAIRED_TF, 2.25, model="llama3", **REC),
        rec("Align", "my", "mt", "chrF", 21.0, model="llama3", **REC),
        rec("Align", "si", "mc", "acc", 0.30, model="gemma2", **REC),
    )
    f = tables.add_derived(f.drop(columns="run"))  # the speed-up rows rule tables adds
    filled = fill(TABLES_BY_NAME["table6"], f)
    assert [b.model for b in filled.blocks] == ["llama3", "gemma2"]
    assert filled.cell("llama3", "Speedup", "my", "mt").text == "2.25x"
    assert filled.cell("llama3", "Align", "my", "mt").text == "21.0"
    assert filled.cell("gemma2", "Align", "si", "mc").text == ".30"
    assert filled.cell("gemma2", "Align", "my", "gmmlu").text == NOT_APPLICABLE
    assert filled.cell("gemma2", "Align", "si", "gmmlu").text == MISSING


def test_posthoc_and_replacement_rows_come_from_the_method_fields():
    # slugs that say nothing: the rows are chosen by the cells' vocab and posthoc fields alone
    f = frame(
        rec("Align", "te", "mt", "chrF", 32.0, model="gemma2", method="a", **REC),
        rec("Align", "te", "mt", "chrF", 41.0, model="gemma2", method="b", posthoc="elchat", **REC),
        rec("Mean", "te", "mt", "chrF", 4.0, model="gemma2", method="c", vocab="replace", **REC),
    )
    t10 = fill(TABLES_BY_NAME["table10a"], f)
    assert t10.cell("gemma2", "Align", "te", "mt").text == "32.0"
    assert t10.cell("gemma2", "+ ElChat", "te", "mt").text == "41.0"
    t11 = fill(TABLES_BY_NAME["table11"], f)
    assert t11.cell("gemma2", "Mean", "te", "mt").text == "4.0"  # the replacement cell, not expansion's Align/Mean


def test_mumo_rows_sit_next_to_expansion_with_their_teacher_forced_speed_up():
    mumo = {"init": None, "procedure": "MuMo", "objective": None, "seq_len": None, "k": None, "aux_vocab_size": None}
    tf = "@teacher_forced.greedy.b1"
    f = frame(
        rec("Mean", "si", "mt", "chrF", 30.0, **REC),
        rec("Mean", "si", "mt", f"paired_speedup{tf}", 3.0, **REC),
        {**rec("Source", "si", "mt", "chrF", 0), **mumo, "label": "MuMo", "method": "MuMo", "value": 21.0},
        {
            **rec("Source", "si", "mt", "chrF", 0),
            **mumo,
            "label": "MuMo",
            "method": "MuMo",
            "metric": f"paired_speedup{tf}",
            "value": 1.5,
        },
        {
            **rec("Source", "si", "mt", "chrF", 0),
            **mumo,
            "label": "MuMo w/o verification",
            "method": "MuMo.noverify",
            "posthoc": "noverify",
            "value": 19.0,
        },
    )
    filled = fill(TABLES_BY_NAME["table_mumo"], f)
    assert filled.cell("llama2", "Mean", "si", "mt").text == "30.0"
    assert filled.cell("llama2", "MuMo", "si", "mt").text == "21.0"
    assert filled.cell("llama2", "MuMo", "si", "speed-up").text == "1.50x"
    assert filled.cell("llama2", "w/o verification", "si", "mt").text == "19.0"
    kept, left = trim(filled)
    notes = "\n".join(kept.notes)
    assert "MuMo: trained with" not in notes  # MuMo's own settings, not a stand-in
    assert "w/o verification, translation paired speed-up: no result for Sinhala" in notes  # a "–" beside values
    assert left == [
        "rows: Source, CPT-only, Align, Random-init",
        "languages: Burmese, Telugu, Thai",
        "columns: sum, ÷ bound",
    ]
    # without a MuMo row the table is not written: Mean, Source and CPT-only alone are Tables 1 and 4a
    assert trim(fill(TABLES_BY_NAME["table_mumo"], f[f["procedure"] != "MuMo"]))[0] is None


def test_stand_in_model():
    smol = frame(rec("Mean", "th", "mt", "chrF", 3.0, model="smollm2"))
    assert stand_ins(smol) == {"llama2": "smollm2"}
    assert stand_ins(frame(rec("Mean", "th", "mt", "chrF", 3.0))) == {}
    filled = fill(TABLES_BY_NAME["table1"], smol)
    assert filled.cell("llama2", "Mean", "th", "mt").text == "3.0"
    assert "SmolLM2-135M stands in for Llama2" in filled.notes[0]
    assert fill(TABLES_BY_NAME["table1"], smol, {}).cell("llama2", "Mean", "th", "mt").text == MISSING


# The paper's Table 2 (seeds/002, perplexity on held-out text, Llama2), as published.
PAPER_TABLE2 = """\
Model	ar	my	de	el	hi	ja	si	sw	te	th
Source	8.3	5.0	35.7	4.8	6.4	20.4	3.5	47.2	2.4	9.4
CPT-only	4.2	2.7	10.9	2.9	3.2	5.4	2.3	12.7	1.8	4.3
Random	11.9	11.9	12.0	7.1	8.3	15.0	8.7	13.9	7.1	8.8
FOCUS	11.5	13.8	12.1	6.6	8.9	14.8	9.3	13.7	7.9	9.4
Mean	9.4	11.6	11.7	6.0	6.4	14.7	8.1	13.5	6.9	7.8
Merge	9.8	12.6	11.8	6.1	6.7	15.1	8.7	13.7	7.3	8.0
Align	9.3	11.2	11.7	5.9	6.3	15.1	8.0	13.5	6.7	7.6
"""


def test_papers_table2_comes_out_cell_for_cell():
    lines = [line.split("\t") for line in PAPER_TABLE2.splitlines()]
    langs = lines[0][1:]
    assert tuple(langs) == LANGUAGES
    f = frame(
        *(
            # each published mean with a narrow measured spread (the paper's five runs), so that its marks show
            rec(row[0], lang, "ppl", "perplexity", float(v), spread=(float(v) - 0.01, float(v) + 0.01))
            for row in lines[1:]
            for lang, v in zip(langs, row[1:], strict=True)
        )
    )
    filled = fill(TABLES_BY_NAME["table2"], f)
    out = render.plain_rows(filled)
    assert [r[3:] for r in out] == [["row", *(language_name(lang) for lang in langs)], *lines[1:]]
    assert not [n for n in filled.notes if n.startswith(MISSING)]  # nothing missing, no footnote on what to run
    # The paper's bold / underline: Arabic best Align 9.3, second Mean 9.4; German Mean and Align tie at 11.7.
    assert (
        filled.cell("llama2", "Align", "ar", "ppl").rank == 1 and filled.cell("llama2", "Mean", "ar", "ppl").rank == 2
    )
    assert (
        filled.cell("llama2", "Mean", "de", "ppl").rank == 1 and filled.cell("llama2", "Align", "de", "ppl").rank == 1
    )
    assert filled.cell("llama2", "Merge", "de", "ppl").rank == 2


def test_fmt_value():
    assert fmt_value(8.0, "frac2", 0.01) == ".08"
    assert fmt_value(0.5, "frac2") == ".50"
    assert fmt_value(1.234, "{:.2f}x") == "1.23x"


def test_costs_per_cell(tmp_path):
    bench = tmp_path / "benchmarks"
    files = {
        "lapt/smollm2.th.Mean.k100.2x2LS.clm.L128.tsv": 90.0,
        "evaluate_mt/smollm2.th.Mean.k100.2x2LS.clm.L128.tsv": 18.0,
        "evaluate_mt/smollm2.th.Source.tsv": 36.0,
        "initialize/smollm2.th.Mean.aux4000.k100.tsv": 10.0,
        "prepare_source_model/smollm2.tsv": 30.0,
        "sample_orchid/th.tsv": 2.0,  # a data rule: its file names the language alone
    }
    for name, seconds in files.items():
        path = bench / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:00\t1.0\n", encoding="utf-8")
    table = costs.cost_table(costs.read_benchmarks(tmp_path), {"smollm2": "135M"}).set_index("method")
    mean = table.loc["Mean.k100.2x2LS.clm.L128"]
    assert mean["jobs"] == 2 and mean["wall_h"] == pytest.approx(108 / 3600) == mean["gpu_h"]
    assert mean["requested_h"] == pytest.approx((60 + 30) / 60)  # resources.py, 135M: lapt 60 min, evaluate_mt 30
    assert table.loc["(shared) initialize Mean.aux4000.k100", "gpu_h"] == 0  # not a GPU rule
    assert table.loc["(shared) source model", "model"] == "smollm2"
    orchid = table.loc["(shared) data: sample_orchid"]
    assert (orchid["model"], orchid["language"]) == ("", "th")
    assert "| **total** | | | | 6 |" in costs.markdown(table.reset_index())
    shown = costs.shown(table.reset_index()).set_index("method")
    assert shown.loc["(shared) data: ORCHID sample", "language"] == "Thai"


@pytest.mark.slow
def test_cli_on_a_csv_alone(tmp_path):
    from workflow_scripts.paper.__main__ import main

    csv = tmp_path / "tables" / "results.csv"
    csv.parent.mkdir()
    f = frame(
        rec("Source", "th", "mt", "chrF", 2.5, model="smollm2"), rec("Mean", "th", "mt", "chrF", 2.9, model="smollm2")
    )
    f.to_csv(csv, index=False)
    (csv.parent / "results.md").write_text(
        "# Results\n\n> Data: stand-in text. The embedded default's numbers are not comparable to the paper's.\n",
        encoding="utf-8",
    )
    main(["--results", str(csv), "--out", str(tmp_path / "paper")])
    written = sorted(p.name for p in (tmp_path / "paper").iterdir())
    # what mt chrF of Source and Mean on Thai fills: Table 1 and Figure 3
    assert set(written) < set(output_names())
    assert {"table1.md", "table1.tex", "table1.csv", "table1.html", "figure3.png", "tables.md"} <= set(written)
    assert not {"table_mumo.md", "table2.md", "figure5.png", "loss_curves.png"} & set(written)
    table1 = (tmp_path / "paper" / "table1.md").read_text(encoding="utf-8")
    assert "> Data: stand-in text." in table1 and "SmolLM2-135M stands in for Llama2" in table1
    assert "| Mean | " in table1 and "2.9" in table1 and "↑" not in table1  # one run each: no spread, no mark
    assert "Nothing is marked" in table1
    index = (tmp_path / "paper" / "tables.md").read_text(encoding="utf-8")
    assert "- MuMo beside vocabulary expansion (not in the paper): no result for any of its rows" in index
    assert "No benchmark files" in (tmp_path / "paper" / "costs.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_cli_on_a_csv_without_rows(tmp_path):
    from workflow_scripts.paper.__main__ import main

    csv = tmp_path / "results.csv"
    csv.write_text(",".join([*tables.COLUMNS]) + "\n", encoding="utf-8")
    main(["--results", str(csv), "--out", str(tmp_path / "paper"), "--stand-in", "none"])
    # nothing to show: no table and no figure, the index saying so, and the (empty) costs
    assert sorted(p.name for p in (tmp_path / "paper").iterdir()) == [
        "costs.csv",
        "costs.html",
        "costs.md",
        "tables.md",
    ]
    index = (tmp_path / "paper" / "tables.md").read_text(encoding="utf-8")
    assert (
        "- Table 2: Perplexity on the language-specific held-out set, Llama2 as source: no result for any of its rows"
        in index
    )


def test_every_table_and_figure_has_a_report_caption():
    """The report's one caption template (rule paper_tables' folder) says something for every file it can show."""
    from pathlib import Path
    from types import SimpleNamespace

    from jinja2 import Template

    from workflow_scripts.paper.specs import FIGURES, TABLES, report_category, report_labels, report_titles

    template = Template((Path(__file__).resolve().parents[1] / "report" / "paper.rst").read_text(encoding="utf-8"))
    for name in [t.name for t in TABLES] + list(FIGURES) + ["costs"]:
        wildcards = SimpleNamespace(name=name)
        snakemake = SimpleNamespace(wildcards=wildcards, params=SimpleNamespace(data="d", titles=report_titles()))
        caption = template.render(snakemake=snakemake)
        assert caption.startswith("**") and "Data: d." in caption, name
        assert report_category(wildcards) in ("Tables", "Figures", "Costs") and report_labels(wildcards)["no."]
    assert report_labels(SimpleNamespace(name="table2"))["no."] < report_labels(SimpleNamespace(name="table10a"))["no."]


@pytest.fixture
def drawn(monkeypatch):
    """The figures a figure function draws, kept open instead of written (their axes are what the tests read)."""
    from workflow_scripts.paper import figures

    kept = []
    monkeypatch.setattr(figures, "save", lambda fig, stem: kept.append(fig) or [])
    return kept


def test_one_point_per_method_is_a_bar_chart_from_zero_and_a_task_without_results_gets_no_panel(drawn):
    from workflow_scripts.paper import figures

    f = frame(
        rec("Source", "th", "mc", "acc", 0.25),
        rec("Mean", "th", "mc", "acc", 0.26, k=50, **REC),
        rec("Mean", "th", "mc", "speedup_chars", 0.9, k=50, **REC),  # unpaired: not shown
        rec("Mean", "th", "mc", "paired_speedup@loglikelihood.choices.b1", 1.4, k=50, **REC),
    )
    figures.figure_vnew(f, "unused", figures.FIGURE5_TASKS, "Figure 5", ["mc proxy: test"])
    (fig,) = drawn
    axes = [ax for ax in fig.axes if ax.axison]
    assert len(axes) == 2  # mc and its paired speed-up: gmmlu has no result anywhere, so no empty gmmlu panels
    acc, speed = axes
    assert len(acc.patches) == 2 and not acc.lines  # bars, not a line through one point
    assert acc.get_ylim() == (0.0, 1.0)  # accuracy on its whole scale: 0.25 vs 0.26 is not magnified
    assert acc.get_xscale() == "linear"
    assert "Mean\n|V_new| = 50" in [t.get_text() for t in acc.get_xticklabels()]
    assert [round(p.get_height(), 2) for p in speed.patches] == [1.4] and "paired" in speed.get_ylabel()
    assert not figures.figure_vnew(f[f["metric"] != "acc"].iloc[0:0], "unused", figures.FIGURE5_TASKS, "Figure 5")


def test_a_sweep_is_drawn_as_lines(drawn):
    from workflow_scripts.paper import figures

    f = frame(*(rec("Mean", "th", "mt", "chrF", 10.0 + k / 100, k=k, **REC) for k in (50, 100, 500)))
    figures.figure_vnew(f, "unused", [("mt", "chrF")], "Figure 3")
    ax = drawn[0].axes[0]
    assert ax.get_xscale() == "log" and len(ax.lines[0].get_xdata()) == 3 and ax.get_ylim()[0] == 0


def test_figure2_puts_the_expanded_tokenizer_next_to_the_source_one(drawn):
    from workflow_scripts.paper import figures

    frag = pd.DataFrame(
        {
            "tokenizer": ["tiny", "tiny"],
            "language": ["en", "th"],
            "tokens_per_sentence": [12.5, 90.0],
            "ratio_to_english": [1.0, 7.2],
        }
    )
    # the held-out numbers are the perplexity step's, as results.md shows them (not the expansion report's)
    f = frame(
        rec("Source", "th", "ppl", "tokens_per_sentence", 77.0, model="tiny"),
        rec("Source", "th", "ppl", "sentences", 50, model="tiny"),
        rec("Mean", "th", "ppl", "tokens_per_sentence", 42.5, model="tiny", k=50),
        rec("CPT-only", "th", "ppl", "tokens_per_sentence", 77.0, model="tiny"),
    )
    figures.figure2(frag, f, "unused")
    left, right = drawn[0].axes
    assert [round(p.get_height(), 1) for p in left.patches] == [7.2]  # against English: not tokens per sentence
    assert sorted(round(p.get_height(), 1) for p in right.patches) == [42.5, 77.0]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["Source's tokenizer", "expanded, |V_new| = 50"]
    assert "first 50 held-out sentences" in right.get_title() and right.get_xticklabels()[0].get_text() == "Thai"


def test_loss_curves_name_methods_and_say_the_losses_are_per_own_token(drawn):
    from workflow_scripts.paper import figures

    losses = pd.DataFrame(
        {
            "step": [1, 2, 1, 2],
            "loss": [3.0, 2.0, 4.0, 3.0],
            "model": "tiny",
            "language": "th",
            "method": ["Mean.k50.2x2LS.clm.L64"] * 2 + ["CPT-only.2x2LS.clm.L64"] * 2,
        }
    )
    names = {"Mean.k50.2x2LS.clm.L64": "Mean", "CPT-only.2x2LS.clm.L64": "CPT-only"}
    figures.loss_curves(losses, "unused", names, ["stand-in text"])
    fig = drawn[0]
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["CPT-only", "Mean"]  # no slugs
    assert "own vocabulary" in ax.get_ylabel() and "not comparable" in fig._suptitle.get_text()
    # the data line sits under the axes and their label, not on them
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    footer = fig.texts[-1].get_window_extent(renderer)
    assert footer.y1 < ax.xaxis.label.get_window_extent(renderer).y0


def test_costs_of_a_cpu_run_report_no_gpu_hours(tmp_path):
    import json

    bench = tmp_path / "benchmarks" / "lapt"
    bench.mkdir(parents=True)
    (bench / "tiny.th.Mean.k50.2x2LS.clm.L64.tsv").write_text("s\th:m:s\tcpu_time\n360.0\t0:06:00\t700.0\n")
    stats = tmp_path / "tiny" / "th" / "Mean.k50.2x2LS.clm.L64" / "train_stats.json"
    stats.parent.mkdir(parents=True)
    stats.write_text(json.dumps({"device": "cpu"}))
    devices = costs.run_devices(tmp_path)
    assert devices == {"cpu"}
    table = costs.cost_table(costs.read_benchmarks(tmp_path), {}, devices)
    row = table.iloc[0]
    assert row["wall_h"] == pytest.approx(0.1) and row["cpu_h"] == pytest.approx(700 / 3600) and row["gpu_h"] == 0
    assert "every job of this run ran on the CPU" in costs.markdown(table, devices=devices)
    # where the jobs ran on a GPU, a GPU rule's wall hours are its GPU-hours
    assert costs.cost_table(costs.read_benchmarks(tmp_path), {}, {"cuda"}).iloc[0]["gpu_h"] > 0


def test_report_lists_tables_in_the_papers_order_with_titles():
    from workflow_scripts.paper.specs import FIGURE_TITLES, FIGURES, TABLES, report_title

    numbers = [t.number for t in TABLES]
    assert numbers[:7] == ["1", "2", "3", "4a", "4b", "4c", "5"] and numbers[-2:] == ["14", "_mumo"]
    titles = [report_title(t.title, t.caption) for t in TABLES]
    assert titles[0].startswith("Table 1: Mean performance on generation tasks")
    assert titles[-1] == "MuMo beside vocabulary expansion (not in the paper)"
    assert titles[3] == "Table 4a: Inference efficiency on generation tasks"
    assert titles[5] == "Table 4c: Unpaired generation speed-ups"
    assert not any("_mumo" in t or "paper 002" in t for t in titles)
    assert set(FIGURE_TITLES) == set(FIGURES)


def test_the_proxy_note_only_on_tables_with_mc(tmp_path):
    from workflow_scripts.paper.__main__ import write_tables

    f = frame(
        *(rec(label, "th", "mc", "acc", 0.5) for label in ("Source", "Mean")),
        *(rec(label, "th", "ppl", "perplexity", 5.0) for label in ("Source", "Mean")),
        rec("Mean", "th", "mt", PAIRED_TF, 2.0),
    )
    labels = ["stand-in text", "mc proxy: a 4-way choice"]
    write_tables(f, tmp_path, labels, {})
    assert "mc proxy" in (tmp_path / "table3.md").read_text(encoding="utf-8")
    for name in ("table2", "table4a"):
        text = (tmp_path / f"{name}.md").read_text(encoding="utf-8")
        assert "mc proxy" not in text and "stand-in text" in text


def test_figure4_leaves_out_cells_without_a_vocabulary_size(drawn):
    """A MuMo cell's token shares carry no k (no |V_new|): they give no point, and never an empty series to index."""
    from workflow_scripts.paper import figures

    reports = pd.DataFrame([{"model": "tiny", "language": "th", "k": 50, "share": 0.6}])
    mumo = rec("MuMo", "th", "mt", figures.OUTPUT_SHARE, 0.9, k=None)
    figures.figure4(reports, frame(mumo), "unused")
    ax = drawn[0].axes[0]
    assert [round(p.get_height(), 2) for p in ax.patches] == [0.6]  # the held-out share only
    assert figures.figure4(reports.iloc[0:0], frame(mumo), "unused") == []  # nothing with a |V_new|: not drawn
    assert len(drawn) == 1
