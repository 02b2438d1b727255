"""The held-out curve of a LAPT run (training.curve_points): its steps, its points against the ppl step's computation,
training untouched by it, and its rows kept across a kill and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import lapt_args, model_state
from workflow_scripts import lapt
from workflow_scripts.inference import load_model, read_sentences
from workflow_scripts.lapt.curve import COLUMNS, CurveSpec, curve_steps
from workflow_scripts.perplexity import evaluate_ppl

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread")  # deterministic CPU sums: curve on and off compared bit for bit


@pytest.mark.parametrize(
    ("total", "points", "steps"),
    [
        (16, 5, [0, 4, 8, 12, 16]),  # even spacing
        (10, 4, [0, 3, 7, 10]),  # 3.33 -> 3, 6.67 -> 7
        (7, 3, [0, 4, 7]),  # 3.5 rounds half up
        (3, 10, [0, 1, 2, 3]),  # more points than steps: every step once
        (16, 2, [0, 16]),
        (16, 1, [0]),  # the initialized model alone
        (16, 0, []),
    ],
)
def test_curve_steps(total, points, steps):
    assert curve_steps(total, points) == steps


def _heldout(tmp_path: Path, thai_lines: list[str]) -> Path:
    path = tmp_path / "heldout.txt"  # sentences D does not hold (thai_file is the first 60)
    path.write_text("\n".join(thai_lines[100:140]) + "\n", encoding="utf-8")
    return path


def _rows(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "\t".join(COLUMNS)
    return [line.split("\t") for line in lines[1:]]


def _ppl_bpc(model_dir: Path, text: Path, n: int, batch_size: int) -> float:
    """The ppl step's bits per character: evaluate_ppl on the model folder loaded as the ppl step loads it (fp32)."""
    model, tokenizer = load_model(model_dir, "float32", "cpu")
    records = evaluate_ppl(model, tokenizer, read_sentences(text, n), batch_size=batch_size)["records"]
    return next(r["value"] for r in records if r["metric"] == "bits_per_char")


@pytest.mark.slow  # a training run with three curve points, and two ppl evaluations
def test_curve_points_are_the_ppl_steps_numbers(tmp_path, tiny_llama_dir, thai_file, thai_lines):
    heldout = _heldout(tmp_path, thai_lines)
    spec = CurveSpec(3, heldout, 12, 4, tmp_path / "curve.tsv")
    stats = lapt.train(
        tiny_llama_dir,
        thai_file,
        tmp_path / "out",
        procedure="2x2LS",
        seq_len=16,
        hparams={"max_steps": 4, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0},
        checkpoint_dir=tmp_path / "ckpt",
        curve=spec,
    )
    rows = _rows(spec.out)
    assert [int(r[0]) for r in rows] == [0, 2, 4] == stats["curve"]["steps"]
    assert [int(r[1]) for r in rows] == [0, 2 * 2 * 16, 4 * 2 * 16]  # tokens: steps x batch x seq_len
    assert {r[3] for r in rows} == {"12"}
    first, last = _ppl_bpc(tiny_llama_dir, heldout, 12, 4), _ppl_bpc(tmp_path / "out", heldout, 12, 4)
    # fp32 training and evaluation: the same weights and the same computation, so only the last printed digit
    # (6 decimals in the file) may differ.
    assert float(rows[0][2]) == pytest.approx(first, abs=1e-6)
    assert float(rows[-1][2]) == pytest.approx(last, abs=1e-6)
    assert float(rows[-1][2]) < float(rows[0][2])  # lr 1e-3 on Thai text: the held-out text gets likelier


@pytest.mark.slow  # two training runs, compared bit for bit
def test_curve_does_not_change_training(tmp_path, tiny_llama_dir, thai_file, thai_lines):
    # LoRA + mtp: LoRA dropout draws from torch's RNG every step, and the mtp head reads the LM head's hook; a
    # measurement that moved the RNG or left a captured hidden state behind would change the weights.
    hp = {"max_steps": 4, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0, "log_every": 1}
    kw = dict(procedure="LoRA", objective="mtp", seq_len=16, hparams=hp)
    off = lapt.train(
        tiny_llama_dir,
        thai_file,
        tmp_path / "off",
        checkpoint_dir=tmp_path / "c0",
        loss_curve=tmp_path / "off.tsv",
        **kw,
    )
    spec = CurveSpec(3, _heldout(tmp_path, thai_lines), 10, 4, tmp_path / "curve.tsv")
    on = lapt.train(
        tiny_llama_dir,
        thai_file,
        tmp_path / "on",
        checkpoint_dir=tmp_path / "c1",
        loss_curve=tmp_path / "on.tsv",
        curve=spec,
        **kw,
    )
    assert "curve" not in off and on["curve"]["steps"] == [0, 2, 4]
    # every step's loss, learning rate and tokens, to the printed digit
    assert (tmp_path / "on.tsv").read_text() == (tmp_path / "off.tsv").read_text()
    a, b = model_state(tmp_path / "off"), model_state(tmp_path / "on")
    assert sorted(a) == sorted(b)
    for k in a:
        assert torch.equal(a[k], b[k]), k


def _cli(model: Path, train: Path, heldout: Path, work: Path, hp: dict) -> list[str]:
    curve = ["--curve-points", "4", "--curve-text", str(heldout), "--curve-n", "10", "--curve-batch-size", "4"]
    outputs = ["--curve", str(work / "curve.tsv"), "--log", str(work / "log.txt")]
    return [*lapt_args(model, train, work, hp, "LoRA", "mtp"), *curve, *outputs]


@pytest.mark.slow  # two training runs, one of them a killed subprocess, and a resume
def test_curve_rows_survive_a_kill_and_resume(tmp_path, tiny_llama_dir, thai_file, thai_lines):
    heldout = _heldout(tmp_path, thai_lines)
    hp = {"max_steps": 6, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0, "checkpoint_every": 2}
    ref, run = tmp_path / "ref", tmp_path / "run"
    lapt.main(_cli(tiny_llama_dir, thai_file, heldout, ref, hp))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "workflow_scripts.lapt", *_cli(tiny_llama_dir, thai_file, heldout, run, hp)]
    # Curve steps 0, 2, 4, 6; killed at the end of step 3, after the checkpoint of step 2 (which holds rows 0 and 2).
    killed = subprocess.run(cmd, cwd=REPO, env={**env, lapt.KILL_AT_STEP_ENV: "3"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    saved = lapt.load_checkpoint(run / "ckpt" / lapt.CHECKPOINT_FILE)
    assert saved["step"] == 2 and [r["step"] for r in saved["curve"]["rows"]] == [0, 2]
    before_resume = (run / "log.txt").read_text(encoding="utf-8")

    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    resumed_log = (run / "log.txt").read_text(encoding="utf-8")[len(before_resume) :]
    assert "resuming from" in resumed_log
    assert "curve: step 0/" not in resumed_log and "curve: step 2/" not in resumed_log  # kept, not measured again
    rows, ref_rows = _rows(run / "curve.tsv"), _rows(ref / "curve.tsv")
    assert [r[0] for r in rows] == ["0", "2", "4", "6"] and [r[:2] for r in rows] == [r[:2] for r in ref_rows]
    for r in saved["curve"]["rows"]:  # the checkpoint's rows, as written
        assert rows[[int(x[0]) for x in rows].index(r["step"])][2] == f"{r['bits_per_char']:.6f}"
    assert [float(r[2]) for r in rows] == pytest.approx([float(r[2]) for r in ref_rows], abs=1e-5)
