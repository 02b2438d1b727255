"""Prepared GPU check (issue 12): time one LAPT step per procedure, objective and sequence length, and teacher-forced
decoding of the source vs the expanded vocabulary, on random weights in the real configurations; no hub access.

Models: Llama-2 7B, Llama-3 8B and Gemma-2 9B, built from transformers config classes with the numbers of their
config.json (random weights: the time of a step does not depend on their values). Training: vocabulary expanded by
k = 100 rows, each procedure's stages as ``workflow_scripts.lapt`` prepares them (LoRA, 2-stage, 2x2 LS), clm and
mtp (``lapt.objective.LossComputer``), sequence length 512 and 2048, batch 8 in the micro-batches
``tools.gpu_estimate.fitting_micro_batch`` picks, bf16 autocast over fp32 weights with gradient checkpointing as lapt
runs on CUDA, AdamW; one untimed step, then ``--repeats`` timed steps. Decoding: bf16, one forward pass per target
token through the KV cache (``speed.decoders.HFDecoder.teacher_force``) at vocabulary sizes V, V + 100, V + 5000.
Each entry carries ``gpu_estimate``'s step time next to the measured one.

    python -m tools.gpu_bench --out results/gpu_bench.json           # one H200: about 6-8 minutes
    python -m tools.gpu_bench --tiny --out /tmp/bench.json           # CPU, tiny shapes: proves the script runs

``--budget-s`` stops starting new measurements after that many seconds (the JSON, rewritten after every entry, then
says what was skipped), so a timed-out machine still returns what it measured.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from workflow_scripts.io import write_json

PROCEDURES = ("LoRA", "2-stage", "2x2LS")
OBJECTIVES = ("clm", "mtp")
KS = (0, 100, 5000)
ESTIMATE_NAMES = {"llama2-7b": "llama2-7b", "llama3-8b": "llama3-8b", "gemma2-9b": "gemma2-9b"}


def model_config(name: str, tiny: bool = False):
    """The transformers config of a model (real numbers, or the same architecture shrunk with ``tiny``)."""
    from transformers import Gemma2Config, LlamaConfig

    if name == "llama2-7b":
        real = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096,
                "rms_norm_eps": 1e-5, "tie_word_embeddings": False}  # fmt: skip
        cls = LlamaConfig
    elif name == "llama3-8b":
        real = {"vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
                "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}  # fmt: skip
        cls = LlamaConfig
    elif name == "gemma2-9b":
        real = {"vocab_size": 256000, "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
                "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "max_position_embeddings": 8192,
                "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "query_pre_attn_scalar": 256,
                "sliding_window": 4096, "tie_word_embeddings": True}  # fmt: skip
        cls = Gemma2Config
    else:
        raise ValueError(f"unknown model {name!r}; expected one of {sorted(ESTIMATE_NAMES)}")
    if tiny:
        grouped = real["num_key_value_heads"] < real["num_attention_heads"]
        real.update(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
                    num_key_value_heads=2 if grouped else 4)  # fmt: skip
        if "head_dim" in real:
            real["head_dim"] = 16
            real["query_pre_attn_scalar"] = 16
    return cls(**real)


def build(name: str, k: int, dtype, device, tiny: bool):
    """A random-weight model of ``name`` with ``k`` extra vocabulary rows, on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM

    config = model_config(name, tiny)
    config.vocab_size += k
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def _free() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def time_decoding(name: str, *, device, tiny: bool, repeats: int, prompt_len: int, target_len: int) -> list[dict]:
    """Teacher-forced decoding at vocabulary sizes V + k (k in KS): milliseconds per target token, bf16."""
    import torch

    from workflow_scripts.speed.decoders import HFDecoder

    model = build(name, 0, torch.bfloat16 if device == "cuda" else torch.float32, device, tiny).eval()
    base = model.config.vocab_size
    out = []
    for k in KS:
        if k:
            model.resize_token_embeddings(base + k, mean_resizing=False)
        decoder = HFDecoder(model)
        gen = torch.Generator().manual_seed(k)
        prompt = torch.randint(0, base, (prompt_len,), generator=gen).tolist()
        target = torch.randint(0, base + k, (target_len,), generator=gen).tolist()
        decoder.teacher_force(prompt, target[:8])  # warm-up
        runs = [decoder.teacher_force(prompt, target) for _ in range(repeats)]
        ms = [1000 * r.seconds / r.steps for r in runs]
        out.append({"model": name, "k": k, "vocab_size": base + k, "steps": runs[0].steps, "ms_per_token": _median(ms),
                    "repeats_ms_per_token": ms})  # fmt: skip
    for entry in out:
        entry["step_time_vs_source"] = entry["ms_per_token"] / out[0]["ms_per_token"]
    del model
    _free()
    return out


