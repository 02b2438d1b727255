"""The step-0 sanity gate of an initialization (workflow_scripts/lapt/gate.py): Random's rows repeated exactly, a
broken initialization refused before training with a clear message, a Mean initialization passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.conftest import SMOL_MERGES, expand_tokenizer, load, rows
from workflow_scripts import lapt
from workflow_scripts.initialize import initialize
from workflow_scripts.io import UserError
from workflow_scripts.lapt.gate import GATE_TOLERANCE, check_init, gate_from_report, random_rows

HP = {"max_steps": 1, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0}


@pytest.fixture(scope="module")
def mean_cell(tiny_llama_dir, smollm2_tokenizer_dir, tmp_path_factory) -> dict:
    """The tiny Llama (SmolLM2's tokenizer) expanded by four Thai tokens and initialized by Mean, with its report."""
    root = tmp_path_factory.mktemp("gate")
    tgt = expand_tokenizer(smollm2_tokenizer_dir, root / "tgt", SMOL_MERGES)
    report = initialize(tiny_llama_dir, tgt, root / "Mean", "Mean", seed=42)
    (root / "Mean.report.json").write_text(json.dumps(report), encoding="utf-8")
    return {"root": root, "tgt": tgt, "model": root / "Mean", "report": root / "Mean.report.json"}


def _cli(model: Path, report: Path, train: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--model",
        str(model),
        "--train",
        str(train),
        "--procedure",
        "2x2LS",
        "--seq-len",
        "16",
        "--hparams",
        json.dumps(HP),
        "--out",
        str(out / "model"),
        "--stats",
        str(out / "stats.json"),
        "--loss-curve",
        str(out / "loss.tsv"),
        "--checkpoint-dir",
        str(out / "ckpt"),
        "--init-report",
        str(report),
        "--threads",
        "1",
        *extra,
    ]


def test_random_rows_are_the_random_cells(mean_cell, tiny_llama_dir, thai_lines):
    random_dir = mean_cell["root"] / "Random"
    initialize(tiny_llama_dir, mean_cell["tgt"], random_dir, "Random", seed=42)
    report = json.loads(mean_cell["report"].read_text(encoding="utf-8"))
    gate = gate_from_report(report, str(mean_cell["report"]), thai_lines)
    assert gate.new_ids == [49152, 49153, 49154, 49155] and gate.n_source == 49152 and gate.method == "Mean"
    got = random_rows(load(mean_cell["model"])[0], gate)
    assert set(got) == {"input"}  # tied: one matrix
    assert torch.equal(got["input"].float(), rows(load(random_dir)[0])[0][gate.new_ids])
    assert gate_from_report({**report, "method": "Random"}, "r.json", thai_lines) is None
    assert gate_from_report({**report, "vocab_mode": "replace"}, "r.json", thai_lines) is None


def _broken(model_dir: Path, how: str):
    model, tok = load(model_dir)
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        emb[49152:] = emb[49152:] * 1e3 if how == "scaled" else float("nan")
    return model, tok


def test_check_refuses_a_broken_initialization_and_passes_mean(mean_cell, thai_lines, one_thread):
    report = json.loads(mean_cell["report"].read_text(encoding="utf-8"))
    gate = gate_from_report(report, str(mean_cell["report"]), thai_lines)
    held_out = thai_lines[100:108]
    kw = {"batch_size": 8, "device_type": "cpu", "bf16": False}
    refusals = {
        "scaled": r"bits per character \d+\.\d+ on 8 sentences, worse than Random's",
        "nan": "bits per character nan on 8 sentences, not a finite number",
    }
    for how, message in refusals.items():  # new rows 1000 times too long, or NaN
        model, tok = _broken(mean_cell["model"], how)
        before = rows(model)[0].clone()
        with pytest.raises(UserError, match=f"Mean's new rows give step-0 {message}") as e:
            check_init(model, tok, gate, held_out, **kw)
        assert "training.init_gate: false" in str(e.value) and str(mean_cell["report"]) in str(e.value)
        assert torch.equal(rows(model)[0].nan_to_num(), before.nan_to_num())  # the rows are put back
    model, tok = load(mean_cell["model"])
    record = check_init(model, tok, gate, held_out, **kw)
    assert record["bits_per_char"] <= record["random_bits_per_char"] * (1 + GATE_TOLERANCE)
    assert record["n_sentences"] == 8 and record["method"] == "Mean"


@pytest.mark.slow  # three LAPT command lines: seconds of CPU each
def test_lapt_job_refuses_before_training_and_can_be_told_not_to(mean_cell, thai_file, tmp_path):
    model, tok = _broken(mean_cell["model"], "nan")
    model.save_pretrained(tmp_path / "broken")
    tok.save_pretrained(tmp_path / "broken")
    with pytest.raises(UserError, match="bits per character nan on 32 sentences, not a finite number") as e:
        lapt.main(_cli(tmp_path / "broken", mean_cell["report"], thai_file, tmp_path / "a"))
    assert "training.init_gate: false" in str(e.value) and str(mean_cell["report"]) in str(e.value)
    assert not (tmp_path / "a" / "ckpt").exists() and not (tmp_path / "a" / "model").exists()  # before any step
    # scaled rows, gate off: the cell trains, and its stats hold no gate
    model, tok = _broken(mean_cell["model"], "scaled")
    model.save_pretrained(tmp_path / "scaled")
    tok.save_pretrained(tmp_path / "scaled")
    lapt.main(_cli(tmp_path / "scaled", mean_cell["report"], thai_file, tmp_path / "b", "--no-init-gate"))
    assert "init_gate" not in json.loads((tmp_path / "b" / "stats.json").read_text())
    # Mean passes, and the stats say by how much (the text: D's first 32 sentences, without a held-out curve)
    lapt.main(_cli(mean_cell["model"], mean_cell["report"], thai_file, tmp_path / "c"))
    gate = json.loads((tmp_path / "c" / "stats.json").read_text())["init_gate"]
    assert gate["method"] == "Mean" and gate["n_sentences"] == 32 and gate["tolerance"] == GATE_TOLERANCE
    assert gate["bits_per_char"] <= gate["random_bits_per_char"] * (1 + GATE_TOLERANCE)


def test_with_a_curve_the_gate_scores_its_text_once_as_the_curves_step_0(mean_cell, thai_file, tmp_path, monkeypatch):
    """The gate scores the held-out curve's text at step 0; the curve takes that point rather than scoring the same
    model on the same sentences again: the initialized model is scored once before training (Random's rows once)."""
    from workflow_scripts.lapt import gate as gate_module
    from workflow_scripts.lapt import loop

    calls = []
    original = gate_module.bits_per_char

    def counted(model, *args, **kwargs):
        calls.append(model.training)
        return original(model, *args, **kwargs)

    monkeypatch.setattr(gate_module, "bits_per_char", counted)
    monkeypatch.setattr(loop, "bits_per_char", counted)
    out = tmp_path / "c"
    curve = ["--curve-points", "2", "--curve-text", str(thai_file), "--curve-n", "8", "--curve", str(out / "curve.tsv")]
    lapt.main(_cli(mean_cell["model"], mean_cell["report"], thai_file, out, *curve))
    gate = json.loads((out / "stats.json").read_text())["init_gate"]
    rows = (out / "curve.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:3] == ["step", "tokens", "bits_per_char"] and len(rows) == 3  # steps 0 and 1
    step0 = rows[1].split("\t")
    assert step0[:2] == ["0", "0"] and float(step0[2]) == pytest.approx(gate["bits_per_char"], abs=1e-6)
    assert gate["n_sentences"] == 8 and step0[3] == "8"
    assert len(calls) == 3  # the initialized model and Random's rows (the gate), then step 1 (the curve)
