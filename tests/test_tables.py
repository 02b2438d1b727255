"""The long results table, its derived speed-up rows and the Markdown rendering, from hand-made result files."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from workflow_scripts import tables

SOURCE = {
    "model": "smollm2",
    "language": "th",
    "method": "source",
    "label": "Source",
    "init": None,
    "procedure": None,
    "objective": None,
    "seq_len": None,
    "k": None,
    "aux_vocab_size": None,
    "vocab": None,
    "posthoc": "none",
}
# the slug is a name only: every method field is in the cell, and the tables read nothing out of the slug
MEAN = {
    **SOURCE,
    "method": "mean-2x2ls-mtp-512-k100",
    "label": "Mean",
    "init": "Mean",
    "procedure": "2x2LS",
    "objective": "mtp",
    "seq_len": 512,
    "k": 100,
    "vocab": "expand",
}
LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n-th)"


def _write(path, cell, records, **details):
    path.parent.mkdir(parents=True, exist_ok=True)
    recs = [{"task": t, "metric": m, "value": v} for t, m, v in records]
    path.write_text(json.dumps({"cell": cell, "records": recs, "details": details}), encoding="utf-8")
    return path


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    return [
        _write(root / "smollm2/th/source/eval/mt_seed1.json", SOURCE, [("mt", "chrF", 10.0)], seed=1, data_label=LABEL),
        _write(root / "smollm2/th/source/eval/mt_seed2.json", SOURCE, [("mt", "chrF", 12.0)], seed=2, data_label=LABEL),
        _write(
            root / "smollm2/th/source/eval/speed.json",
            SOURCE,
            [
                ("mt", "tokens_per_second", 20.0),
                ("mt", "chars_per_second", 30.0),
                ("mt", "prompt_tokens", 40.0),
                ("mt", "generated_tokens", 80.0),
            ],
        ),
        _write(
            root / "smollm2/th/mean/eval/speed.json",
            MEAN,
            [
                ("mt", "tokens_per_second", 18.0),
                ("mt", "chars_per_second", 75.0),
                ("mt", "prompt_tokens", 40.0),
                ("mt", "generated_tokens", 30.0),
            ],
        ),
        _write(
            root / "smollm2/th/mean/eval/ppl.json",
            MEAN,
            [("ppl", "perplexity", 12.3456), ("ppl", "bits_per_char", 1.23456)],
        ),
    ]


def test_long_table_and_derived_rows(results):
    frame, _ = tables.build_tables(results)
    assert list(frame.columns) == [*tables.CELL_COLUMNS, "task", "metric", "value", "seed", "run", "min", "max"]
    assert len(frame) == 2 + 4 + 4 + 2 + 2 * 4  # records + 4 derived metrics for Source and for Mean
    mean = frame[frame["method"] == MEAN["method"]].set_index("metric")["value"]
    assert mean["speedup"] == 18.0 / 20.0
    assert mean["speedup_chars"] == 75.0 / 30.0
    assert mean["prompt_token_ratio"] == 1.0
    assert mean["generated_token_ratio"] == 30.0 / 80.0
    source = frame[frame["method"] == "source"].set_index("metric")["value"]
    assert source["speedup"] == 1.0
    assert sorted(frame.loc[frame["metric"] == "chrF", "seed"].tolist()) == [1, 2]
    # Cell settings survive: integers stay integers.
    assert frame.loc[frame["method"] == MEAN["method"], "seq_len"].iloc[0] == 512


def test_markdown(results):
    _, md = tables.build_tables(results)
    assert LABEL in md
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| Language"))
    # token perplexity and the unpaired speed-ups are not in the main table
    # only the columns some result fills; the others are named once as not run
    assert header == "| Language | Method | Settings | translation chrF (0–100) | bits per character (held-out) |"
    assert "Not run by this configuration: summarization (no target-language document/summary pairs" in md
    source_row = next(line for line in lines if line.startswith("| Thai | Source"))
    mean_row = next(line for line in lines if line.startswith("| Thai | Mean"))
    assert lines.index(source_row) < lines.index(mean_row)  # Source first
    # chrF: mean ± sample sd of the two seeds
    assert source_row == "| Thai | Source | – | 11.0 ± 1.4 | – |"
    assert mean_row == "| Thai | Mean | 2x2 LS, mtp, sequence length 512; 100 new tokens | – | 1.235 |"
    assert "## All results: SmolLM2-135M" in md
    # token perplexity sits apart, under a heading that says it is not comparable across vocabularies
    ppl = md.index("## Token perplexity (not comparable across vocabularies)")
    assert md.index("| SmolLM2-135M | Thai | Mean | 12.35 |") > ppl > md.index(mean_row)
    # the unpaired generation speed-up (0.90x) is only in the speed details, with the spreads, not in a headline
    assert "0.90x" not in md


CHARS = [20, 30, 50, 40]


def _sentences(bpc, noise=0.0, shift=0):
    """Per-sentence NLL (nats) whose total is ``bpc`` bits per character over CHARS, ± ``noise`` nats alternating
    from sentence ``shift`` on (the totals stay the same): the ppl step's details."""
    nll = [bpc * math.log(2) * c + noise * (-1) ** (i + shift) for i, c in enumerate(CHARS)]
    return {"nll_nats": nll, "chars": CHARS}


