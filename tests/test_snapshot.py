"""tools.snapshot: a configuration's dated section of docs/measurements.md, read from a finished run's folder and
written between that run's markers, the rest of the page untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tools import snapshot
from workflow_scripts.tables import COLUMNS

TF = "@teacher_forced.greedy.b1"
MEAN = {"init": "Mean", "procedure": "2x2LS", "objective": "clm", "seq_len": 128, "k": 100, "aux_vocab_size": 1500}


def _rec(method: str, label: str, task: str, metric: str, value: float, **extra) -> dict:
    cell = MEAN if method != "Source" else {}
    return {
        "model": "smollm2",
        "language": "si",
        "method": method,
        "label": label,
        **cell,
        "task": task,
        "metric": metric,
        "value": value,
        **extra,
    }


def _bench(path: Path, seconds: float, cpu: float, rss: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    path.write_text(f"{head}{seconds}\t0:00:00\t{rss}\t0\t0\t0\t0\t0\t50\t{cpu}\n", encoding="utf-8")


def make_run(root: Path) -> Path:
    """A finished run folder: its marker, results table, benchmark files, a speed record and a training record."""
    mean = "Mean.k100.2x2LS.clm.L128"
    (root / "tables").mkdir(parents=True)
    (root / ".run.json").write_text(json.dumps({"configfiles": ["config.yaml"]}), encoding="utf-8")
    rows = [
        _rec("Source", "Source", "ppl", "tokens_per_sentence", 92.25),
        _rec("Source", "Source", "ppl", "bits_per_char", 6.471),
        _rec("Source", "Source", "mt", "chrF", 2.61),
        _rec(mean, "Mean", "ppl", "tokens_per_sentence", 27.5),
        _rec(mean, "Mean", "ppl", "bits_per_char", 6.594),
        _rec(mean, "Mean", "mt", "chrF", 0.54),
        _rec(mean, "Mean", "mt", f"paired_speedup{TF}", 3.74, min=3.2, max=3.81),
        _rec(mean, "Mean", "mt", f"token_ratio_bound{TF}", 3.54),
    ]
    pd.DataFrame(rows, columns=COLUMNS).to_csv(root / "tables" / "results.csv", index=False)
    _bench(root / "benchmarks" / "lapt" / f"smollm2.si.{mean}.tsv", 92.5, 180.0, 3300.0)
    _bench(root / "benchmarks" / "evaluate_cell" / "smollm2.si.Source.tsv", 60.0, 50.0, 1400.0)
    _bench(root / "benchmarks" / "evaluate_cell" / f"smollm2.si.{mean}.tsv", 40.0, 45.0, 1500.0)
    hardware = {
        "device": "cpu",
        "torch_threads": 1,
        "cpu_count": 2,
        "torch": "2.13.0",
        "transformers": "4.57.1",
        "platform": "Linux-test",
        "dtype": "float32",
    }
    speed = root / "smollm2" / "si" / mean / "eval" / "speed.json"
    speed.parent.mkdir(parents=True)
    details = {"n_used": 2, "repeats": 3, "warmup": 1, "reference_chars": 8, "hardware": hardware}
    speed.write_text(json.dumps({"records": [], "details": details}), encoding="utf-8")
    ppl = {"n_used": 50, "data_label": "stand-in data"}
    (speed.parent / "ppl.json").write_text(json.dumps({"records": [], "details": ppl}), encoding="utf-8")
    mt = {"n_used": 16, "decoding": "greedy", "runs": 1}
    (speed.parent / "mt.json").write_text(json.dumps({"records": [], "details": mt}), encoding="utf-8")
    stats = {
        "device": "cpu",
        "threads": 2,
        "precision": "bf16 autocast, bf16 frozen weights",
        "steps": 16,
        "tokens_per_second": 431.2,
    }
    (root / "smollm2" / "si" / mean / "train_stats.json").write_text(json.dumps(stats), encoding="utf-8")
    return root


PAGE = """# Measured numbers

Hand-written head.

<!-- snapshot: default -->
## The `default` run, 1999-01-01

si Mean 9.99x
<!-- /snapshot: default -->

## make demo-full, 2026-12-02

Hand-written: 30 min 29 s.

