"""``weights_dtype: auto`` (the embedded default's training): bf16 frozen weights on a CPU with native bf16
kernels, fp32 on other CPUs (emulated bf16 is far slower) and on a GPU; what GPU planning and the source model make
of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from workflow_scripts.lapt import hparams as H


@pytest.mark.parametrize(
    ("configured", "device", "native", "expected"),
    [
        ("auto", "cpu", True, "bf16"),
        ("auto", "cpu", False, "fp32"),
        ("auto", "cuda", True, "fp32"),  # fp32 weights already compute in bf16 autocast on a GPU
        ("fp32", "cpu", True, "fp32"),
        ("bf16", "cpu", False, "bf16"),  # an explicit choice is kept, however slow
        ("bf16", "cuda", False, "bf16"),
    ],
)
def test_auto_is_bf16_only_on_a_cpu_with_native_kernels(monkeypatch, configured, device, native, expected):
    monkeypatch.setattr(H, "cpu_has_native_bf16", lambda: native)
    assert H.weights_dtype_on(configured, device) == expected


def test_an_unknown_weights_dtype_is_refused():
    with pytest.raises(ValueError, match="weights_dtype must be one of"):
        H.resolve_hparams({"weights_dtype": "fp16"})
    assert H.resolve_hparams({"weights_dtype": "auto"})["weights_dtype"] == "auto"


def test_onednn_held_to_avx2_counts_as_emulated_bf16():
    """With oneDNN limited to AVX2 (a CPU without bf16 kernels), the probe says no, whatever this CPU has."""
    code = "from workflow_scripts.lapt.hparams import cpu_has_native_bf16 as f; print(f())"
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def test_gpu_planning_reads_auto_as_fp32():
    from workflow_scripts.gpu.fit import planned

    hp = H.resolve_hparams({"micro_batch": 2})
    as_fp32 = planned("llama2-7b", "2x2LS", "clm", 512, {**hp, "weights_dtype": "fp32"}, "A100")
    as_auto = planned("llama2-7b", "2x2LS", "clm", 512, {**hp, "weights_dtype": "auto"}, "A100")
    as_bf16 = planned("llama2-7b", "2x2LS", "clm", 512, {**hp, "weights_dtype": "bf16"}, "A100")
    assert as_auto == as_fp32 and as_auto["weights_dtype"] == "fp32"
    assert as_bf16["peak_gib"] < as_fp32["peak_gib"]


@pytest.mark.slow  # two dry runs
def test_auto_keeps_the_source_model_in_fp32(tmp_path):
    """Only an explicit bf16 saves the source model in bf16: what auto resolves to is known on the training node."""
    from tests.conftest import snakemake, tiny_config

    for dtype, save in (("auto", None), ("bf16", "bf16")):
        work = tmp_path / dtype
        work.mkdir()
        config = tiny_config(work, training={"max_steps": 2, "weights_dtype": dtype})
        target = "results/default/models/tiny/source_info.json"
        run = snakemake([target, "-n", "-p", "--cores", "1", "--configfile", str(config)], work)
        assert run.returncode == 0, run.stderr[-3000:]
        line = next(x for x in run.stdout.splitlines() if "workflow_scripts.source_model" in x)
        spec = json.loads(line.split("--spec ", 1)[1].split(" --out", 1)[0].strip("'"))
        assert spec.get("save_dtype") == save, spec


@pytest.mark.parametrize("native", [True, False])
def test_a_cpu_run_of_auto_trains_as_its_cpu_allows(tmp_path, monkeypatch, tiny_llama_dir, thai_file, native):
    from workflow_scripts import lapt

    monkeypatch.setattr(H, "cpu_has_native_bf16", lambda: native)
    hp = {"max_steps": 1, "batch_size": 2, "warmup_steps": 0, "weights_dtype": "auto"}
    stats = lapt.train(
        tiny_llama_dir,
        thai_file,
        tmp_path / "out",
        procedure="2x2LS",
        seq_len=16,
        hparams=hp,
        checkpoint_dir=tmp_path / "ckpt",
    )
    if native:
        assert stats["precision"].startswith("bf16 autocast, bf16 frozen weights"), stats["precision"]
    else:
        assert stats["precision"] == "fp32 weights", stats["precision"]
    assert stats["hparams"]["weights_dtype"] == "auto"  # the setting as configured; the precision as run
