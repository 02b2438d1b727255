"""LAPT's pieces one at a time: checkpoint file and round trip, resume into a later stage, stage and batch layout."""

from __future__ import annotations

import pickle
import random
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from workflow_scripts import lapt
from workflow_scripts.lapt import checkpoint, data, loop, outputs

pytestmark = pytest.mark.usefixtures("one_thread")  # bit-identical CPU sums when two states take the same step

EMB = "model.embed_tokens.weight"
# Weight decay > 0 and no warmup, as in test_lapt_stages: every entry the optimizer holds moves every step.
HP = {"batch_size": 2, "lr": 1e-3, "weight_decay": 0.1, "warmup_steps": 0, "checkpoint_every": 1000}


# --------------------------------------------------------------------------------------------- checkpoint file


def test_checkpoint_tree_round_trip_keeps_types(tmp_path):
    tree = {
        "fp32": torch.randn(3, 4),
        "bf16": torch.randn(2, 2).to(torch.bfloat16),
        "scalar": torch.tensor(7.0),
        "bytes": torch.arange(5, dtype=torch.uint8),
        "tuple": (0.9, 0.999),
        "int_keys": {0: {"exp_avg": torch.ones(2)}, 1: {"exp_avg": torch.zeros(2)}},
        "nested": [{"lr": 1e-4, "params": [0, 1], "fused": None, "ok": True}],
        "text": "stage 2",
        "nan": float("nan"),
    }
    path = tmp_path / "c.safetensors"
    checkpoint.save_checkpoint(path, tree)
    back = checkpoint.load_checkpoint(path)
    assert set(back) == set(tree) and back["tuple"] == (0.9, 0.999) and isinstance(back["tuple"], tuple)
    assert sorted(back["int_keys"]) == [0, 1] and torch.equal(back["int_keys"][1]["exp_avg"], torch.zeros(2))
    assert back["nested"] == tree["nested"] and back["text"] == "stage 2" and np.isnan(back["nan"])
    for k in ("fp32", "bf16", "scalar", "bytes"):
        assert back[k].dtype == tree[k].dtype and torch.equal(back[k], tree[k]), k


def test_failed_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt" / lapt.CHECKPOINT_FILE
    checkpoint.save_checkpoint(path, {"step": 3, "w": torch.ones(2)})
    with pytest.raises(TypeError, match="'step' is a set"):
        checkpoint.save_checkpoint(path, {"step": {4}, "w": torch.zeros(2)})
    assert checkpoint.load_checkpoint(path)["step"] == 3
    assert [p.name for p in path.parent.iterdir()] == [lapt.CHECKPOINT_FILE]  # no temporary file left