def _lead(tmp_path, extra=()):
    """Source and Mean with held-out tokens, bits per character and the paired teacher-forced speed-up."""
    root = tmp_path / "lead"
    tf = "@teacher_forced.greedy.b1"
    paired = {"task": "mt", "metric": f"paired_speedup{tf}", "value": 2.5, "min": 2.2, "max": 2.9}
    bound = {"task": "mt", "metric": f"token_ratio_bound{tf}", "value": 1.8}
    source = [("ppl", "tokens_per_sentence", 77.0), ("ppl", "bits_per_char", 3.2), ("ppl", "perplexity", 6.0)]
    mean = [("ppl", "tokens_per_sentence", 42.5), ("ppl", "bits_per_char", 3.3), ("ppl", "perplexity", 360.0)]
    paths = [
        _write(root / "s/ppl.json", SOURCE, source, data_label=LABEL, **_sentences(3.2)),
        _write(root / "m/ppl.json", MEAN, mean, **_sentences(3.3, noise=0.5)),
    ]
    paths += list(extra)
    speed = root / "m/speed.json"
    speed.write_text(json.dumps({"cell": MEAN, "records": [paired, bound], "details": {}}), encoding="utf-8")
    return [*paths, speed]


def test_the_page_leads_with_tokens_paired_speed_up_and_bits_per_character(tmp_path):
    _, md = tables.build_tables(_lead(tmp_path), figure="results.png")
    lead = md.index("## At a glance")
    assert lead < md.index("## All results") < md.index("## Token perplexity")
    row = next(line for line in md.splitlines() if line.startswith("| SmolLM2-135M | Thai | Mean | 77.0"))
    assert row == "| SmolLM2-135M | Thai | Mean | 77.0 → 42.5 | 2.50x [2.20–2.90] | 1.80x | 1.39 | 3.200 → 3.300 |"
    assert (
        "Mean ends 0.10 bits per character above Source on Thai (3.200 → 3.300): worse (95% interval [+0.079, "
        "+0.121]), quality is not held."
    ) in md
    assert "![" in md and "](results.png)" in md  # the figure beside the table
    # perplexity 360 against 6: shown only under the heading that says it cannot be compared
    assert md.index("360.00") > md.index("## Token perplexity (not comparable across vocabularies)")


