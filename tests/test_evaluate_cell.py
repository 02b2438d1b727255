"""One evaluation job per cell (workflow_scripts/evaluate_cell.py): every step gets its own arguments plus the shared
ones, in a fixed order, and writes what its own command line writes."""

from __future__ import annotations

import json

import pytest

from workflow_scripts import evaluate_cell as cell


def test_steps_run_in_order_with_the_shared_arguments(monkeypatch):
    calls = []
    monkeypatch.setattr(cell, "RUNNERS", {s: (lambda argv, s=s: calls.append((s, argv))) for s in cell.STEPS})
    shared = ["--model", "m dir", "--cell", '{"method": "Source"}', "--threads", "1"]
    cell.main([*shared, "--speed", "--pairs 'a b.tsv' --out s.json", "--ppl", "--text t.txt --out p.json"])
    # ppl before speed whatever the order given; a quoted path stays one argument
    assert calls == [
        ("ppl", ["--text", "t.txt", "--out", "p.json", *shared]),
        ("speed", ["--pairs", "a b.tsv", "--out", "s.json", *shared]),
    ]


def test_each_step_runs_the_command_line_its_own_rule_runs(monkeypatch):
    """The runners come from the task specs: the harness told the task, a module's or a package's main."""
    from workflow_scripts import perplexity
    from workflow_scripts.harness import __main__ as harness
    from workflow_scripts.speed import __main__ as speed

    calls = []
    for module, name in ((harness, "harness"), (perplexity, "perplexity"), (speed, "speed")):
        monkeypatch.setattr(module, "main", lambda argv, name=name: calls.append((name, argv)))
    for step in ("mt", "mc", "ppl", "speed"):
        cell.runner(step)(["--out", f"{step}.json"])
    assert calls == [
        ("harness", ["--task", "mt", "--out", "mt.json"]),
        ("harness", ["--task", "mc", "--out", "mc.json"]),
        ("perplexity", ["--out", "ppl.json"]),
        ("speed", ["--out", "speed.json"]),
    ]


def test_a_job_without_steps_is_refused():
    with pytest.raises(SystemExit):
        cell.parse_args(["--model", "m", "--cell", "{}"])


def test_a_failing_step_stops_the_job_before_the_next(monkeypatch):
    calls = []

    def fail(argv):
        raise SystemExit("ppl: held-out text is empty")

    monkeypatch.setattr(cell, "RUNNERS", {**cell.RUNNERS, "ppl": fail, "mt": lambda argv: calls.append("mt")})
    with pytest.raises(SystemExit, match="held-out text is empty"):
        cell.main(["--model", "m", "--cell", "{}", "--ppl", "--text x", "--mt", "--pairs y"])
    assert calls == []


@pytest.mark.slow
def test_the_ppl_step_writes_what_the_ppl_command_writes(tmp_path, tiny_llama_dir, thai_file):
    """The same model, text and cell through the cell job and through `workflow_scripts.perplexity` alone: the
    same records and details (timing aside)."""
    from workflow_scripts import perplexity

    common = ["--model", str(tiny_llama_dir), "--cell", '{"method": "Source"}', "--threads", "1"]
    perplexity.main(["--text", str(thai_file), "--n", "12", "--out", str(tmp_path / "alone.json"), *common])
    cell.main([*common, "--ppl", f"--text {thai_file} --n 12 --out {tmp_path / 'cell.json'}"])
    alone, fused = (json.loads((tmp_path / f).read_text()) for f in ("alone.json", "cell.json"))
    for result in (alone, fused):
        result["details"].pop("seconds")
    assert fused == alone
    assert {r["metric"] for r in fused["records"]} >= {"bits_per_char", "tokens_per_sentence"}