class _RunsCode:
    """Unpickling this runs code: it creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"import pathlib; pathlib.Path({str(self.marker)!r}).touch()",)


def test_a_pickled_checkpoint_is_refused_without_running_it(tmp_path, tiny_llama_dir, thai_file):
    pickle.loads(pickle.dumps(_RunsCode(tmp_path / "live")))
    assert (tmp_path / "live").exists()  # the payload is real: unpickling it runs code

    marker, ckpt_dir = tmp_path / "ran", tmp_path / "ckpt"
    ckpt_dir.mkdir()
    torch.save({"step": 1, "stage": _RunsCode(marker)}, ckpt_dir / lapt.CHECKPOINT_FILE)
    with pytest.raises(ValueError, match="is not a LAPT checkpoint"):
        checkpoint.load_checkpoint(ckpt_dir / lapt.CHECKPOINT_FILE)
    kw = dict(procedure="2x2LS", seq_len=16, hparams={**HP, "max_steps": 1}, checkpoint_dir=ckpt_dir)
    with pytest.raises(ValueError, match=r"is not a LAPT checkpoint.*delete .*ckpt to start over"):
        lapt.train(tiny_llama_dir, thai_file, tmp_path / "out", **kw)
    assert not marker.exists()
    lapt.remove_checkpoint(ckpt_dir)
    assert not ckpt_dir.exists()


def test_rng_states_round_trip_through_the_checkpoint(tmp_path):
    def draw() -> tuple:
        return random.random(), np.random.rand(), np.random.randn(), torch.rand(3).tolist()

    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.randn()  # a cached Gaussian is part of numpy's state
    checkpoint.save_checkpoint(tmp_path / "rng", {"rng": checkpoint.rng_state()})
    expected = draw()
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    checkpoint.set_rng_state(checkpoint.load_checkpoint(tmp_path / "rng")["rng"])
    assert draw() == expected


# ------------------------------------------------------------------------------------------ resume, unit by unit


def _two_stage_run(tmp_path: Path, model: Path, data: Path, ckpt: str = "ckpt") -> loop.Run:
    # 4 steps split 1:1: stage 1 (embeddings) is steps 1-2, stage 2 (LoRA, whose dropout draws from the RNG) 3-4.
    return loop.prepare_run(
        model,
        data,
        procedure="2-stage",
        objective="clm",
        seq_len=16,
        hparams={**HP, "max_steps": 4, "stage_split": [1, 1]},
        checkpoint_dir=tmp_path / ckpt,
        n_source_rows=None,
    )


def _steps(run: loop.Run, state: loop.TrainState, n: int) -> None:
    for _ in range(n):
        stage = lapt.hparams.stage_at(run.ends, state.step)
        if stage != state.stage:
            loop.enter_stage(run, state, stage)
        loop.optimizer_step(run, state)


def _tensors_equal(a, b) -> bool:
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_tensors_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_tensors_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_save_then_resume_restores_every_part_of_the_state(tmp_path, tiny_llama_dir, thai_file):
    run = _two_stage_run(tmp_path, tiny_llama_dir, thai_file)
    a = loop.load_model(run)
    _steps(run, a, 3)  # into stage 2
    loop.save(run, a)
    rng_at_save = torch.get_rng_state()
    b = loop.load_model(_two_stage_run(tmp_path, tiny_llama_dir, thai_file))  # reseeds the RNG, as a fresh process
    loop.resume(run, b)

    assert torch.equal(torch.get_rng_state(), rng_at_save)
    assert (b.step, b.stage, b.resumed_from) == (3, 1, [3])
    assert (b.history, b.tokens_seen, b.train_seconds) == (a.history, a.tokens_seen, a.train_seconds)
    assert b.stage_info == [{k: v for k, v in s.items() if k != "measured_bytes"} for s in a.stage_info]
    assert [n for n, _ in b.named] == [n for n, _ in a.named]
    assert _tensors_equal(dict(loop.touched_named(b)), dict(loop.touched_named(a)))
    assert _tensors_equal(b.optimizer.state_dict(), a.optimizer.state_dict())
    assert b.scheduler.state_dict() == a.scheduler.state_dict()

    # Both continue alike: the same next step (LoRA dropout masks included) gives bit-identical weights and loss.
    _steps(run, b, 1)
    torch.set_rng_state(rng_at_save)
    _steps(run, a, 1)
    assert _tensors_equal(dict(loop.touched_named(b)), dict(loop.touched_named(a)))
    assert b.history == a.history


def test_resume_inside_stage_two_enters_stage_two(tmp_path, tiny_llama_dir, thai_file):
    run = _two_stage_run(tmp_path, tiny_llama_dir, thai_file)
    calls = iter([False, False, True])  # stop after step 3, the first step of stage 2
    with pytest.raises(lapt.TrainingInterrupted, match="after step 3 of 4"):
        lapt.train(
            tiny_llama_dir,
            thai_file,
            tmp_path / "out",
            procedure="2-stage",
            seq_len=16,
            hparams=run.hp,
            checkpoint_dir=tmp_path / "ckpt",
            should_stop=lambda: next(calls),
        )
    state = loop.load_model(run)
    loop.resume(run, state)

    assert (state.step, state.stage) == (3, 1)
    assert [(s["name"], s["first_step"], s["last_step"]) for s in state.stage_info] == [
        ("embeddings", 1, 2),
        ("LoRA", 3, 4),
    ]
    trainable = {n for n, p in state.model.named_parameters() if p.requires_grad}
    lora = {n for n, _ in state.model.named_parameters() if "lora_" in n}
    assert lora and trainable == lora | {f"base_model.model.{EMB}"}  # tied: the LM head is the embedding matrix
    assert {n for n, _ in state.named} == trainable and state.limits == []
    # The stage's own schedule, one step in: no warmup, cosine over 2 steps, so half the peak learning rate.
    assert state.scheduler.last_epoch == 1 and state.scheduler.get_last_lr() == [pytest.approx(0.5e-3)]
    assert all(int(s["step"]) == 1 for s in state.optimizer.state.values())  # a fresh AdamW at stage entry


# ---------------------------------------------------------------------------------------- stage and batch layout


@pytest.mark.parametrize("split", [None, [1, 2], [0.01, 1, 5], [3, 1, 1, 1, 1, 1, 0.2]])
def test_stage_ends_give_every_stage_its_steps_in_order(split):
    n = 2 if split is None else len(split)
    for total in range(n, 40):
        ends = lapt.stage_ends(total, n, split)
        starts = [0, *ends[:-1]]
        assert len(ends) == n and ends[-1] == total and all(e > s for s, e in zip(starts, ends, strict=True))
        by_step = [lapt.hparams.stage_at(ends, step) for step in range(total)]
        assert by_step == sorted(by_step) and [by_step.count(i) for i in range(n)] == [
            e - s for s, e in zip(starts, ends, strict=True)
        ]


def test_step_batches_cover_every_block_once_an_epoch():
    blocks = torch.arange(23).unsqueeze(1)  # block b holds the number b
    hp = {"batch_size": 2, "grad_accum": 3, "seed": 5}
    lengths = lapt.schedule_lengths(23, {**lapt.DEFAULT_HPARAMS, **hp})  # 12 micro-batches, 4 steps an epoch
    run = SimpleNamespace(hp=hp, blocks=blocks, n_blocks=23, lengths=lengths, per_epoch=lengths["steps_per_epoch"])
    epochs = [[int(x) for s in range(e * 4, e * 4 + 4) for b in loop.step_batches(run, s) for x in b] for e in (0, 1)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(23)) and epochs[0] != epochs[1]
    # The order of a step depends on its number only, not on the steps taken before it (what resume relies on).
    late = loop.step_batches(run, 6)
    data.epoch_order.cache_clear()  # as in a fresh process
    assert all(torch.equal(x, y) for x, y in zip(late, loop.step_batches(run, 6), strict=True))
    assert [int(x) for b in late for x in b] == epochs[1][12:18]


def test_checkpoint_due_every_n_steps_at_stage_ends_and_at_the_end():
    run = SimpleNamespace(hp={"checkpoint_every": 3}, total_steps=10, ends=[4, 10])
    due = [s for s in range(1, 11) if loop.checkpoint_due(run, SimpleNamespace(step=s, stage=int(s > 4)))]
    assert due == [3, 4, 6, 9, 10]
    # By wall time: due once checkpoint_minutes have passed since the last save (the clock is the state's, not a timer).
    run = SimpleNamespace(hp={"checkpoint_every": None, "checkpoint_minutes": 30}, total_steps=10, ends=[10])
    now = time.monotonic()
    assert not loop.checkpoint_due(run, SimpleNamespace(step=5, stage=0, last_save=now))
    assert loop.checkpoint_due(run, SimpleNamespace(step=5, stage=0, last_save=now - 30 * 60))
    assert loop.checkpoint_due(run, SimpleNamespace(step=10, stage=0, last_save=now))


def test_eeve_stage_one_trains_only_the_new_input_rows(tmp_path, untied_llama_dir, thai_file):
    n_rows = 49152
    run = loop.prepare_run(
        untied_llama_dir,
        thai_file,
        procedure="EEVE",
        objective="clm",
        seq_len=16,
        hparams={**HP, "max_steps": 7},
        checkpoint_dir=tmp_path / "c",
        n_source_rows=n_rows - 24,
    )
    state = loop.load_model(run)
    before = state.model.get_input_embeddings().weight.detach().clone()
    loop.enter_stage(run, state, 0)
    assert [n for n, _ in state.named] == [EMB] and state.stage_info[0]["row_limited"] == [[EMB, n_rows - 24]]
    loop.optimizer_step(run, state)
    after = state.model.get_input_embeddings().weight.detach()
    changed = torch.nonzero((before != after).any(dim=1)).flatten().tolist()
    assert changed == list(range(n_rows - 24, n_rows))


def test_loss_curve_rows():
    history = [{"step": 1, "epoch": 0.5, "lr": 1e-3, "loss": 10.25, "tokens_seen": 32, "stage": 2}]
    assert (
        outputs.loss_curve_tsv(history)
        == "step\tepoch\tlr\tloss\ttokens_seen\tstage\n1\t0.5\t1.00000000e-03\t10.250000\t32\t2\n"
    )