def test_the_lead_shows_the_llama_cpp_speed_up_over_its_bound_next_to_transformers(tmp_path):
    variant = {"mode": "teacher_forced", "decoding": "greedy", "batch_size": 1, "engine": "llama.cpp", "gguf": "f16"}
    records = [
        {"task": "mt", "metric": "paired_speedup", "value": 2.0, "min": 1.9, "max": 2.1, **variant},
        {"task": "mt", "metric": "token_ratio_bound", "value": 1.6, **variant},
    ]
    served = tmp_path / "lead/m/serve_speed.json"
    served.parent.mkdir(parents=True)
    served.write_text(json.dumps({"cell": MEAN, "records": records}), encoding="utf-8")
    frame, md = tables.build_tables(_lead(tmp_path, [served]))
    row = next(line for line in md.splitlines() if line.startswith("| SmolLM2-135M | Thai | Mean | 77.0"))
    # transformers: 2.50 / 1.80 = 1.39 of the bound; llama.cpp: 2.00 / 1.60 = 1.25
    assert row == (
        "| SmolLM2-135M | Thai | Mean | 77.0 → 42.5 | 2.50x [2.20–2.90] | 1.80x | 1.39 | 2.00x [1.90–2.10] | 1.25 "
        "| 3.200 → 3.300 |"
    )
    over = frame[frame["metric"] == "paired_speedup_over_bound@llama.cpp-f16.teacher_forced.greedy.b1"]
    assert over["value"].tolist() == [1.25]
    assert "paired_speedup" not in set(frame["metric"])  # a llama.cpp record is never the headline variant
    _, plain = tables.build_tables(_lead(tmp_path / "plain"))
    assert "llama.cpp" not in plain  # no served cells: the lead keeps its columns


def test_the_mc_proxy_label_only_where_mc_is(tmp_path):
    proxy = "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"
    _, md = tables.build_tables(_lead(tmp_path))
    assert proxy not in md
    mc = _write(tmp_path / "lead/m/mc.json", MEAN, [("mc", "acc", 0.5)], data_label=proxy, task="mc")
    _, md = tables.build_tables(_lead(tmp_path, [mc]))
    assert proxy in md and "| reading comprehension accuracy (proxy) |" in md


def test_results_csv_carries_every_method_field(tmp_path):
    elchat = {**MEAN, "method": "any-name", "posthoc": "elchat"}
    replace = {**MEAN, "method": "other-name", "vocab": "replace", "k": None, "aux_vocab_size": 8000}
    paths = [
        _write(tmp_path / "e.json", elchat, [("mt", "chrF", 5.0)]),
        _write(tmp_path / "r.json", replace, [("mt", "chrF", 6.0)]),
    ]
    frame, md = tables.build_tables(paths)
    assert {"vocab", "posthoc", "init", "k", "procedure", "objective", "seq_len"} <= set(frame.columns)
    assert frame.set_index("method").loc["any-name", "posthoc"] == "elchat"
    # names and settings come from the fields, not from the slug (which here says nothing)
    assert "| Thai | Mean + ElChat |" in md and "vocabulary replaced (8000 tokens)" in md


def test_no_source_no_speedup(results):
    frame, md = tables.build_tables([p for p in results if p.parts[-3] != "source"])
    assert not frame["metric"].isin([m for m, _ in tables.DERIVED]).any()
    assert not frame["metric"].str.startswith("speedup").any()
    assert LABEL not in md  # only the Source files carried the data label


def test_cli_results_dir(results, tmp_path):
    root = tmp_path / "results"
    (root / "smollm2/th/source/eval/notes.json").write_text('{"something": 1}', encoding="utf-8")
    out_csv, out_md = tmp_path / "tables/results.csv", tmp_path / "tables/results.md"
    tables.main(["--results-dir", str(root), "--csv", str(out_csv), "--markdown", str(out_md)])
    frame = pd.read_csv(out_csv)
    assert len(frame) == 20 and (frame["metric"] == "speedup").sum() == 2
    assert "| Thai | Mean |" in out_md.read_text(encoding="utf-8")
    # Explicit inputs are strict: a file that is not a result is an error.
    with pytest.raises(ValueError, match="not a result file"):
        tables.main(
            [
                "--inputs",
                str(root / "smollm2/th/source/eval/notes.json"),
                "--csv",
                str(out_csv),
                "--markdown",
                str(out_md),
            ]
        )


