"""Prepared GPU check: memory per term and time of one LAPT step for each LAPT job kind of the paper grid, and
teacher-forced decoding of the source vs the expanded vocabulary, on random weights in the real configurations; no hub
access. ``python -m tools.gpu_corrections <json>`` turns its JSON into corrections of ``workflow_scripts.gpu``.

Models: Llama-2 7B, Llama-3 8B and Gemma-2 9B, built from transformers config classes with the numbers of their
config.json (random weights: the time of a step does not depend on their values). Training: every LAPT job kind of
``--configfile`` (configs/paper.yaml: model, procedure with its hparams such as eeve_layers, objective, sequence
length), Gemma-2 first, on the vocabulary expanded by k = 100 rows, each stage as ``workflow_scripts.lapt`` prepares it;
frozen weights bf16 and trainable ones fp32 as the paper grid trains (``--weights-dtype``), bf16 autocast, gradient
checkpointing, AdamW; batch 8 in the micro-batches ``workflow_scripts.gpu.fit.planned`` picks for each GPU class (80 GB
and 141 GB: an 80 GB plan run on an H200 shows its peak against 80 GB); one untimed step, then ``--repeats`` timed
steps. Each entry holds the measured tensor bytes of weights, gradients and Adam states, the CUDA peak and what lies
beyond those states (activations, logits, autocast copies), the estimate's terms for the same shape, and the measured
and estimated step times; an out-of-memory is recorded as such. Decoding: bf16, one forward pass per target token
through the KV cache (``speed.decoders.HFDecoder.teacher_force``) at vocabulary sizes V, V + 100, V + 5000.

    python -m tools.gpu_bench --out results/gpu_bench.json           # one H200: under 10 minutes (--budget-s 480)
    python -m tools.gpu_bench --tiny --out /tmp/bench.json           # CPU, tiny shapes: proves the script runs
    python -m tools.gpu_corrections results/gpu_bench.json           # the corrections to workflow_scripts/gpu

``--budget-s`` stops starting new measurements after that many seconds; the JSON is rewritten after every entry and
says what was skipped, so a timed-out machine still returns what it measured. It exits 1 when any measurement ran out
of memory (the estimate said it fits: a failed check, recorded in the JSON and printed last); skipped entries are
printed as a note and do not fail the run.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import sys
import time
from typing import Any

from workflow_scripts.gpu.estimate import MEMORY_TERMS
from workflow_scripts.gpu.fit import planned
from workflow_scripts.io import write_json
from workflow_scripts.lapt.objective import OBJECTIVES
from workflow_scripts.plan.resources import GPU_CLASSES

BENCH_PROCEDURES = ("LoRA", "2-stage", "2x2LS")  # those --procedures may name
KS = (0, 100, 5000)
ESTIMATE_NAMES = {"llama2-7b": "llama2-7b", "llama3-8b": "llama3-8b", "gemma2-9b": "gemma2-9b"}
# Gemma-2 first: the largest vocabulary and the tightest fit, measured before a budget can cut it.
MODEL_ORDER = ("gemma2-9b", "llama3-8b", "llama2-7b")


def model_config(name: str, tiny: bool = False):
    """The transformers config of a model (real numbers, or the same architecture shrunk with ``tiny``)."""
    from transformers import Gemma2Config, LlamaConfig

    if name == "llama2-7b":
        real = {
            "vocab_size": 32000,
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5,
            "tie_word_embeddings": False,
        }
        cls = LlamaConfig
    elif name == "llama3-8b":
        real = {
            "vocab_size": 128256,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "max_position_embeddings": 8192,
            "rope_theta": 500000.0,
            "rms_norm_eps": 1e-5,
            "tie_word_embeddings": False,
        }
        cls = LlamaConfig
    elif name == "gemma2-9b":
        real = {
            "vocab_size": 256000,
            "hidden_size": 3584,
            "intermediate_size": 14336,
            "num_hidden_layers": 42,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "max_position_embeddings": 8192,
            "final_logit_softcapping": 30.0,
            "attn_logit_softcapping": 50.0,
            "query_pre_attn_scalar": 256,
            "sliding_window": 4096,
            "tie_word_embeddings": True,
        }
        cls = Gemma2Config
    else:
        raise ValueError(f"unknown model {name!r}; expected one of {sorted(ESTIMATE_NAMES)}")
    if tiny:
        grouped = real["num_key_value_heads"] < real["num_attention_heads"]
        real.update(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2 if grouped else 4,
        )
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
        out.append(
            {
                "model": name,
                "k": k,
                "vocab_size": base + k,
                "steps": runs[0].steps,
                "ms_per_token": _median(ms),
                "repeats_ms_per_token": ms,
            }
        )
    for entry in out:
        entry["step_time_vs_source"] = entry["ms_per_token"] / out[0]["ms_per_token"]
    del model
    _free()
    return out


def _one_step(
    loss_fn, optimizer, named, micro: int, accum: int, seq_len: int, vocab: int, device, autocast: bool, on_grads=None
) -> None:
    """One optimizer step of batch micro x accum as ``lapt.loop.optimizer_step`` runs it; ``on_grads()`` is called
    after the optimizer step, before the gradients are freed (what the step holds at its end)."""
    import torch

    n1, n2 = micro * accum * (seq_len - 1), micro * accum * (seq_len - 2)
    for _ in range(accum):
        ids = torch.randint(0, vocab, (micro, seq_len), device=device)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(ids, n1, n2)
        loss.backward()
    torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
    optimizer.step()
    if on_grads is not None:
        on_grads()
    optimizer.zero_grad(set_to_none=True)


def _held_bytes(held: dict[str, int], model, loss_fn, optimizer) -> None:
    from workflow_scripts.lapt.outputs import tensor_bytes

    held.update(tensor_bytes(model, loss_fn, optimizer))


def paper_jobs(configfile: str) -> list[dict[str, Any]]:
    """The LAPT job kinds of a config's grid (configs/paper.yaml): model shape, procedure, objective, seq_len and the
    hparams that change memory, Gemma-2 first (the budget cuts last what comes last)."""
    import yaml

    from tools.gpu_estimate import _fill_schema_defaults
    from workflow_scripts.gpu.shape import MODELS
    from workflow_scripts.plan.checks.gpu_fit import lapt_jobs
    from workflow_scripts.plan.models import describe_models

    config = yaml.safe_load(open(configfile, encoding="utf-8"))
    _fill_schema_defaults(config)
    models = describe_models(config)
    by_shape = {shape: name for name, shape in MODELS.items()}  # the models this bench builds, by their shapes
    kinds: dict[tuple, dict[str, Any]] = {}
    for model, m, _, hp, _ in lapt_jobs(config, models):
        name = by_shape.get(models[model].shape)
        if name is None:
            built = ", ".join(MODEL_ORDER)
            raise ValueError(f"models.{model}: this bench builds {built}, and its shape is none of theirs")
        key = (name, m.procedure, m.objective, m.seq_len, hp["eeve_layers"], hp["weights_dtype"])
        kinds.setdefault(
            key, {"model": name, "procedure": m.procedure, "objective": m.objective, "seq_len": m.seq_len, "hp": hp}
        )
    order = {name: i for i, name in enumerate(MODEL_ORDER)}
    return sorted(kinds.values(), key=lambda j: (order[j["model"]], j["procedure"], j["objective"], j["seq_len"]))


def _job_groups(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs grouped by what one built model serves: (model, procedure, hparams) -> objectives and seq_lens."""
    groups: dict[tuple, dict[str, Any]] = {}
    for j in jobs:
        key = (j["model"], j["procedure"], json.dumps(j["hp"], sort_keys=True))
        g = groups.setdefault(key, {**j, "objectives": [], "seq_lens": []})
        g["objectives"] += [j["objective"]] if j["objective"] not in g["objectives"] else []
        g["seq_lens"] += [j["seq_len"]] if j["seq_len"] not in g["seq_lens"] else []
    return list(groups.values())


