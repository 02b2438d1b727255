"""GPU estimate: parameter arithmetic by hand; weight, gradient and optimizer bytes against a real CPU run of lapt."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_scripts import lapt
from workflow_scripts.gpu import estimate as ge
from workflow_scripts.gpu.fit import planned, planned_gpus
from workflow_scripts.gpu.shape import MODELS, parameter_counts, shape_from_config
from workflow_scripts.io import set_threads

GIB = 2**30


@pytest.fixture(scope="module")
def thai_file(tmp_path_factory, thai_lines) -> Path:
    path = tmp_path_factory.mktemp("thai") / "train.txt"
    path.write_text("\n".join(thai_lines[:40]) + "\n", encoding="utf-8")
    return path


def test_parameter_counts_match_the_published_model_sizes():
    # Llama-2-7B by hand: 32 x (4 attention 4096x4096 + 3 MLP 4096x11008 + 2 norms) + untied 32000x4096 twice + norm.
    llama2 = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert llama2 == 6_738_415_616  # the size Hugging Face reports for meta-llama/Llama-2-7b-hf
    assert ge.estimate("llama2-7b", "full", 512)["total_parameters"] == llama2
    assert ge.estimate("llama3-8b", "full", 512)["total_parameters"] == 8_030_261_248
    assert ge.estimate("gemma2-9b", "full", 512)["total_parameters"] == 9_241_705_984
    assert ge.estimate("smollm2-135m", "full", 512)["total_parameters"] == 134_515_008
    assert ge.estimate("llama3", "LoRA", 512) == ge.estimate("llama3-8b", "LoRA", 512)  # the paper config's keys
    with pytest.raises(ValueError, match="unknown model '8B'"):  # a size label names no shape
        ge.estimate("8B", "LoRA", 512)
    # 2x2 LS on Llama-2: 4 layers + embedding + head + final norm.
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert ge.estimate("llama2-7b", "2x2LS", 512)["trainable_parameters"] == 4 * layer + 2 * 32000 * 4096 + 4096
    # LoRA rank 8 on q, k, v, o (4096->4096) and gate, up, down (4096<->11008): 8 x (in + out) each, 32 layers.
    lora = 32 * 8 * (4 * 8192 + 3 * (4096 + 11008))
    assert ge.estimate("llama2-7b", "LoRA", 512)["trainable_parameters"] == lora + 2 * 32000 * 4096


def test_memory_terms_by_hand():
    est = ge.estimate("llama3-8b", "LoRA", 2048, 8)
    n, tr = est["total_parameters"], est["trainable_parameters"]
    mem = est["memory_gib"]
    assert mem["weights"] == pytest.approx(4 * n / GIB, abs=0.01)  # fp32 master weights, as lapt keeps them
    assert mem["gradients"] == pytest.approx(4 * tr / GIB, abs=0.01)
    assert mem["optimizer"] == pytest.approx(8 * tr / GIB, abs=0.01)
    # Full-vocabulary logits: 8 x 2048 positions x 128256 entries x (4 kept + 8 at the peak) bytes (``logit_bytes``,
    # measured on the CPU in tests/test_gpu_fit.py).
    assert mem["logits"] == pytest.approx(8 * 2048 * 128256 * 12 / GIB, abs=0.01)
    bf16 = ge.estimate("llama3-8b", "LoRA", 2048, 8, weights_dtype="bf16")["memory_gib"]["weights"]
    assert bf16 == pytest.approx((2 * (n - tr) + 4 * tr) / GIB, abs=0.01)
    # Full training holds every parameter trainable: bf16 frozen weights change nothing.
    full = [ge.estimate("llama2-7b", "full", 512, weights_dtype=w)["peak_gib"] for w in ("fp32", "bf16")]
    assert full[0] == full[1] > 80
    # The micro-batch divides the activations and logits, not the states.
    one, eight = ge.estimate("gemma2-9b", "2x2LS", 2048, 1), ge.estimate("gemma2-9b", "2x2LS", 2048, 8)
    assert eight["per_stage"][0]["logits"] == 8 * one["per_stage"][0]["logits"]
    assert eight["memory_gib"]["optimizer"] == one["memory_gib"]["optimizer"]
    fit = ge.fitting_micro_batch("gemma2-9b", "2x2LS", 2048, 8)
    assert fit["fits"] and fit["micro_batch"] * fit["grad_accum"] == 8 and fit["peak_gib"] <= 0.9 * 79.6


def test_step_time_from_flops_by_hand():
    # Full training, checkpointing on: forward, input gradient and recompute of every layer (3 x the layer forward,
    # attention included), the weight gradient of its matrices (1 x), the head forward and its two gradients (3 x),
    # at 35% of 989 TFLOP/s, plus AdamW moving 28 bytes per parameter at 3.35 TB/s.
    est = ge.estimate("llama2-7b", "full", 512, 8)
    tokens = 8 * 512
    matrices = 2 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    layer_fwd = matrices + 2 * 512 * 4096  # causal attention: QK^T and AV over 256 keys on average
    head_fwd = 2 * 4096 * 32000
    flops = tokens * (32 * (3 * layer_fwd + matrices) + 3 * head_fwd)
    seconds = flops / (989e12 * 0.35) + 28 * est["trainable_parameters"] / 3.35e12
    assert est["step_seconds"] == pytest.approx(seconds, rel=1e-3)
    assert est["tokens_per_second"] == pytest.approx(tokens / est["step_seconds"], rel=1e-3)


# --------------------------------------------------------------------------- against a real run of lapt (CPU)


@pytest.mark.slow  # a real training run per case, seven in all
@pytest.mark.parametrize(
    ("procedure", "tied", "objective", "hp"),
    [
        ("full", False, "clm", {}),
        ("LoRA", False, "mtp", {}),
        ("2x2LS", True, "clm", {}),
        ("2x2LS", False, "clm", {"weights_dtype": "bf16"}),
        ("2-stage", True, "mtp", {}),
        ("EEVE", False, "clm", {}),
        ("EEVE", True, "clm", {"eeve_layers": "LoRA"}),
    ],
)
def test_state_bytes_match_a_real_cpu_run(
    tmp_path, tiny_llama_dir, untied_llama_dir, thai_file, procedure, tied, objective, hp
):
    from transformers import AutoConfig

    set_threads(1)
    src = tiny_llama_dir if tied else untied_llama_dir
    n_stages = len(lapt.PROCEDURES[procedure].stages)
    stats = lapt.train(
        src,
        thai_file,
        tmp_path / "out",
        procedure=procedure,
        objective=objective,
        seq_len=16,
        hparams={"max_steps": n_stages, "batch_size": 2, **hp},
        checkpoint_dir=tmp_path / "ckpt",
        n_source_rows=49152 - 16,
    )
    shape = shape_from_config(AutoConfig.from_pretrained(src))
    assert shape.tied is tied and shape.vocab == 49152 and shape.hidden == 64
    est = ge.estimate(shape, procedure, 16, 2, objective=objective, **{k: v for k, v in hp.items()})
    assert len(est["per_stage"]) == len(stats["stages"]) == n_stages
    for k, (measured, predicted) in enumerate(zip(stats["stages"], est["per_stage"], strict=True)):
        got = measured["measured_bytes"]
        assert got == {t: predicted[t] for t in ("weights", "gradients", "optimizer")}, f"stage {k + 1}"
        assert measured["total_parameters"] == predicted["total_parameters"]


def test_sharding_divides_the_state_terms_and_adds_the_gathered_units():
    one = ge.estimate("llama3-8b", "full", 512, 1)
    four = ge.estimate("llama3-8b", "full", 512, 1, shards=4)
    for term in ("weights", "gradients", "optimizer"):
        assert four["per_stage"][0][term] == one["per_stage"][0][term] / 4, term
    # gathered whole: the root (embeddings, head, final norm) and two layers, with their gradients (all trained)
    pc = parameter_counts(MODELS["llama3-8b"])
    layer = pc["layer_matrices"] + pc["layer_norms"]
    root = pc["embedding"] + pc["head"] + pc["final_norm"]
    assert four["per_stage"][0]["fsdp_unsharded"] == 4 * (2 * layer + root) + 4 * (layer + root)
    assert one["per_stage"][0]["fsdp_unsharded"] == 0
    assert four["gpus"] == 4 and four["gpu_hours"] == pytest.approx(4 * four["train_hours"], abs=0.01)
    # every weight is fp32 when sharded, whatever weights_dtype says
    assert (
        ge.estimate("llama3-8b", "full", 512, 1, shards=2, weights_dtype="bf16")["memory_gib"]["weights"]
        == (ge.estimate("llama3-8b", "full", 512, 1, shards=2)["memory_gib"]["weights"])
    )


def test_planned_gpus_takes_the_fewest_that_fit_and_never_shards_lora():
    hp = lapt.resolve_hparams({"weights_dtype": "bf16", "micro_batch": "auto", "eeve_layers": "full"})
    assert not planned("llama3-8b", "EEVE", "clm", 512, hp, "H100")["fits"]  # one 80 GB GPU cannot hold it
    est = planned_gpus("llama3-8b", "EEVE", "clm", 512, hp, "H100", max_gpus=8)
    assert est["fits"] and est["gpus"] > 1
    assert not planned("llama3-8b", "EEVE", "clm", 512, hp, "H100", shards=est["gpus"] // 2)["fits"]
    assert planned_gpus("llama3-8b", "EEVE", "clm", 512, hp, "H100", max_gpus=1)["gpus"] == 1
    lora = planned_gpus("llama3-8b", "LoRA", "clm", 512, hp, "H100", max_gpus=8)
    assert lora["gpus"] == 1 and lora["fits"]
