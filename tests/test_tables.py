"""The long results table, its derived speed-up rows and the Markdown rendering, from hand-made result files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workflow_scripts import tables

SOURCE = {"model": "smollm2", "language": "th", "method": "source", "label": "Source", "init": None, "procedure": None,
          "objective": None, "seq_len": None, "k": None, "aux_vocab_size": None}  # fmt: skip
MEAN = {**SOURCE, "method": "mean-2x2ls-mtp-512-k100", "label": "Mean", "init": "Mean", "procedure": "2x2LS",
        "objective": "mtp", "seq_len": 512, "k": 100}  # fmt: skip
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
    assert (
        header == "| Language | Method | Settings | mt chrF | sum ROUGE-L (mT5) | mc acc | gmmlu acc | ppl BPC | ppl "
        "| tokens/s | speed-up | speed-up (chars) |"
    )
    source_row = next(line for line in lines if line.startswith("| th | Source"))
    mean_row = next(line for line in lines if line.startswith("| th | Mean"))
    assert lines.index(source_row) < lines.index(mean_row)  # Source first
    # chrF: mean ± sample sd of the two seeds
    assert source_row == "| th | Source | – | 11.0 ± 1.4 | – | – | – | – | – | 20.0 | 1.00x | 1.00x |"
    settings = "Mean · 2x2LS · mtp · 512 · k=100"
    assert mean_row == f"| th | Mean | {settings} | – | – | – | – | 1.235 | 12.35 | 18.0 | 0.90x | 2.50x |"
    assert "## smollm2" in md


def test_no_source_no_speedup(results):
    frame, md = tables.build_tables([p for p in results if p.parts[-3] != "source"])
    assert not frame["metric"].isin([m for m, _ in tables.DERIVED]).any()
    mean_row = next(line for line in md.splitlines() if line.startswith("| th | Mean"))
    assert mean_row.endswith("| 18.0 | – | – |")
    assert LABEL not in md  # only the Source files carried the data label


def test_cli_results_dir(results, tmp_path):
    root = tmp_path / "results"
    (root / "smollm2/th/source/eval/notes.json").write_text('{"something": 1}', encoding="utf-8")
    out_csv, out_md = tmp_path / "tables/results.csv", tmp_path / "tables/results.md"
    tables.main(["--results-dir", str(root), "--csv", str(out_csv), "--markdown", str(out_md)])
    frame = pd.read_csv(out_csv)
    assert len(frame) == 20 and (frame["metric"] == "speedup").sum() == 2
    assert "| th | Mean |" in out_md.read_text(encoding="utf-8")
    # Explicit inputs are strict: a file that is not a result is an error.
    with pytest.raises(ValueError, match="not a result file"):
        tables.main(["--inputs", str(root / "smollm2/th/source/eval/notes.json"), "--csv", str(out_csv),
                     "--markdown", str(out_md)])  # fmt: skip


def test_elchat_row_is_named_as_in_table_10(results, tmp_path):
    elchat = {**MEAN, "method": "Mean.k100.2x2LS.mtp.L512.elchat"}
    path = _write(tmp_path / "results/smollm2/th/elchat/eval/speed.json", elchat, [("mt", "tokens_per_second", 19.0)])
    _, md = tables.build_tables([*results, path])
    rows = [line for line in md.splitlines() if line.startswith("| th | Mean")]
    assert [row.split(" | ")[1] for row in rows] == ["Mean", "Mean + ElChat"]
    assert rows[1].endswith("| 19.0 | 0.95x | – |")