def time_training(
    name: str,
    procedure: str,
    *,
    device,
    tiny: bool,
    repeats: int,
    seq_lens,
    deadline: float,
    objectives=OBJECTIVES,
    hp: dict | None = None,
    gpu_classes=("80GB", "141GB"),
    emit=None,
) -> list:
    """One LAPT step per stage x objective x sequence length x GPU class of ``procedure`` on the k = 100 expansion,
    as lapt trains on CUDA: frozen weights in ``hp["weights_dtype"]`` (bf16 in the paper grid), trainable ones fp32,
    bf16 autocast, gradient checkpointing, at the micro-batch ``workflow_scripts.gpu.fit.planned`` picks for each GPU
    class. Each entry: step time, memory per term (tensor bytes of weights, gradients, Adam states; the peak beyond
    them), and the estimate of each term for the same shape; ``emit(entry)`` is called as each entry is measured."""
    import torch

    from workflow_scripts.gpu.shape import shape_from_config
    from workflow_scripts.lapt.hparams import resolve_hparams
    from workflow_scripts.lapt.loop import _adamw
    from workflow_scripts.lapt.objective import LossComputer
    from workflow_scripts.lapt.procedures import PROCEDURES as LAPT

    hp = resolve_hparams({"micro_batch": "auto", "weights_dtype": "bf16", **(hp or {})})
    low = hp["weights_dtype"] == "bf16"
    model = build(name, 100, torch.bfloat16 if low else torch.float32, device, tiny)
    vocab = model.config.vocab_size
    shape = shape_from_config(model.config)
    out = []
    for i, stage in enumerate(LAPT[procedure].stages):
        model = _enter_stage(model, stage, hp, vocab - 100, low=low, device=device)
        for objective in objectives:
            loss_fn = LossComputer(model, objective, model.get_output_embeddings())
            if loss_fn.extra_head is not None and low:
                loss_fn.extra_head.float()
            named = [(n, p) for n, p in model.named_parameters() if p.requires_grad] + loss_fn.extra_parameters()
            optimizer = _adamw(hp, named)
            for seq_len in seq_lens:
                for micro, classes in _planned_micro_batches(shape, procedure, objective, seq_len, hp, gpu_classes):
                    entry = {
                        "model": name,
                        "procedure": procedure,
                        "stage": stage.name,
                        "stage_index": i,
                        "objective": objective,
                        "seq_len": seq_len,
                        "k": 100,
                        "gpu_classes": classes,
                        "weights_dtype": hp["weights_dtype"],
                        "eeve_layers": hp["eeve_layers"],
                    }
                    if time.monotonic() > deadline:
                        out.append({**entry, "skipped": "--budget-s reached"})
                        continue
                    est = planned(
                        shape, procedure, objective, seq_len, {**hp, "micro_batch": micro}, GPU_CLASSES[classes[0]]
                    )
                    out.append(
                        _time_step(entry, est, micro, model, loss_fn, optimizer, named, vocab, device, low, repeats)
                    )
                    if emit:
                        emit(out[-1])
            loss_fn.attach(None)
            del optimizer, loss_fn, named
            _free()
    del model
    _free()
    return out