def test_elchat_row_is_named_as_in_table_10(results, tmp_path):
    elchat = {**MEAN, "method": "Mean.k100.2x2LS.mtp.L512.elchat", "posthoc": "elchat"}
    path = _write(tmp_path / "results/smollm2/th/elchat/eval/mt.json", elchat, [("mt", "chrF", 19.0)])
    _, md = tables.build_tables([*results, path])
    rows = [line for line in md.splitlines() if line.startswith("| Thai | Mean")]
    assert [row.split(" | ")[1] for row in rows] == ["Mean", "Mean + ElChat"]
    assert rows[1].split(" | ")[3] == "19.0"


def test_cli_writes_the_lead_figure_and_the_reports_first_page(tmp_path):
    loss = tmp_path / "results/smollm2/th/mean-2x2ls-mtp-512-k100/loss.tsv"
    loss.parent.mkdir(parents=True)
    loss.write_text("step\tloss\n1\t3.0\n2\t2.5\n", encoding="utf-8")
    out = tmp_path / "tables"
    tables.main(
        [
            "--inputs",
            *map(str, _lead(tmp_path)),
            "--losses",
            str(loss),
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
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "results.pdf").is_file()
    assert "](results.png)" in (out / "results.md").read_text(encoding="utf-8")
    page = (out / "results.html").read_text(encoding="utf-8")
    # the report is one self-contained file: the figure is embedded, the tables are HTML tables
    assert 'src="data:image/png;base64,' in page and "<table>" in page and "<h2>At a glance</h2>" in page
    assert "77.0 → 42.5" in page


def test_training_seeds_group_into_one_row_with_their_spread_and_interval(tmp_path):
    """Three seeds of Mean (the config's 42 without a suffix, 43 and 44 with one) are one row of the page: mean ±
    sd over seeds, their number, and one interval against Source over seeds and sentences, here within noise."""
    root = tmp_path / "seeds"
    paths = [
        _write(
            root / "s/ppl.json", SOURCE, [("ppl", "bits_per_char", 3.2)], data_label=LABEL, **_sentences(3.2, noise=2.0)
        )
    ]
    for seed, bpc in ((None, 3.19), (43, 3.21), (44, 3.23)):
        extra = {"method": MEAN["method"] + f".s{seed}", "train_seed": seed} if seed else {}
        cell = {**MEAN, **extra}
        paths.append(
            _write(
                root / f"m{seed}/ppl.json", cell, [("ppl", "bits_per_char", bpc)], **_sentences(bpc, noise=2.0, shift=1)
            )
        )
    frame, md = tables.build_tables(paths, seed=42)
    bpc = frame[frame["metric"] == "bits_per_char"]
    seeds = {"source": pd.NA, MEAN["method"]: 42, MEAN["method"] + ".s43": 43, MEAN["method"] + ".s44": 44}
    assert dict(zip(bpc["method"], bpc["train_seed"].astype(object), strict=True)) == seeds
    diff = frame[frame["metric"] == "bits_per_char_diff@Source"]
    assert len(diff) == 3 and diff["min"].nunique() == 1 and diff["value"].iloc[0] == pytest.approx(0.01)
    assert "| Language | Method | Settings | Seeds | bits per character (held-out) |" in md
    assert "| Thai | Mean | 2x2 LS, mtp, sequence length 512; 100 new tokens | 3 | 3.210 ± 0.020 |" in md
    assert tables.SEEDS_NOTE in md
    line = next(x for x in md.splitlines() if x.startswith("- Mean ends"))
    assert line == (
        "- Mean ends 0.01 bits per character above Source on Thai (3.200 → 3.210) (mean of 3 seeds, sd "
        "0.020): within noise (95% interval [-0.155, +0.181]), quality is held."
    )
