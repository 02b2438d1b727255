"""Multi-stage LAPT (2-stage, EEVE) and bf16 frozen weights: exact trained sets per stage, resume across stages."""

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
EMB, HEAD = "model.embed_tokens.weight", "lm_head.weight"
N_ROWS = 49152  # the tiny model's vocabulary (SmolLM2's tokenizer)
N_SRC = N_ROWS - 24  # pretend the last 24 rows are new tokens
PAD = 2  # the tiny model's pad_token_id, a zero row of the input embeddings


pytestmark = pytest.mark.usefixtures("one_thread")  # deterministic CPU sums for the resume comparisons


def _changed_rows(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> dict[str, object]:
    """Per changed tensor: the set of changed rows for the two vocabulary matrices, True for any other tensor."""
    out: dict[str, object] = {}
    for k, b in before.items():
        if torch.equal(b, after[k]):
            continue
        out[k] = set(torch.nonzero((b != after[k]).any(dim=1)).flatten().tolist()) if k in (EMB, HEAD) else True
    return out


# Weight decay > 0 and no warmup: decoupled decay moves every entry the optimizer holds, even rows without gradient.
HP = {"batch_size": 2, "lr": 1e-3, "weight_decay": 0.1, "warmup_steps": 0, "checkpoint_every": 1000}


def test_stage_ends_split_the_budget():
    assert lapt.stage_ends(10, 1, None) == [10]
    assert lapt.stage_ends(10, 2, None) == [5, 10]
    assert lapt.stage_ends(10, 3, None) == [3, 7, 10]  # 3.33 -> 3, 6.67 -> 7
    assert lapt.stage_ends(10, 2, [1, 4]) == [2, 10]
    assert lapt.stage_ends(7, 7, None) == [1, 2, 3, 4, 5, 6, 7]
    assert lapt.stage_ends(8, 2, [0.01, 1]) == [1, 8]  # every stage gets at least one step
    assert lapt.stage_ends(8, 2, [1, 0.01]) == [7, 8]
    with pytest.raises(ValueError, match="3 optimizer steps cannot be split into 7 stages"):
        lapt.stage_ends(3, 7, None)
    with pytest.raises(ValueError, match="stage_split must be null or 2 positive numbers"):
        lapt.stage_ends(10, 2, [1, 1, 1])


# ------------------------------------------------------------------------------------------------------ EEVE


def _eeve_expected(stage: int, tied: bool, layer_keys: list[str]) -> dict[str, object]:
    """Rows (or tensors) EEVE stage ``stage`` (1-7) must change, by hand from EEVE §2.3's stage list."""
    new, every = set(range(N_SRC, N_ROWS)), set(range(N_ROWS))
    rows = {1: (new, None), 2: (None, new), 3: (new, new), 4: (None, every), 5: (new, every), 6: (every, every)}
    inp, outp = rows.get(stage, (None, None))
    internal = stage >= 6
    expected: dict[str, object] = {k: True for k in layer_keys} if internal else {}
    if tied:  # one shared matrix: the union of both sides' rows
        rows = (inp or set()) | (outp or set())
        if rows:
            expected[EMB] = rows
    else:
        if inp:
            # Row 2 (the pad token) is all zeros and nn.Embedding gives its padding_idx no gradient: decay of 0 is 0.
            expected[EMB] = inp - {PAD}
        if outp:
            expected[HEAD] = outp
    return expected


@pytest.mark.slow  # seven stages, resumed at each boundary
@pytest.mark.parametrize(("tied", "objective"), [(False, "clm"), (True, "mtp")])
def test_eeve_changes_exactly_each_stage_rows_and_resumes_across_every_boundary(
    tmp_path, tiny_llama_dir, untied_llama_dir, thai_file, tied, objective
):
    src = tiny_llama_dir if tied else untied_llama_dir
    source = model_state(src)
    if tied:  # the state dict repeats the shared matrix as lm_head.weight; the checkpoint names it once
        del source[HEAD]
    layer_keys = [k for k in source if k not in (EMB, HEAD)]  # every layer tensor and the final norm
    kw = dict(procedure="EEVE", objective=objective, seq_len=16, n_source_rows=N_SRC)
    hp = {**HP, "max_steps": 7}
    ckpt = tmp_path / "ckpt"
    # Stop after every step: each run resumes from the previous checkpoint, i.e. across every stage boundary.
    prev = dict(source)
    for stage in range(1, 8):
        if stage < 7:
            with pytest.raises(lapt.TrainingInterrupted, match=f"after step {stage} of 7"):
                lapt.train(
                    src, thai_file, tmp_path / "out", hparams=hp, checkpoint_dir=ckpt, should_stop=lambda: True, **kw
                )
        else:
            stats = lapt.train(src, thai_file, tmp_path / "out", hparams=hp, checkpoint_dir=ckpt, **kw)
        saved = lapt.load_checkpoint(ckpt / lapt.CHECKPOINT_FILE)
        assert saved["step"] == stage and saved["stage"] == stage - 1
        state = {**prev, **{k: v for k, v in saved["trainable"].items() if k in source}}
        assert _changed_rows(prev, state) == _eeve_expected(stage, tied, layer_keys), f"stage {stage}"
        prev = state
    assert stats["resumed_from"] == [1, 2, 3, 4, 5, 6] and [s["name"] for s in stats["stages"]] == [
        stage.name for stage in lapt.PROCEDURES["EEVE"].stages
    ]
    final = model_state(tmp_path / "out")
    assert all(torch.equal(final[k], prev[k]) for k in source)  # the saved model is the last checkpoint's state
    # Trainable counts by hand (hidden 64): stage 1 trains the 24 new input rows (+ the mtp head when present).
    mtp = N_ROWS * 64 if objective == "mtp" else 0
    assert stats["stages"][0]["trainable_parameters"] == 24 * 64 + mtp
    assert stats["stages"][3]["trainable_parameters"] == N_ROWS * 64 + mtp

    # An uninterrupted run reaches the same model.
    ref = lapt.train(src, thai_file, tmp_path / "ref", hparams=hp, checkpoint_dir=tmp_path / "ckpt_ref", **kw)
    assert ref["resumed_from"] == [] and ref["final_loss"] == pytest.approx(stats["final_loss"], rel=1e-5)
    ref_state = model_state(tmp_path / "ref")
    for k in source:
        torch.testing.assert_close(final[k], ref_state[k], rtol=1e-5, atol=1e-6, msg=k)


def test_eeve_needs_the_source_vocabulary_size(tmp_path, untied_llama_dir, thai_file):
    kw = dict(procedure="EEVE", seq_len=16, hparams={**HP, "max_steps": 7}, checkpoint_dir=tmp_path / "c")
    with pytest.raises(ValueError, match=r"EEVE .* needs n_source_rows"):
        lapt.train(untied_llama_dir, thai_file, tmp_path / "o", **kw)
    with pytest.raises(ValueError, match="between 1 and 49151, got 49152"):
        lapt.train(untied_llama_dir, thai_file, tmp_path / "o", n_source_rows=N_ROWS, **kw)


@pytest.mark.slow  # a two-stage training run through the command line: 2-6 s of CPU
def test_cli_reads_source_rows_from_the_init_report(tmp_path, untied_llama_dir, thai_file):
    report = tmp_path / "init.report.json"
    report.write_text(json.dumps({"vocab": {"source": N_SRC - 3, "source_matrix_rows": N_SRC}}))
    lapt.main(
        [
            "--model",
            str(untied_llama_dir),
            "--train",
            str(thai_file),
            "--procedure",
            "EEVE",
            "--seq-len",
            "16",
            "--hparams",
            json.dumps({**HP, "max_steps": 7}),
            "--out",
            str(tmp_path / "out"),
            "--stats",
            str(tmp_path / "stats.json"),
            "--loss-curve",
            str(tmp_path / "loss.tsv"),
            "--checkpoint-dir",
            str(tmp_path / "ckpt"),
            "--init-report",
            str(report),
            "--threads",
            "1",
        ]
    )
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["n_source_rows"] == N_SRC and stats["steps"] == 7
    changed = _changed_rows(model_state(untied_llama_dir), model_state(tmp_path / "out"))
    assert changed[EMB] == set(range(N_ROWS)) - {PAD}  # stage 6 trains all rows


# --------------------------------------------------------------------------------------------------- 2-stage


def _loss_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    header = lines[0].split("\t")
    assert header == ["step", "epoch", "lr", "loss", "tokens_seen", "stage"]
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@pytest.mark.slow  # two stages, resumed
@pytest.mark.parametrize(("tied", "objective"), [(True, "clm"), (False, "mtp")])
def test_two_stage_trains_embeddings_then_lora_and_resumes_across_the_boundary(
    tmp_path, tiny_llama_dir, untied_llama_dir, thai_file, tied, objective
):
    src = tiny_llama_dir if tied else untied_llama_dir
    source = model_state(src)
    # 6 steps, split 1:2 -> stage 1 = steps 1-2, stage 2 = steps 3-6. LoRA dropout makes stage 2 depend on the RNG.
    hp = {**HP, "max_steps": 6, "stage_split": [1, 2]}
    kw = dict(procedure="2-stage", objective=objective, seq_len=16, hparams=hp)

    ref = lapt.train(
        src, thai_file, tmp_path / "ref", checkpoint_dir=tmp_path / "c_ref", loss_curve=tmp_path / "ref.tsv", **kw
    )
    assert [(s["name"], s["first_step"], s["last_step"]) for s in ref["stages"]] == [
        ("embeddings", 1, 2),
        ("LoRA", 3, 6),
    ]
    # Stage 1 alone: the checkpoint after step 2 holds exactly the embeddings and head (and the mtp head), all moved.
    ckpt = tmp_path / "ckpt"
    calls = iter([False, True, False, True, False, False])  # stop after step 2 (the boundary) and after step 4
    with pytest.raises(lapt.TrainingInterrupted, match="after step 2 of 6"):
        lapt.train(src, thai_file, tmp_path / "out", checkpoint_dir=ckpt, should_stop=lambda: next(calls), **kw)
    saved = lapt.load_checkpoint(ckpt / lapt.CHECKPOINT_FILE)
    assert saved["stage"] == 0
    stage1 = {EMB} | (set() if tied else {HEAD}) | ({"mtp_head.weight"} if objective == "mtp" else set())
    assert set(saved["trainable"]) == stage1
    assert all(not torch.equal(saved["trainable"][k], source[k]) for k in stage1 - {"mtp_head.weight"})
    with pytest.raises(lapt.TrainingInterrupted, match="after step 4 of 6"):
        lapt.train(src, thai_file, tmp_path / "out", checkpoint_dir=ckpt, should_stop=lambda: next(calls), **kw)
    assert lapt.load_checkpoint(ckpt / lapt.CHECKPOINT_FILE)["stage"] == 1
    stats = lapt.train(src, thai_file, tmp_path / "out", checkpoint_dir=ckpt, loss_curve=tmp_path / "run.tsv", **kw)
    assert stats["resumed_from"] == [2, 4] and stats["steps"] == 6

    # Final model: merged LoRA moved every linear layer, embeddings and head trained, norms untouched.
    after = model_state(tmp_path / "out")
    expected = {k for k in source if any(f".{n}." in k for n in LAYER_KEYS)} | {EMB, HEAD}
    assert {k for k in source if not torch.equal(source[k], after[k])} == expected
    ref_state = model_state(tmp_path / "ref")
    for k in source:
        torch.testing.assert_close(after[k], ref_state[k], rtol=1e-5, atol=1e-6, msg=k)

    # The stage split in the loss curve: a stage column and the schedule restarting at full lr in stage 2.
    rows, ref_rows = _loss_rows(tmp_path / "run.tsv"), _loss_rows(tmp_path / "ref.tsv")
    assert [r["stage"] for r in rows] == ["1", "1", "2", "2", "2", "2"]
    lrs = [float(r["lr"]) for r in rows]
    assert lrs[0] == lrs[2] == pytest.approx(1e-3) and lrs[1] < lrs[0] and lrs[3] < lrs[2]
    assert [r["lr"] for r in rows] == [r["lr"] for r in ref_rows]
    assert [float(r["loss"]) for r in rows] == pytest.approx([float(r["loss"]) for r in ref_rows], rel=1e-5)
    # Stage 1 trains embeddings and head only; stage 2 adds LoRA (rank 8 on 7 linear layers in 6 layers).
    emb = N_ROWS * 64 * (1 if tied else 2) + (N_ROWS * 64 if objective == "mtp" else 0)
    lora = 6 * 8 * (4 * (64 + 64) + 3 * (64 + 128))
    assert [s["trainable_parameters"] for s in stats["stages"]] == [emb, emb + lora]


# ------------------------------------------------------------------------------------------------ bf16 weights


def test_bf16_weights_keep_frozen_weights_bit_identical(tmp_path, untied_llama_dir, thai_file):
    # lr 1e-2: a bf16-rounded update must still show on the norm weights (spacing 2**-7 at 1.0).
    hp = {**HP, "max_steps": 2, "lr": 1e-2, "weights_dtype": "bf16"}
    stats = lapt.train(
        untied_llama_dir,
        thai_file,
        tmp_path / "out",
        procedure="2x2LS",
        seq_len=16,
        hparams=hp,
        checkpoint_dir=tmp_path / "ckpt",
    )
    assert stats["precision"].startswith("bf16 autocast, bf16 frozen weights")
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert saved.dtype == torch.bfloat16
    before = {k: v.to(torch.bfloat16) for k, v in model_state(untied_llama_dir).items()}
    after = {k: v.clone() for k, v in saved.state_dict().items()}
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    layers = tuple(f"model.layers.{i}." for i in (0, 1, 4, 5))
    assert changed == {k for k in before if k.startswith(layers)} | {EMB, HEAD, "model.norm.weight"}
    assert 10.0 < stats["first_loss"] < 11.5 and stats["trainable_parameters"] < stats["total_parameters"]


@pytest.mark.slow  # seven stages
def test_eeve_with_lora_layers_trains_lora_in_stages_6_and_7(tmp_path, untied_llama_dir, thai_file):
    hp = {**HP, "max_steps": 7, "eeve_layers": "LoRA"}
    ckpt = tmp_path / "ckpt"
    kw = dict(procedure="EEVE", seq_len=16, hparams=hp, checkpoint_dir=ckpt, n_source_rows=N_SRC)
    calls = iter([False] * 5 + [True, False])  # stop after step 6 (the end of stage 6), then resume into stage 7
    with pytest.raises(lapt.TrainingInterrupted, match="after step 6 of 7"):
        lapt.train(untied_llama_dir, thai_file, tmp_path / "out", should_stop=lambda: next(calls), **kw)
    stage6 = lapt.load_checkpoint(ckpt / lapt.CHECKPOINT_FILE)["trainable"]
    stats = lapt.train(untied_llama_dir, thai_file, tmp_path / "out", **kw)
    stage7 = lapt.load_checkpoint(ckpt / lapt.CHECKPOINT_FILE)["trainable"]
    moved = {k for k in stage6 if not torch.equal(stage6[k], stage7[k])}
    assert moved and all("lora_" in k for k in moved)  # stage 7: LoRA only, embeddings and head frozen
    lora = 6 * 8 * (4 * (64 + 64) + 3 * (64 + 128))
    assert [s["trainable_parameters"] for s in stats["stages"][5:]] == [lora + 2 * N_ROWS * 64, lora]
    source, after = model_state(untied_llama_dir), model_state(tmp_path / "out")
    expected = {k for k in source if any(f".{n}." in k for n in LAYER_KEYS)} | {EMB, HEAD}
    assert {k for k in source if not torch.equal(source[k], after[k])} == expected  # norms never trained


@pytest.mark.slow  # three runs of 16 steps and a subprocess start-up: about 50 s here
def test_sigkill_in_stage_two_resumes_in_stage_two(tmp_path, tiny_llama_dir, thai_file):
    hp = {**HP, "max_steps": 16, "checkpoint_every": 1}  # stages: steps 1-8 embeddings, 9-16 LoRA

    def cli(work: Path) -> list[str]:
        return lapt_args(tiny_llama_dir, thai_file, work, hp, "2-stage")

    lapt.main(cli(tmp_path / "ref"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "workflow_scripts.lapt", *cli(run)]
    ckpt = run / "ckpt" / lapt.CHECKPOINT_FILE
    # The run kills itself right after writing the checkpoint of step 12 (stage 2): no polling, no race with the run.
    killed = subprocess.run(cmd, cwd=REPO, env={**env, lapt.KILL_AT_STEP_ENV: "12"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    saved = lapt.load_checkpoint(ckpt)
    killed_at = saved["step"]
    assert saved["stage"] == 1 and killed_at == 12
    assert 8 < killed_at < 16, "the run was not killed inside stage 2"
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    stats = json.loads((run / "stats.json").read_text())
    assert stats["resumed_from"] == [killed_at] and stats["steps"] == 16
    assert [s["name"] for s in stats["stages"]] == ["embeddings", "LoRA"]
    ref_rows, rows = _loss_rows(tmp_path / "ref" / "loss.tsv"), _loss_rows(run / "loss.tsv")
    assert [(r["step"], r["lr"], r["stage"]) for r in rows] == [(r["step"], r["lr"], r["stage"]) for r in ref_rows]
    assert [float(r["loss"]) for r in rows] == pytest.approx([float(r["loss"]) for r in ref_rows], rel=1e-5)
    ref_state, state = model_state(tmp_path / "ref" / "out"), model_state(run / "out")
    for k in ref_state:
        torch.testing.assert_close(state[k], ref_state[k], rtol=1e-5, atol=1e-6, msg=k)