def _enter_stage(model, stage, hp: dict, n_source_rows: int, *, low: bool, device):
    """``model`` prepared for ``stage`` as ``lapt.loop.enter_stage`` does: trainable parameters in fp32 when the
    frozen weights are bf16 (``low``), gradient checkpointing on CUDA, in training mode."""
    import torch

    from workflow_scripts.lapt.procedures import StageContext

    model, _ = stage.prepare(model, hp, StageContext(n_source_rows=n_source_rows))
    if low:  # as lapt.loop.enter_stage: trainable parameters in fp32
        for p in model.parameters():
            if p.requires_grad and p.dtype != torch.float32:
                p.data = p.data.float()
    if device == "cuda":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model


def _time_step(
    entry: dict, est: dict, micro: int, model, loss_fn, optimizer, named, vocab: int, device, low: bool, repeats: int
) -> dict:
    """``entry`` measured by ``_measure`` at batch 8 in micro-batches of ``micro``, beside the estimate ``est``, with
    the stage's ``model``, ``loss_fn``, ``optimizer`` and ``named`` trainable parameters."""
    seq_len, accum = entry["seq_len"], 8 // micro
    step = functools.partial(
        _one_step, loss_fn, optimizer, named, micro, accum, seq_len, vocab, device, device == "cuda" or low
    )
    held: dict[str, int] = {}
    entry.update(micro_batch=micro, grad_accum=accum)
    states = functools.partial(_held_bytes, held, model, loss_fn, optimizer)
    i = entry["stage_index"]
    return _measure(entry, step, states, held, est, i, repeats=repeats, named=named, optimizer=optimizer, device=device)


