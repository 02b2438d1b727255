"""LAPT sharded over processes with FSDP (workflow_scripts/lapt/shard.py), on the CPU with the gloo backend.

Two processes launched as rule lapt (rules/lapt.smk) launches N (``torchrun --standalone --nproc-per-node``) against
one process on the same global batch: the same parameters within fp32 summation-order tolerance, frozen parameters
and frozen rows bit-identical, and a checkpoint that resumes on another number of processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig

from tests.conftest import lapt_args, model_state
from workflow_scripts import lapt
from workflow_scripts.gpu.estimate import estimate
from workflow_scripts.gpu.shape import shape_from_config
from workflow_scripts.lapt import shard, testhooks

REPO = Path(__file__).resolve().parents[1]
EMB, HEAD = "model.embed_tokens.weight", "lm_head.weight"
N_SRC = 49152 - 24  # EEVE: the last 24 rows of the tiny model's vocabulary are the new tokens
# 4 blocks a step (2 per process), decay on every trained matrix, a checkpoint every step.
HP = {
    "batch_size": 2,
    "grad_accum": 2,
    "lr": 1e-3,
    "warmup_steps": 0,
    "weight_decay": 0.1,
    "checkpoint_every": 1,
    "log_every": 1,
}
# The stated tolerance. Two processes sum each step's gradient from two halves, one process from the whole: fp32
# additions in another order. Adam's first steps move an element by about lr * g / (|g| + eps), so an element whose
# gradient is near eps turns that rounding into a visible share of one step (measured: one element in 8192 of a
# layer off by 2.5e-6 and 1.6e-5 in two runs at lr 1e-3). So: every element within 5% of one step (lr x 0.05), and
# all but 0.1% of each tensor's elements within 1e-6 (the rounding itself).
STEP_SHARE, CLOSE, CLOSE_SHARE = 0.05, 1e-6, 0.999
pytestmark = pytest.mark.usefixtures("one_thread")


def _cli(model: Path, train: Path, work: Path, procedure: str, objective: str, hp: dict) -> list[str]:
    args = lapt_args(model, train, work, hp, procedure, objective)
    return [*args, "--n-source-rows", str(N_SRC)] if procedure == "EEVE" else args


def _launch(n: int, args: list[str], kill_at: int | None = None) -> subprocess.CompletedProcess:
    """The LAPT command line as the rule runs it: n processes under torchrun, or one plain process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    if kill_at is not None:
        env[testhooks.KILL_AT_STEP_ENV] = str(kill_at)
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}"] if n > 1 else []
    cmd = [sys.executable, *launcher, "-m", "workflow_scripts.lapt", *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def _assert_close_states(a: dict, b: dict, lr: float = HP["lr"]) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        diff = (a[k].double() - b[k].double()).abs()
        assert diff.max() <= STEP_SHARE * lr, f"{k}: an element differs by {diff.max():.3g}"
        close = (diff <= CLOSE).double().mean()
        assert close >= CLOSE_SHARE, f"{k}: only {close:.4%} of the elements within {CLOSE}"


# ----------------------------------------------------------------------------------------------- the local pieces


def test_micro_share_gives_every_rank_the_same_number_of_passes():
    blocks = torch.arange(5 * 3).view(5, 3)
    batches = [blocks[:2], blocks[2:4], blocks[4:]]
    one = list(shard.micro_share(batches, 2, shard.Ranks()))
    assert [b.tolist() for b, _ in one] == [b.tolist() for b in batches] and {w for _, w in one} == {1.0}
    r0 = list(shard.micro_share(batches, 2, shard.Ranks(0, 2, sharded=True)))
    r1 = list(shard.micro_share(batches, 2, shard.Ranks(1, 2, sharded=True)))
    assert [b.tolist() for b, _ in r0] == [blocks[:2].tolist(), blocks[2:3].tolist()]
    assert [w for _, w in r0] == [1.0, 1.0]
    # rank 1 holds blocks 3-4, one pass; the second pass repeats a block with weight 0 (no gradient, no loss)
    assert [b.tolist() for b, _ in r1] == [blocks[3:5].tolist(), blocks[:1].tolist()]
    assert [w for _, w in r1] == [1.0, 0.0]
    seen = torch.cat([b for b, w in r0 + r1 if w]).tolist()
    assert sorted(map(tuple, seen)) == sorted(map(tuple, blocks.tolist()))  # every block once over the ranks


def test_local_rows_follow_fsdp_dim0_chunks():
    # torch.chunk of 10 rows over 4 ranks: rows 0-2, 3-5, 6-8, 9; over 2: rows 0-4, 5-9
    assert [shard.frozen_rows_held(10, 7, shard.Ranks(r, 4, sharded=True)) for r in range(4)] == [3, 3, 1, 0]
    assert [shard.frozen_rows_held(10, 7, shard.Ranks(r, 2, sharded=True)) for r in range(2)] == [5, 2]
    assert [len(c) for c in torch.zeros(10).chunk(4)] == [3, 3, 3, 1]
    w = torch.zeros(10, 2)
    assert shard.local_rows(w, 7, shard.Ranks()) == (w, 7)


# ------------------------------------------------------------------------------------------- two processes vs one


@pytest.mark.slow  # two torchrun launches of two processes, two one-process runs
@pytest.mark.parametrize(("procedure", "tied", "objective"), [("2x2LS", True, "mtp"), ("full", False, "clm")])
def test_two_processes_match_one(tmp_path, tiny_llama_dir, untied_llama_dir, thai_file, procedure, tied, objective):
    src = tiny_llama_dir if tied else untied_llama_dir
    hp = {**HP, "max_steps": 3}
    one, two = tmp_path / "one", tmp_path / "two"
    lapt.main(_cli(src, thai_file, one, procedure, objective, hp))
    done = _launch(2, _cli(src, thai_file, two, procedure, objective, hp))
    assert done.returncode == 0, done.stderr[-4000:]
    source, ref, got = model_state(src), model_state(one / "out"), model_state(two / "out")
    _assert_close_states(got, ref)
    frozen = [k for k in source if torch.equal(source[k], ref[k])]
    assert all(torch.equal(got[k], source[k]) for k in frozen)  # what one process leaves alone, two leave alone
    if procedure == "2x2LS":
        assert any(".layers.2." in k for k in frozen)  # the middle layers are frozen
    stats, ref_stats = json.loads((two / "stats.json").read_text()), json.loads((one / "stats.json").read_text())
    assert stats["processes"] == 2 and ref_stats["processes"] == 1
    assert stats["tokens_seen"] == ref_stats["tokens_seen"] and stats["steps"] == ref_stats["steps"] == 3
    assert stats["final_loss"] == pytest.approx(ref_stats["final_loss"], rel=1e-4)
    # Each process holds half of the weights, gradients and Adam states (every dim 0 here is even), as
    # workflow_scripts.gpu predicts for the same shape on 2 GPUs.
    shape = shape_from_config(AutoConfig.from_pretrained(src))
    est = estimate(shape, procedure, 16, 2, objective=objective, shards=2)["per_stage"][0]
    held, ref_held = stats["stages"][0]["measured_bytes"], ref_stats["stages"][0]["measured_bytes"]
    for term in ("weights", "gradients", "optimizer"):
        assert held[term] == ref_held[term] / 2 == est[term], term
    assert not (two / "ckpt").exists()


@pytest.mark.slow  # a killed two-process run resumed on one process, and a one-process reference
def test_eeve_on_two_processes_keeps_frozen_rows_and_resumes_on_one(tmp_path, untied_llama_dir, thai_file):
    hp = {**HP, "max_steps": 7}  # one step per EEVE stage
    ref, run = tmp_path / "ref", tmp_path / "run"
    lapt.main(_cli(untied_llama_dir, thai_file, ref, "EEVE", "clm", hp))
    # Killed at the end of step 5 (stage 5, new input rows + all output rows), after its checkpoint.
    killed = _launch(2, _cli(untied_llama_dir, thai_file, run, "EEVE", "clm", hp), kill_at=5)
    assert killed.returncode != 0
    saved = lapt.load_checkpoint(run / "ckpt" / lapt.CHECKPOINT_FILE)
    assert saved["step"] == 5 and saved["stage"] == 4
    source = model_state(untied_llama_dir)
    emb = saved["trainable"][EMB]
    assert torch.equal(emb[:N_SRC], source[EMB][:N_SRC])  # stages 1-5 never train the source input rows
    assert not torch.equal(emb[N_SRC:], source[EMB][N_SRC:])
    assert not torch.equal(saved["trainable"][HEAD][:N_SRC], source[HEAD][:N_SRC])  # stages 4-5: all output rows

    assert _launch(1, _cli(untied_llama_dir, thai_file, run, "EEVE", "clm", hp)).returncode == 0
    stats = json.loads((run / "stats.json").read_text())
    assert stats["resumed_from"] == [5] and stats["processes"] == 1
    _assert_close_states(model_state(run / "out"), model_state(ref / "out"))


@pytest.mark.slow  # a killed one-process run resumed on two processes, and a one-process reference
def test_one_process_checkpoint_resumes_on_two(tmp_path, tiny_llama_dir, thai_file):
    hp = {**HP, "max_steps": 4}
    ref, run = tmp_path / "ref", tmp_path / "run"
    lapt.main(_cli(tiny_llama_dir, thai_file, ref, "2x2LS", "mtp", hp))
    killed = _launch(1, _cli(tiny_llama_dir, thai_file, run, "2x2LS", "mtp", hp), kill_at=2)
    assert killed.returncode != 0 and lapt.load_checkpoint(run / "ckpt" / lapt.CHECKPOINT_FILE)["step"] == 2
    resumed = _launch(2, _cli(tiny_llama_dir, thai_file, run, "2x2LS", "mtp", hp))
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    stats = json.loads((run / "stats.json").read_text())
    assert stats["resumed_from"] == [2] and stats["processes"] == 2
    _assert_close_states(model_state(run / "out"), model_state(ref / "out"))


@pytest.mark.slow  # a torchrun launch of two processes and a one-process run, each measuring three curve points
def test_two_processes_measure_the_curve_of_one(tmp_path, tiny_llama_dir, thai_file, thai_lines):
    # Every process takes part in each measurement (an FSDP forward gathers from all of them); rank 0 writes.
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(thai_lines[100:120]) + "\n", encoding="utf-8")
    hp, curve = {**HP, "max_steps": 2}, ["--curve-points", "3", "--curve-text", str(heldout), "--curve-n", "10"]
    one, two = tmp_path / "one", tmp_path / "two"
    lapt.main([*_cli(tiny_llama_dir, thai_file, one, "2x2LS", "mtp", hp), *curve, "--curve", str(one / "c.tsv")])
    done = _launch(
        2, [*_cli(tiny_llama_dir, thai_file, two, "2x2LS", "mtp", hp), *curve, "--curve", str(two / "c.tsv")]
    )
    assert done.returncode == 0, done.stderr[-4000:]
    ref = [line.split("\t") for line in (one / "c.tsv").read_text().splitlines()[1:]]
    got = [line.split("\t") for line in (two / "c.tsv").read_text().splitlines()[1:]]
    assert [r[0] for r in got] == ["0", "1", "2"] and [r[:2] for r in got] == [r[:2] for r in ref]
    assert [float(r[2]) for r in got] == pytest.approx([float(r[2]) for r in ref], abs=1e-5)  # summation order


def test_lora_procedures_refuse_to_shard(tmp_path, tiny_llama_dir, thai_file, monkeypatch):
    monkeypatch.setattr(shard, "init_ranks", lambda: shard.Ranks(0, 2, sharded=True))
    with pytest.raises(ValueError, match="adds LoRA modules"):
        lapt.train(
            tiny_llama_dir,
            thai_file,
            tmp_path / "out",
            procedure="LoRA",
            seq_len=16,
            hparams={"max_steps": 1},
            checkpoint_dir=tmp_path / "ckpt",
        )