def _one_step(loss_fn, optimizer, named, micro: int, accum: int, seq_len: int, vocab: int, device) -> None:
    """One optimizer step of batch micro x accum as ``lapt.loop.optimizer_step`` runs it (bf16 autocast on CUDA)."""
    import torch

    n1, n2 = micro * accum * (seq_len - 1), micro * accum * (seq_len - 2)
    for _ in range(accum):
        ids = torch.randint(0, vocab, (micro, seq_len), device=device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = loss_fn(ids, n1, n2)
        loss.backward()
    torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def time_training(name: str, procedure: str, *, device, tiny: bool, repeats: int, seq_lens, deadline: float) -> list:
    """One LAPT step per stage x objective x sequence length of ``procedure`` on the k = 100 expansion."""
    import torch

    from tools.gpu_estimate import fitting_micro_batch
    from workflow_scripts.lapt.hparams import resolve_hparams
    from workflow_scripts.lapt.loop import _adamw
    from workflow_scripts.lapt.objective import LossComputer
    from workflow_scripts.lapt.procedures import PROCEDURES as LAPT
    from workflow_scripts.lapt.procedures import StageContext

    model = build(name, 100, torch.float32, device, tiny)
    vocab = model.config.vocab_size
    hp = resolve_hparams(None)
    out = []
    for i, stage in enumerate(LAPT[procedure].stages):
        model, _ = stage.prepare(model, hp, StageContext(n_source_rows=vocab - 100))
        if device == "cuda":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        for objective in OBJECTIVES:  # clm first: mtp's hook on the head stays behind
            loss_fn = LossComputer(model, objective, model.get_output_embeddings())
            named = [(n, p) for n, p in model.named_parameters() if p.requires_grad] + loss_fn.extra_parameters()
            optimizer = _adamw(hp, named)
            for seq_len in seq_lens:
                entry = {"model": name, "procedure": procedure, "stage": stage.name, "stage_index": i,
                         "objective": objective, "seq_len": seq_len, "k": 100}  # fmt: skip
                if time.monotonic() > deadline:
                    out.append({**entry, "skipped": "--budget-s reached"})
                    continue
                est = fitting_micro_batch(ESTIMATE_NAMES[name], procedure, seq_len, 8, objective=objective, gpu="H200")
                micro, accum = (2, 1) if tiny else (est["micro_batch"], est["grad_accum"])
                if device == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                _one_step(loss_fn, optimizer, named, micro, accum, seq_len, vocab, device)  # untimed: allocations
                seconds = []
                for _ in range(repeats):
                    _sync()
                    t0 = time.perf_counter()
                    _one_step(loss_fn, optimizer, named, micro, accum, seq_len, vocab, device)
                    _sync()
                    seconds.append(time.perf_counter() - t0)
                entry.update(micro_batch=micro, grad_accum=accum, step_seconds=_median(seconds), repeats=seconds,
                             trainable_parameters=sum(p.numel() for _, p in named),
                             estimate_step_seconds=est["step_seconds"], estimate_peak_gib=est["peak_gib"])  # fmt: skip
                if device == "cuda":
                    entry["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
                out.append(entry)
            del optimizer, loss_fn, named
            _free()
    del model
    _free()
    return out


def hardware() -> dict[str, Any]:
    import platform

    import torch
    import transformers

    info = {"torch": torch.__version__, "transformers": transformers.__version__, "platform": platform.platform(),
            "torch_threads": torch.get_num_threads()}  # fmt: skip
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return info


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="result JSON (rewritten after every measurement)")
    p.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU (a test of the script)")
    p.add_argument("--models", nargs="+", default=list(ESTIMATE_NAMES), choices=list(ESTIMATE_NAMES))
    p.add_argument("--procedures", nargs="+", default=list(PROCEDURES), choices=list(PROCEDURES))
    p.add_argument("--seq-lens", nargs="+", type=int, default=None, help="default 512 2048 (tiny: 16 32)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=420.0, help="start no measurement after this many seconds")
    a = p.parse_args(argv)
    import torch

    device = "cuda" if torch.cuda.is_available() and not a.tiny else "cpu"
    if device == "cpu" and not a.tiny:
        p.error("no CUDA device: the real shapes need a GPU (use --tiny on a CPU)")
    seq_lens = a.seq_lens or ([16, 32] if a.tiny else [512, 2048])
    deadline = time.monotonic() + a.budget_s
    result: dict[str, Any] = {"hardware": hardware(), "settings": {**vars(a), "seq_lens": seq_lens, "device": device},
                              "decoding": [], "training": []}  # fmt: skip
    tokens = (32, 16) if a.tiny else (64, 128)
    for name in a.models:  # decoding first: cheap, and the headline of issue 12
        result["decoding"] += time_decoding(name, device=device, tiny=a.tiny, repeats=a.repeats,
                                            prompt_len=tokens[0], target_len=tokens[1])  # fmt: skip
        write_json(a.out, result)
    for name in a.models:
        for procedure in a.procedures:
            result["training"] += time_training(name, procedure, device=device, tiny=a.tiny, repeats=a.repeats,
                                                seq_lens=seq_lens, deadline=deadline)  # fmt: skip
            write_json(a.out, result)
    result["wall_seconds"] = round(a.budget_s - (deadline - time.monotonic()), 1)
    write_json(a.out, result)


if __name__ == "__main__":
    main()