def _planned_micro_batches(shape, procedure: str, objective: str, seq_len: int, hp: dict, gpu_classes) -> list:
    """The micro-batches ``planned`` picks on the GPU classes, largest first, each with the classes that pick it."""
    by_micro: dict[int, list[str]] = {}
    for cls in gpu_classes:
        est = planned(shape, procedure, objective, seq_len, hp, GPU_CLASSES[cls])
        by_micro.setdefault(est["micro_batch"], []).append(cls)
    return sorted(by_micro.items(), reverse=True)


def _measure(
    entry: dict, step, states, held: dict[str, int], est: dict, i: int, *, repeats: int, named, optimizer, device
) -> dict:
    """``entry`` measured: one untimed ``step`` (``states`` fills ``held`` with the tensor bytes it holds), then
    ``repeats`` timed ones, beside the estimate ``est`` of stage ``i``; an out-of-memory is recorded as such (the
    estimate said it fits: a failed check)."""
    import torch

    try:
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        step(states)
        peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
        seconds = []
        for _ in range(repeats):
            _sync()
            t0 = time.perf_counter()
            step()
            _sync()
            seconds.append(time.perf_counter() - t0)
    except torch.OutOfMemoryError as e:
        entry.update(oom=str(e).splitlines()[0], estimate_peak_gib=est["peak_gib"])
        optimizer.zero_grad(set_to_none=True)
        _free()
        return entry
    stage_est = est["per_stage"][i]
    measured = dict(held)
    if peak is not None:  # CUDA's allocator peak; the CUDA context is outside it
        measured["peak"] = peak
        measured["beyond_states"] = peak - sum(held.values())
    entry.update(
        step_seconds=_median(seconds),
        repeats=seconds,
        trainable_parameters=sum(p.numel() for _, p in named),
        measured_bytes=measured,
        estimate_bytes={k: int(stage_est[k]) for k in MEMORY_TERMS},
        estimate_step_seconds=est["step_seconds"],
        estimate_peak_gib=est["peak_gib"],
        estimate_stage_step_seconds=est["per_stage_step_seconds"][i],
    )
    return entry


def hardware() -> dict[str, Any]:
    import platform

    import torch
    import transformers

    info = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
        "torch_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return info


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, str]:
    """The options and the device they run on; a usage error when the real shapes find no CUDA device."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="result JSON (rewritten after every measured entry)")
    p.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU (a test of the script)")
    p.add_argument("--models", nargs="+", default=list(MODEL_ORDER), choices=list(ESTIMATE_NAMES))
    p.add_argument("--configfile", default="configs/paper.yaml", help="the grid whose LAPT job kinds are measured")
    p.add_argument(
        "--procedures",
        nargs="+",
        choices=list(BENCH_PROCEDURES),
        help="instead of the grid's jobs: these procedures x clm, mtp x --seq-lens",
    )
    p.add_argument(
        "--seq-lens",
        nargs="+",
        type=int,
        default=None,
        help="replace the jobs' sequence lengths (with --procedures default 512 2048; tiny: 16 32)",
    )
    p.add_argument(
        "--gpu-classes",
        nargs="+",
        default=["80GB", "141GB"],
        choices=["80GB", "141GB"],
        help="measure at the micro-batch gpu_estimate plans for each class (an 80 GB plan on an H200 "
        "shows its peak against 80 GB)",
    )
    p.add_argument("--weights-dtype", default="bf16", choices=["bf16", "fp32"], help="frozen weights (paper: bf16)")
    p.add_argument("--no-decoding", action="store_true", help="skip the teacher-forced decoding timings")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=480.0, help="start no measurement after this many seconds")
    a = p.parse_args(argv)
    import torch

    device = "cuda" if torch.cuda.is_available() and not a.tiny else "cpu"
    if device == "cpu" and not a.tiny:
        p.error("no CUDA device: the real shapes need a GPU (use --tiny on a CPU)")
    return a, device


def measurement_groups(a: argparse.Namespace) -> list[dict[str, Any]]:
    """What to measure, one group per built model: ``--procedures`` x clm, mtp x the sequence lengths, or else the
    job kinds of ``--configfile``'s grid, each with the hparams that change memory and ``--weights-dtype``."""
    if a.procedures:
        seq_lens = a.seq_lens or ([16, 32] if a.tiny else [512, 2048])
        return [
            {
                "model": m,
                "procedure": proc,
                "objectives": list(OBJECTIVES),
                "seq_lens": seq_lens,
                "hp": {"weights_dtype": a.weights_dtype},
            }
            for m in a.models
            for proc in a.procedures
        ]
    jobs = [j for j in paper_jobs(a.configfile) if j["model"] in a.models]
    groups = _job_groups(jobs)
    for g in groups:
        g["hp"] = {k: g["hp"][k] for k in ("eeve_layers", "stage_split", "lora_r", "lora_alpha")}
        g["hp"]["weights_dtype"] = a.weights_dtype
        if a.seq_lens:
            g["seq_lens"] = a.seq_lens
    return groups


