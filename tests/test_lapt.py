"""LAPT: trained parameter sets, kill-and-resume, block construction, and a falling loss on real Thai text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import lapt_args, model_state
from workflow_scripts import lapt

REPO = Path(__file__).resolve().parents[1]
LAYER_KEYS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


pytestmark = pytest.mark.usefixtures("one_thread")  # deterministic CPU sums for the resume comparisons


# ------------------------------------------------------------------------------------------------ 1. trained set


def _expected_changed(keys: list[str], procedure: str) -> set[str]:
    always = {"model.embed_tokens.weight", "lm_head.weight"}
    if procedure == "full":
        return set(keys)
    if procedure == "2x2LS":  # layers 0, 1, 4, 5 of 6, the final norm, embeddings and head
        layers = tuple(f"model.layers.{i}." for i in (0, 1, 4, 5))
        return {k for k in keys if k.startswith(layers)} | always | {"model.norm.weight"}
    if procedure == "LoRA":  # merged LoRA deltas move every linear layer; norms stay
        return {k for k in keys if any(f".{name}." in k for name in LAYER_KEYS)} | always
    raise AssertionError(procedure)


@pytest.mark.parametrize(
    ("procedure", "tied", "objective", "grad_ckpt"),
    [
        ("2x2LS", True, "clm", False),
        ("2x2LS", False, "mtp", True),  # gradient checkpointing (the GPU setting) must not change the trained set
        ("full", True, "clm", False),
        ("full", False, "clm", False),
        ("LoRA", True, "clm", False),
        ("LoRA", False, "mtp", True),
    ],
)
def test_changed_parameters_are_exactly_the_procedure_set(
    tmp_path, tiny_llama_dir, untied_llama_dir, thai_file, procedure, tied, objective, grad_ckpt
):
    src = tiny_llama_dir if tied else untied_llama_dir
    out = tmp_path / "out"
    # Weight decay > 0 and no warmup: decoupled decay would move every entry of any parameter the optimizer holds.
    hp = {
        "max_steps": 2,
        "batch_size": 2,
        "lr": 1e-3,
        "weight_decay": 0.1,
        "warmup_steps": 0,
        "gradient_checkpointing": grad_ckpt,
    }
    stats = lapt.train(
        src,
        thai_file,
        out,
        procedure=procedure,
        objective=objective,
        seq_len=16,
        hparams=hp,
        checkpoint_dir=tmp_path / "ckpt",
    )
    before, after = model_state(src), model_state(out)
    assert sorted(after) == sorted(before)  # same architecture; no extra (mtp) head saved
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == _expected_changed(list(before), procedure)
    assert stats["steps"] == 2 and stats["gradient_checkpointing"] is grad_ckpt

    # Parameter counts by hand: hidden 64, MLP 128, vocab 49152, 6 layers, tied or untied head.
    per_layer = 4 * 64 * 64 + 3 * 64 * 128 + 2 * 64
    emb = 49152 * 64
    head = 0 if tied else emb
    mtp = emb if objective == "mtp" else 0
    base = 6 * per_layer + emb + head + 64
    if procedure == "2x2LS":
        assert stats["trainable_parameters"] == 4 * per_layer + emb + head + 64 + mtp
        assert stats["total_parameters"] == base + mtp
    elif procedure == "full":
        assert stats["trainable_parameters"] == stats["total_parameters"] == base + mtp
    else:  # rank 8 on q, k, v, o (64->64) and gate, up (64->128), down (128->64): r * (in + out) each
        lora = 6 * 8 * (4 * (64 + 64) + 3 * (64 + 128))
        assert stats["trainable_parameters"] == lora + emb + head + mtp
        assert stats["total_parameters"] == base + lora + mtp


# --------------------------------------------------------------------------------------------- 2. kill and resume


def _cli(model: Path, train: Path, work: Path, hp: dict, procedure: str = "LoRA", objective: str = "mtp") -> list[str]:
    return lapt_args(model, train, work, hp, procedure, objective)


def _loss_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    assert lines[0] == "step\tepoch\tlr\tloss\ttokens_seen\tstage"
    return [line.split("\t") for line in lines[1:]]


@pytest.mark.slow  # three training runs and a subprocess
def test_kill_and_resume_matches_uninterrupted_run(tmp_path, tiny_llama_dir, thai_lines):
    # LoRA + mtp: dropout makes the result depend on the restored RNG state, the extra head on the saved trainables.
    # grad_accum 2 and two epochs exercise the step -> (epoch, micro-batch) mapping on resume.
    hp = {"batch_size": 2, "grad_accum": 2, "lr": 1e-3, "checkpoint_every": 3, "log_every": 1}
    thai_file = tmp_path / "train.txt"
    thai_file.write_text("\n".join(thai_lines[:5]) + "\n", encoding="utf-8")  # about 17 blocks: 5 steps an epoch
    ref, run = tmp_path / "ref", tmp_path / "run"
    lapt.main(_cli(tiny_llama_dir, thai_file, ref, hp))
    ref_stats = json.loads((ref / "stats.json").read_text())
    total = ref_stats["steps"]
    assert total > 6 and ref_stats["steps_per_epoch"] * 2 == total and ref_stats["resumed_from"] == []
    assert not (ref / "ckpt").exists()  # removed once all outputs are written

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "workflow_scripts.lapt", *_cli(tiny_llama_dir, thai_file, run, hp)]
    ckpt = run / "ckpt" / lapt.CHECKPOINT_FILE
    # Killed at the end of step 4, one step after the checkpoint of step 3: that step is lost and redone on resume.
    killed = subprocess.run(cmd, cwd=REPO, env={**env, lapt.KILL_AT_STEP_ENV: "4"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    assert ckpt.exists(), "the run did not write its checkpoint of step 3"
    killed_at = lapt.load_checkpoint(ckpt)["step"]
    assert killed_at == 3
    assert 0 < killed_at < total and not (run / "out").exists()

    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    stats = json.loads((run / "stats.json").read_text())
    assert stats["resumed_from"] == [killed_at] and stats["steps"] == total
    assert stats["tokens_seen"] == ref_stats["tokens_seen"]
    ref_rows, rows = _loss_rows(ref / "loss.tsv"), _loss_rows(run / "loss.tsv")
    assert [r[:3] for r in rows] == [r[:3] for r in ref_rows]  # step, epoch, lr: same schedule
    assert [float(r[3]) for r in rows] == pytest.approx([float(r[3]) for r in ref_rows], rel=1e-5)
    ref_state, state = model_state(ref / "out"), model_state(run / "out")
    assert sorted(state) == sorted(ref_state)
    for k in ref_state:
        torch.testing.assert_close(state[k], ref_state[k], rtol=1e-6, atol=1e-7, msg=k)
    assert not torch.equal(model_state(tiny_llama_dir)["model.embed_tokens.weight"], state["model.embed_tokens.weight"])


@pytest.mark.slow  # three training runs, two of them subprocesses
def test_usr1_before_the_time_limit_checkpoints_exits_and_resumes_to_the_same_result(
    tmp_path, tiny_llama_dir, thai_lines
):
    # Slurm's --signal=USR1@600 (rules/lapt.smk) arrives during some step: the step is finished, checkpointed, the
    # process exits non-zero without a traceback, and the rerun reaches what an uninterrupted run reaches.
    hp = {"batch_size": 2, "grad_accum": 2, "lr": 1e-3, "checkpoint_every": None, "checkpoint_minutes": None}
    thai_file = tmp_path / "train.txt"
    thai_file.write_text("\n".join(thai_lines[:5]) + "\n", encoding="utf-8")
    ref, run = tmp_path / "ref", tmp_path / "run"
    lapt.main(_cli(tiny_llama_dir, thai_file, ref, hp))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "workflow_scripts.lapt", *_cli(tiny_llama_dir, thai_file, run, hp)]
    stopped = subprocess.run(
        cmd, cwd=REPO, env={**env, lapt.SIGNAL_AT_STEP_ENV: "3:USR1"}, capture_output=True, text=True
    )
    assert stopped.returncode == 1 and "stopped on request after step 3" in stopped.stderr, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr and not (run / "out").exists()
    assert lapt.load_checkpoint(run / "ckpt" / lapt.CHECKPOINT_FILE)["step"] == 3  # by the signal, not by steps
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    stats = json.loads((run / "stats.json").read_text())
    assert stats["resumed_from"] == [3]
    assert [float(r[3]) for r in _loss_rows(run / "loss.tsv")] == pytest.approx(
        [float(r[3]) for r in _loss_rows(ref / "loss.tsv")], rel=1e-5
    )
    ref_state, state = model_state(ref / "out"), model_state(run / "out")
    for k in ref_state:
        torch.testing.assert_close(state[k], ref_state[k], rtol=1e-6, atol=1e-7, msg=k)


@pytest.mark.slow  # two training processes started by bash: 2-6 s of CPU
def test_rule_shell_survives_usr1_sent_to_its_whole_process_group(tmp_path, tiny_llama_dir, thai_file):
    # Slurm signals every process of the job step: the rule's shell (Snakemake's shell prefix) must ignore USR1 and
    # leave it to the trainer, which checkpoints and exits 1; the shell then exits with the trainer's status. The
    # trainer is not the shell's last command here, so the shell waits for it rather than exec'ing it.
    import re
    import shlex

    prefix = re.search(r'shell\.prefix\(\s*"([^"]*)"', (REPO / "rules" / "common.smk").read_text()).group(1)
    hp = {"batch_size": 2, "max_steps": 4, "checkpoint_every": None}
    cli = _cli(tiny_llama_dir, thai_file, tmp_path, hp, "2x2LS", "clm")
    trainer = " ".join(shlex.quote(x) for x in [sys.executable, "-m", "workflow_scripts.lapt", *cli])
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        lapt.SIGNAL_AT_STEP_ENV: "2:USR1:group",
    }
    done = subprocess.run(
        ["bash", "-c", f"{prefix}{trainer}; echo trained"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        start_new_session=True,
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])  # -10: the shell died of the signal
    assert "stopped on request after step 2" in done.stderr and "trained" not in done.stdout
    assert lapt.load_checkpoint(tmp_path / "ckpt" / lapt.CHECKPOINT_FILE)["step"] == 2


def test_sigterm_checkpoints_and_stops(tmp_path, tiny_llama_dir, thai_file, monkeypatch):
    real_train, handler_before = lapt.train, signal.getsignal(signal.SIGTERM)

    def train_after_sigterm(*args, **kwargs):  # main has installed its handler: the signal arrives before step 1
        os.kill(os.getpid(), signal.SIGTERM)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(lapt.cli, "train", train_after_sigterm)  # the name main calls
    cli = _cli(tiny_llama_dir, thai_file, tmp_path, {"max_steps": 3, "batch_size": 2}, "2x2LS", "clm")
    with pytest.raises(lapt.TrainingInterrupted, match="after step 1 of 3"):
        lapt.main(cli)
    assert signal.getsignal(signal.SIGTERM) is handler_before
    assert lapt.load_checkpoint(tmp_path / "ckpt" / lapt.CHECKPOINT_FILE)["step"] == 1
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    lapt.main(cli)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["resumed_from"] == [1] and stats["steps"] == 3 and not (tmp_path / "ckpt").exists()


def test_completed_checkpoint_is_reused_and_mismatch_refused(tmp_path, tiny_llama_dir, thai_file):
    kw = dict(procedure="2x2LS", seq_len=16, checkpoint_dir=tmp_path / "ckpt")
    hp = {"max_steps": 2, "batch_size": 2}
    first = lapt.train(tiny_llama_dir, thai_file, tmp_path / "a", hparams=hp, **kw)
    # The checkpoint of a finished run (crash after training, before the outputs) only rewrites the outputs.
    again = lapt.train(tiny_llama_dir, thai_file, tmp_path / "b", hparams={**hp, "log_every": 5}, **kw)
    assert again["resumed_from"] == [2] and again["final_loss"] == first["final_loss"]
    with pytest.raises(ValueError, match=r"different \['hparams'\].*delete"):
        lapt.train(tiny_llama_dir, thai_file, tmp_path / "c", hparams={**hp, "lr": 2e-4}, **kw)


# ------------------------------------------------------------------------------------------ 3. blocks and hparams


def test_pack_blocks_joins_with_eos_and_drops_remainder():
    blocks, n = lapt.pack_blocks([[1, 2, 3], [4, 5], [6, 7, 8, 9]], eos_id=0, seq_len=4)
    # stream 1 2 3 0 4 5 0 6 7 8 9: 11 tokens, two full blocks, 7 8 9 dropped
    assert n == 11
    assert blocks == [[1, 2, 3, 0], [4, 5, 0, 6]]
    assert lapt.pack_blocks([[1, 2], [3, 4]], eos_id=9, seq_len=5) == ([[1, 2, 9, 3, 4]], 5)


def test_build_blocks_with_real_tokenizer(smollm2_tokenizer_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    lines = ["Hello world", "", "สวัสดีครับ"]  # the blank line is skipped
    a = tok("Hello world", add_special_tokens=False)["input_ids"]
    b = tok("สวัสดีครับ", add_special_tokens=False)["input_ids"]
    stream = [*a, tok.eos_token_id, *b]
    blocks, n = lapt.build_blocks(lines, tok, seq_len=3)
    assert n == len(a) + 1 + len(b) == len(stream)
    assert blocks.shape == (n // 3, 3)
    assert blocks.flatten().tolist() == stream[: 3 * (n // 3)]
    assert tok.bos_token_id not in blocks.flatten().tolist() or tok.bos_token_id == tok.eos_token_id

    with pytest.raises(ValueError, match=rf"D\.txt: 2 sentences give {n} tokens .*seq_len={n + 1}.*smaller seq_len"):
        lapt.build_blocks(lines, tok, seq_len=n + 1, source="D.txt")


def test_schedule_lengths_and_hparams():
    # Table 13: 100 warmup steps by default; a config that sets warmup_ratio (and no warmup_steps) gets the ratio.
    assert lapt.resolve_hparams({})["warmup_steps"] == 100
    assert lapt.schedule_lengths(45, lapt.resolve_hparams({}))["warmup_steps"] == 100
    assert lapt.hparams.warmup_note(100, 6) is not None and lapt.hparams.warmup_note(5, 6) is None
    hp = lapt.resolve_hparams({"batch_size": 8, "grad_accum": 2, "warmup_ratio": 0.05})
    # 45 blocks: 6 micro-batches of 8 (last one 5), 3 optimizer steps per epoch, 2 epochs; warmup ceil(0.05 * 6) = 1
    assert lapt.schedule_lengths(45, hp) == {
        "micro_per_epoch": 6,
        "steps_per_epoch": 3,
        "total_steps": 6,
        "warmup_steps": 1,
    }
    capped = lapt.schedule_lengths(45, {**hp, "max_steps": 4, "warmup_steps": 2})
    assert capped["total_steps"] == 4 and capped["warmup_steps"] == 2
    # 1.5 epochs of 3 steps: ceil(4.5) = 5 steps, warmup ceil(0.05 * 5) = 1
    assert lapt.schedule_lengths(45, {**hp, "epochs": 1.5})["total_steps"] == 5
    with pytest.raises(ValueError, match=r"unknown LAPT hparams.*'epoch'"):
        lapt.resolve_hparams({"epoch": 3})


# ------------------------------------------------------------------------------------------------ 4. loss falls


@pytest.mark.slow  # many training steps
def test_loss_falls_on_repetitive_thai_text(tmp_path, tiny_llama_dir, thai_lines):
    train = tmp_path / "th.txt"
    train.write_text("\n".join(thai_lines[:20] * 10) + "\n", encoding="utf-8")
    hp = {"max_steps": 20, "batch_size": 4, "lr": 3e-3, "warmup_steps": 0}
    stats = lapt.train(
        tiny_llama_dir,
        train,
        tmp_path / "out",
        procedure="2x2LS",
        seq_len=32,
        hparams=hp,
        checkpoint_dir=tmp_path / "ckpt",
        loss_curve=tmp_path / "loss.tsv",
    )
    losses = [float(r[3]) for r in _loss_rows(tmp_path / "loss.tsv")]
    assert len(losses) == 20 and losses[0] == pytest.approx(stats["first_loss"])
    # A random 49152-way model starts near ln(49152) = 10.8; memorizing 20 repeated sentences must bring it far below.
    assert 10.0 < losses[0] < 11.5
    assert sum(losses[-5:]) / 5 < losses[0] - 2.0


def test_table13_dropout_maps_onto_the_architecture():
    """Table 13 "Dropout 0.05" / "Attention dropout 0.0": set where the config has such fields; Llama has only the
    attention one, GPT-2 style models get resid/embd dropout."""
    from transformers import GPT2Config, LlamaConfig

    from workflow_scripts.lapt.hparams import DEFAULT_HPARAMS, dropout_overrides

    assert (DEFAULT_HPARAMS["dropout"], DEFAULT_HPARAMS["attention_dropout"]) == (0.05, 0.0)
    assert (DEFAULT_HPARAMS["adam_beta1"], DEFAULT_HPARAMS["adam_beta2"], DEFAULT_HPARAMS["adam_eps"]) == (
        0.9,
        0.999,
        1e-8,
    )
    assert dropout_overrides(LlamaConfig(), DEFAULT_HPARAMS) == {"attention_dropout": 0.0}
    gpt2 = {"resid_pdrop": 0.05, "embd_pdrop": 0.05, "attn_pdrop": 0.0}
    assert dropout_overrides(GPT2Config(), DEFAULT_HPARAMS) == gpt2
