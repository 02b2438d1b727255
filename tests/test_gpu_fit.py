"""GPU fit: the estimate's corrected terms against measured tensors on tiny shapes, the planning check of every
paper-grid LAPT job against its GPU class, the mtp hook across 2-stage, checkpoints on a signal, bf16 saves."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from pathlib import Path

import pytest
import torch

from workflow_scripts.lapt import loop
from workflow_scripts.lapt.objective import LossComputer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def thai_file(tmp_path_factory, thai_lines) -> Path:
    path = tmp_path_factory.mktemp("thai") / "train.txt"
    path.write_text("\n".join(thai_lines[:20]) + "\n", encoding="utf-8")
    return path


def test_two_stage_keeps_one_mtp_hook_and_frees_a_replaced_head(tmp_path, tiny_llama_dir, thai_file):
    hp = {"batch_size": 2, "max_steps": 2, "checkpoint_every": 1000}
    run = loop.prepare_run(tiny_llama_dir, thai_file, procedure="2-stage", objective="mtp", seq_len=16, hparams=hp,
                           checkpoint_dir=tmp_path / "c", n_source_rows=None)  # fmt: skip
    state = loop.load_model(run)
    loop.enter_stage(run, state, 0)
    loop.optimizer_step(run, state)
    hooks1 = dict(state.model.get_output_embeddings()._forward_hooks)
    loop.enter_stage(run, state, 1)  # LoRA wraps the model
    head = state.model.get_output_embeddings()
    assert len(head._forward_hooks) == 1 and set(head._forward_hooks).isdisjoint(hooks1)
    loop.optimizer_step(run, state)
    # A stage that hands back another head module: the loss lets go of the old one (no hook keeps it alive).
    old = torch.nn.Linear(4, 8, bias=False)
    loss = LossComputer(SimpleNamespace(config=SimpleNamespace()), "mtp", old)
    ref = weakref.ref(old)
    loss.attach(torch.nn.Linear(4, 8, bias=False))
    del old
    gc.collect()
    assert ref() is None
    # After training no hook (holding the loss and its mtp head) is left on the saved model.
    loop.write_outputs(run, state, tmp_path / "out", None)
    assert not state.model.get_output_embeddings()._forward_hooks