def _time_decodings(result: dict[str, Any], a: argparse.Namespace, device: str, deadline: float) -> None:
    """Adds each model's decoding timings to ``result["decoding"]`` (a skipped entry once ``deadline`` is past),
    rewriting ``--out`` after each model."""
    tokens = (32, 16) if a.tiny else (64, 128)
    for name in [] if a.no_decoding else a.models:
        if time.monotonic() > deadline:
            result["decoding"].append({"model": name, "skipped": "--budget-s reached"})
            continue
        result["decoding"] += time_decoding(
            name, device=device, tiny=a.tiny, repeats=a.repeats, prompt_len=tokens[0], target_len=tokens[1]
        )
        write_json(a.out, result)


def _report(result: dict[str, Any], a: argparse.Namespace) -> int:
    """Prints the skipped entries as a note and each out-of-memory as a failure; the exit status, 1 on any
    out-of-memory."""
    skipped = sum("skipped" in e for e in result["training"] + result["decoding"])
    if skipped:
        print(f"{skipped} entries skipped by --budget-s {a.budget_s:g} (listed in {a.out})", file=sys.stderr)
    oom = [e for e in result["training"] if "oom" in e]
    for e in oom:
        what = f"{e['model']} {e['procedure']}/{e['stage']} {e['objective']} L{e['seq_len']} micro {e['micro_batch']}"
        print(f"FAILED: {what} ran out of memory (estimated peak {e['estimate_peak_gib']} GiB)", file=sys.stderr)
    return 1 if oom else 0


def main(argv: list[str] | None = None) -> int:
    a, device = parse_args(argv)
    deadline = time.monotonic() + a.budget_s
    groups = measurement_groups(a)
    result: dict[str, Any] = {
        "hardware": hardware(),
        "settings": {**vars(a), "device": device},
        "jobs": [{k: g[k] for k in ("model", "procedure", "objectives", "seq_lens", "hp")} for g in groups],
        "training": [],
        "decoding": [],
    }

    def emit(entry: dict[str, Any]) -> None:
        result["training"].append(entry)
        write_json(a.out, result)

    write_json(a.out, result)
    for g in groups:  # Gemma-2 first (MODEL_ORDER): the tightest fit is measured before the budget can cut it
        time_training(
            g["model"],
            g["procedure"],
            device=device,
            tiny=a.tiny,
            repeats=a.repeats,
            seq_lens=g["seq_lens"],
            objectives=g["objectives"],
            hp=g["hp"],
            gpu_classes=a.gpu_classes,
            deadline=deadline,
            emit=emit,
        )
    _time_decodings(result, a, device, deadline)
    result["wall_seconds"] = round(a.budget_s - (deadline - time.monotonic()), 1)
    write_json(a.out, result)
    return _report(result, a)


if __name__ == "__main__":
    sys.exit(main())