<!-- snapshot: other -->
other run's text
<!-- /snapshot: other -->
"""


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "results" / "default")


def _main(tmp_path: Path, doc: Path, *extra: str) -> str:
    argv = ["--run", "default", "--results", str(tmp_path / "results"), "--doc", str(doc), "--cpu-model", "Test CPU"]
    assert snapshot.main([*argv, *extra]) == 0
    return doc.read_text(encoding="utf-8")


def test_the_section_is_replaced_and_the_rest_of_the_page_kept(tmp_path, run):
    doc = tmp_path / "measurements.md"
    doc.write_text(PAGE, encoding="utf-8")
    text = _main(tmp_path, doc, "--wall-time", "real\t8m12.345s", "--note", "loaded machine", "--date", "2026-12-03")
    begin, end = text.index("<!-- snapshot: default -->"), text.index("<!-- /snapshot: default -->")
    section = text[begin:end]
    assert "9.99x" not in text and "1999-01-01" not in text
    assert text[:begin] == PAGE[: PAGE.index("<!-- snapshot: default -->")]
    rest = PAGE[PAGE.index("<!-- /snapshot: default -->") :]
    assert text[end:] == rest
    assert "## The `default` run (`config.yaml`), 2026-12-03" in section
    # the numbers come from the files: results.csv, the benchmark files, the speed and training records
    assert "| si | Source | 92.2 | – | – | – | 6.471 | 2.6 |" in section
    assert "| si | Mean | 27.5 | 3.74x [3.20–3.81] | 3.54x | 1.06 | 6.594 | 0.5 |" in section
    assert "| `evaluate_cell` | 2 | 100 s | 95 s | 1.5 GB |" in section
    assert "| `lapt` | 1 | 92 s | 180 s | 3.2 GB |" in section
    assert "| **total** | 3 | 192 s (3 min 12 s) | 275 s | |" in section
    prose = " ".join(section.split())  # the paragraphs are wrapped at 120 columns
    assert "**8 min 12 s** of wall time" in prose
    assert "Test CPU; 2 CPUs; device cpu; torch 2.13.0" in prose
    assert "evaluation and speed in float32 on 1 torch thread;" in prose
    assert "Model: `smollm2`. Machine: Test CPU" in prose
    assert "training in bf16 autocast, bf16 frozen weights on 2 torch threads; loaded machine" in prose
    assert (
        "bits per character and tokens per sentence on 50 held-out sentences; mt on 16 sentences (greedy decoding, 1 "
        "run); speed on 2 references, 3 repeats after 1 warm-up, teacher forcing on their first 8 characters; "
        "training 16 steps at 431 tokens/s. Data: stand-in data." in prose
    )
    # a second run gives the same page
    assert _main(tmp_path, doc, "--wall-time", "492.345", "--note", "loaded machine", "--date", "2026-12-03") == text


def test_a_page_without_the_section_gets_it_appended_and_the_date_is_the_runs(tmp_path, run):
    doc = tmp_path / "measurements.md"
    doc.write_text("# Measured numbers\n\nHead.\n", encoding="utf-8")
    stamp = 1796256000  # 2026-12-03 00:00 UTC
    for path in [run / "tables" / "results.csv", *(run / "benchmarks").glob("*/*.tsv")]:
        os.utime(path, (stamp, stamp))
    text = _main(tmp_path, doc)
    assert text.startswith("# Measured numbers\n\nHead.\n\n<!-- snapshot: default -->\n## The `default` run")
    assert "2026-12-03" in text and text.endswith("<!-- /snapshot: default -->\n")
    assert "The whole run took" not in text  # no --wall-time: no total wall time claimed


def test_an_unpaired_marker_is_refused(tmp_path, run):
    doc = tmp_path / "measurements.md"
    doc.write_text("<!-- snapshot: default -->\nno end\n", encoding="utf-8")
    with pytest.raises(ValueError, match="without"):
        _main(tmp_path, doc)
    assert doc.read_text(encoding="utf-8") == "<!-- snapshot: default -->\nno end\n"


def test_an_unfinished_run_is_refused_and_the_page_left_alone(tmp_path, run, capsys):
    (run / "tables" / "results.csv").unlink()
    doc = tmp_path / "measurements.md"
    doc.write_text(PAGE, encoding="utf-8")
    with pytest.raises(SystemExit):
        _main(tmp_path, doc)
    assert "results.csv does not exist" in capsys.readouterr().err
    assert doc.read_text(encoding="utf-8") == PAGE


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("real\t7m19.456s", 439.456),
        ("1h2m3s", 3723),
        ("45", 45.0),
        ("12m", 720),
        ("1:02:04", 3724),
        ("56:06.26", 3366.26),
    ],
)
def test_wall_time_as_time_prints_it(text, seconds):
    assert snapshot.parse_wall_time(text) == pytest.approx(seconds)


def test_a_wall_time_that_is_no_duration_is_refused():
    with pytest.raises(ValueError, match="--wall-time"):
        snapshot.parse_wall_time("soon")


def test_the_cpu_model_is_only_read_here_when_the_run_ran_here(run):
    assert snapshot.machine(run, "auto")["cpu_model"] is None  # the record's platform is not this machine's


def test_the_findings_bullets_and_each_number_of_new_tokens_are_shown(tmp_path, run):
    """A run with a findings page quotes its generated opening bullets; two cells of one method apart by |V_new| are
    named by it; every held-out data label is listed."""
    frame = pd.read_csv(run / "tables" / "results.csv")
    more = frame[frame["method"] == "Mean.k100.2x2LS.clm.L128"].assign(method="Mean.k500.2x2LS.clm.L128", k=500)
    pd.concat([frame.assign(k=frame["method"].map({"Mean.k100.2x2LS.clm.L128": 100})), more]).to_csv(
        run / "tables" / "results.csv", index=False
    )
    other = run / "smollm2" / "th" / "Source" / "eval" / "ppl.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"records": [], "details": {"n_used": 50, "data_label": "natural text"}}), "utf-8")
    findings = run / "findings"
    findings.mkdir()
    (findings / "findings.md").write_text(
        "# Findings\n\n## At a glance\n\n- **Against CPT-only.** Sinhala: Mean ends\n2.0% above CPT-only.\n"
        "- **Scope.** This run.\n\n## Quality\n\nx\n",
        encoding="utf-8",
    )
    doc = tmp_path / "measurements.md"
    written = _main(tmp_path, doc, "--date", "2026-12-03")
    assert "\n- **Against CPT-only.** Sinhala: Mean ends 2.0% above CPT-only.\n- **Scope.** This run.\n" in written
    prose = " ".join(written.split())
    assert "### Findings As `results/default/findings/findings.md` opens, generated from these results: - **" in prose
    assert "- **Scope.** This run. ### Cost" in prose
    assert "| si | Mean, 100 new tokens | 27.5 |" in prose and "| si | Mean, 500 new tokens | 27.5 |" in prose
    assert "Data: natural text; stand-in data." in prose or "Data: stand-in data; natural text." in prose


def _finish_at(run: Path, stamp: int) -> None:
    for path in [run / "tables" / "results.csv", *(run / "benchmarks").glob("*/*.tsv")]:
        os.utime(path, (stamp, stamp))


def test_timed_runs_of_a_configuration_stand_side_by_side(tmp_path, run):
    """Each snapshot with a wall time adds its run's row; earlier rows stay, oldest first; the same run snapshotted
    again replaces its own row; a snapshot without a wall time keeps the rows and adds none."""
    doc = tmp_path / "measurements.md"
    doc.write_text(PAGE, encoding="utf-8")
    _finish_at(run, 1796259600)  # 2026-12-03 01:00 UTC
    _main(tmp_path, doc, "--wall-time", "56m6s", "--note", "idle")
    _finish_at(run, 1796266800)  # 2026-12-03 03:00 UTC: a second run of the configuration
    assert "| idle / again |" in _main(tmp_path, doc, "--wall-time", "58m0s", "--note", "idle | again")
    text = _main(tmp_path, doc, "--wall-time", "57m0s", "--note", "idle, corrected")  # the second run, again
    first = "| 2026-12-03 01:00 | 56 min 6 s | 3 | 192 s | `evaluate_cell` 100 s (2 jobs), `lapt` 92 s (1 job) | idle |"
    second = "| 2026-12-03 03:00 | 57 min 0 s | 3 | 192 s | `evaluate_cell` 100 s (2 jobs), `lapt` 92 s (1 job) |"
    assert first in text and second + " idle, corrected |" in text and "58 min" not in text
    assert text.index(first) < text.index(second)
    assert text.index("### Timed runs") < text.index("<!-- /snapshot: default -->")  # inside the run's section
    assert "other run's text" in text  # other sections untouched
    again = _main(tmp_path, doc)
    assert first in again and second in again and again.count("| 2026-12-03 ") == 2


def test_finished_given_replaces_the_newest_files_time(tmp_path, run, capsys):
    """A run whose last jobs ran again later: its row and date are the time given, not its newest file's."""
    doc = tmp_path / "measurements.md"
    doc.write_text(PAGE, encoding="utf-8")
    _finish_at(run, 1796266800)  # 2026-12-03 03:00 UTC: the jobs run again
    text = _main(tmp_path, doc, "--wall-time", "54m15s", "--finished", "2026-12-02 23:46")
    assert "| 2026-12-02 23:46 | 54 min 15 s |" in text and "2026-12-03" not in text
    with pytest.raises(SystemExit):
        _main(tmp_path, doc, "--wall-time", "50m", "--finished", "23:46")
    assert "YYYY-MM-DD HH:MM" in capsys.readouterr().err
    assert doc.read_text(encoding="utf-8") == text


def test_a_run_never_timed_has_no_timed_runs_table(tmp_path, run):
    assert "### Timed runs" not in _main(tmp_path, tmp_path / "measurements.md")
