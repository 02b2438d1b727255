"""Serving speed (rule serve_speed, docs/serving.md), the cell timed next to Source item by item in one job.

- ``llama.cpp`` (CPU): teacher forcing of the mt references, one token a step through llama.cpp's KV cache, the
  cell's GGUF against Source's. The measurement is the speed step's own (workflow_scripts/speed/measure.py: the same
  items, counts, repeats, counterbalanced pairing, records and bound); only the engine differs, so
  ``paired_speedup`` ÷ ``token_ratio_bound`` here stands next to the transformers one in speed.json. Records carry
  ``engine: llama.cpp`` and the GGUF type.
- ``vllm`` (GPU): vLLM has no one-token-at-a-time teacher forcing, so each mt prompt generates a fixed number of
  greedy tokens (``ignore_eos``) from the transformers folders; the bound is taken on the generated text and
  ``paired_speedup`` is the ratio of source-tokenizer tokens per second, model over Source, per repeat. Records carry
  ``engine: vllm`` and mode ``generate_fixed``. vLLM is imported only here, in the job.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from workflow_scripts.io import UserError, cli_main, setup_logging, write_json
from workflow_scripts.serve.fidelity import open_gguf
from workflow_scripts.speed.decoders import Forced
from workflow_scripts.speed.measure import encode_items, rate_records, time_teacher_forced
from workflow_scripts.speed.units import TextCounts, count_text, summary


class LlamaCppDecoder:
    """The speed step's Decoder for teacher forcing, on a llama.cpp model (CPU: nothing to synchronise)."""

    def __init__(self, llm):
        self.llm = llm

    def sync(self) -> None:
        pass

    def own_tokens(self, ids: list[int]) -> int:
        return len(ids)

    def _argmax(self) -> int:
        import numpy as np

        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.llm.n_vocab(),))
        return int(logits.argmax())

    def teacher_force(self, prompt_ids: list[int], target_ids: list[int]) -> Forced:
        """The prompt in one batch, then one llama_decode per target token, each followed by its argmax as a greedy
        step would pick it; the steps are timed together."""
        llm = self.llm
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt_ids)
        predicted = [self._argmax()]
        t1 = time.perf_counter()
        for token in target_ids:
            llm.eval([token])
            predicted.append(self._argmax())
        t2 = time.perf_counter()
        matches = sum(p == t for p, t in zip(predicted, target_ids, strict=False))
        return Forced(steps=len(target_ids), seconds=t2 - t1, prefill_seconds=t1 - t0, matches=matches)


def measure(
    model_gguf: Path,
    source_gguf: Path,
    model_dir: Path,
    source_dir: Path,
    items,
    *,
    repeats: int,
    warmup: int,
    threads: int,
) -> list[dict]:
    """The paired teacher-forcing records of the mt items in llama.cpp, model against Source."""
    from transformers import AutoTokenizer

    tokenizer, source_tokenizer = AutoTokenizer.from_pretrained(model_dir), AutoTokenizer.from_pretrained(source_dir)
    prompt_ids, target_ids = encode_items(tokenizer, items)
    source_ids = encode_items(source_tokenizer, items)
    n_ctx = max(len(p) + len(t) for p, t in zip(*source_ids, strict=True)) + 8
    n_ctx = max(n_ctx, max(len(p) + len(t) for p, t in zip(prompt_ids, target_ids, strict=True)) + 8)
    decoder = LlamaCppDecoder(open_gguf(model_gguf, n_ctx=n_ctx, threads=threads))
    source = LlamaCppDecoder(open_gguf(source_gguf, n_ctx=n_ctx, threads=threads))
    timing = time_teacher_forced(
        decoder,
        tokenizer,
        source_tokenizer,
        prompt_ids,
        target_ids,
        repeats=repeats,
        warmup=warmup,
        baseline=(source, *source_ids),
    )
    variant = {
        "mode": "teacher_forced",
        "decoding": "greedy",
        "batch_size": 1,
        "engine": "llama.cpp",
        "gguf": model_gguf.name.removeprefix("model.").removesuffix(".gguf"),
    }
    records = rate_records("mt", timing, **variant)
    paired = timing["paired"]
    records.append({"task": "mt", "metric": "paired_speedup", **summary(paired), "repeats": paired, **variant})
    records.append({"task": "mt", "metric": "argmax_matches", "value": timing["matches"], **variant})
    return records


VLLM_MODE = "generate_fixed"  # greedy generation of exactly max_new_tokens per prompt (not the speed step's generate)
# two engines share one GPU in the job: each takes this share of its memory (weights and KV cache)
VLLM_MEMORY_SHARE = 0.4


def sampling_params(vllm, max_new_tokens: int):
    """Fixed-length greedy generation: temperature 0, exactly ``max_new_tokens`` tokens (end-of-sequence ignored)."""
    return vllm.SamplingParams(temperature=0, max_tokens=max_new_tokens, ignore_eos=True)


def open_vllm(vllm, model_dir: Path, seed: int = 0):
    """A vLLM engine on a transformers folder (its own tokenizer), sharing the GPU with a second one."""
    return vllm.LLM(
        model=str(model_dir),
        tokenizer=str(model_dir),
        dtype="auto",
        seed=seed,
        gpu_memory_utilization=VLLM_MEMORY_SHARE,
    )


class VllmDecoder:
    """Fixed-length greedy generation on a vLLM engine (``vllm.LLM``), one prompt a call (batch size 1, as the
    other engines are timed); ``generate`` returns the new ids and its wall time (LLM.generate returns once the
    tokens are on the host: nothing to synchronise)."""

    def __init__(self, llm, params):
        self.llm, self.params = llm, params

    def generate(self, prompt_ids: list[int]) -> tuple[list[int], float]:
        t0 = time.perf_counter()
        (output,) = self.llm.generate([{"prompt_token_ids": prompt_ids}], self.params, use_tqdm=False)
        seconds = time.perf_counter() - t0
        return list(output.outputs[0].token_ids), seconds


def time_fixed_generation(
    decoder, source, tokenizer, source_tokenizer, prompt_ids, source_prompt_ids, *, repeats: int, warmup: int
) -> dict:
    """Generate for every prompt with the cell's and Source's decoder, item by item in alternating order (as
    ``time_teacher_forced`` pairs them), ``repeats`` times after ``warmup`` untimed items. Per repeat: the counts and
    seconds of the cell's outputs, and ``paired``: its source-tokenizer tokens per second over Source's."""
    zero = TextCounts(0, 0, 0)

    def counts_of(tok, outputs: list[list[int]]) -> TextCounts:
        # special tokens stay in the text: with ignore_eos a model may go on emitting them, and each was a step
        texts = [tok.decode(o, skip_special_tokens=False) for o in outputs]
        return sum((count_text(t, len(o), source_tokenizer) for t, o in zip(texts, outputs, strict=True)), zero)

    for _ in range(warmup):
        decoder.generate(prompt_ids[0])
        source.generate(source_prompt_ids[0])
    per_repeat, paired, outputs = [], [], []
    for r in range(repeats):
        timed: dict[str, list] = {"cell": [], "source": []}
        for i, (p, sp) in enumerate(zip(prompt_ids, source_prompt_ids, strict=True)):
            order = [("source", source, sp), ("cell", decoder, p)]  # Source first when i + r is odd
            for side, engine, ids in order if (i + r) % 2 == 1 else order[::-1]:
                timed[side].append(engine.generate(ids))
        outputs = [ids for ids, _ in timed["cell"]]
        seconds, source_seconds = (sum(s for _, s in timed[side]) for side in ("cell", "source"))
        counts = counts_of(tokenizer, outputs)
        source_counts = counts_of(source_tokenizer, [ids for ids, _ in timed["source"]])
        per_repeat.append((counts, seconds))
        if not counts.source_tokens or not source_counts.source_tokens:
            raise ValueError("a model generated no text to count in source tokens: the paired speed-up is undefined")
        paired.append((counts.source_tokens / seconds) / (source_counts.source_tokens / source_seconds))
    return {"per_repeat": per_repeat, "steps": sum(map(len, outputs)), "paired": paired, "outputs": outputs}


def fixed_generation_records(timing: dict, max_new_tokens: int) -> list[dict]:
    """The records of ``time_fixed_generation``: the speed step's rate records, the paired speed-up, the tokens per
    prompt; variant ``vllm.generate_fixed.greedy.b1``."""
    variant = {"mode": VLLM_MODE, "decoding": "greedy", "batch_size": 1, "engine": "vllm"}
    records = rate_records("mt", timing, **variant)
    paired = timing["paired"]
    records.append({"task": "mt", "metric": "paired_speedup", **summary(paired), "repeats": paired, **variant})
    records.append({"task": "mt", "metric": "max_new_tokens", "value": max_new_tokens, **variant})
    return records


def measure_vllm(
    model_dir: Path, source_dir: Path, items, *, max_new_tokens: int, repeats: int, warmup: int, vllm=None
) -> list[dict]:
    """The paired fixed-length generation records of the mt prompts in vLLM, model against Source (``vllm``: the
    module, imported here when not given)."""
    from transformers import AutoTokenizer

    if vllm is None:
        import vllm
    tokenizer, source_tokenizer = AutoTokenizer.from_pretrained(model_dir), AutoTokenizer.from_pretrained(source_dir)
    params = sampling_params(vllm, max_new_tokens)
    decoder = VllmDecoder(open_vllm(vllm, model_dir), params)
    source = VllmDecoder(open_vllm(vllm, source_dir), params)
    prompt_ids, _ = encode_items(tokenizer, items)
    source_ids, _ = encode_items(source_tokenizer, items)
    timing = time_fixed_generation(
        decoder, source, tokenizer, source_tokenizer, prompt_ids, source_ids, repeats=repeats, warmup=warmup
    )
    return fixed_generation_records(timing, max_new_tokens)


def main(argv: list[str] | None = None) -> None:
    from workflow_scripts.speed.items import add_mt_item_args, mt_items

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--engine", choices=["llama.cpp", "vllm"], default="llama.cpp")
    ap.add_argument("--gguf", type=Path, help="llama.cpp: the cell's GGUF file")
    ap.add_argument("--source-gguf", type=Path, help="llama.cpp: Source's GGUF file of the same type")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="vllm: greedy tokens generated per prompt")
    ap.add_argument("--model", required=True, type=Path, help="the cell's transformers folder (its tokenizer)")
    ap.add_argument("--source", required=True, type=Path, help="the source model's folder (its tokenizer)")
    add_mt_item_args(ap)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cell", default="{}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log)
    if args.engine == "vllm":
        items = mt_items(args.pairs, args.lang, args.n)
        records = measure_vllm(
            args.model, args.source, items, max_new_tokens=args.max_new_tokens, repeats=args.repeats, warmup=args.warmup
        )
    else:
        if args.gguf is None or args.source_gguf is None:
            raise UserError("--engine llama.cpp needs --gguf and --source-gguf")
        items = mt_items(args.pairs, args.lang, args.n, args.reference_chars or None)
        records = measure(
            args.gguf,
            args.source_gguf,
            args.model,
            args.source,
            items,
            repeats=args.repeats,
            warmup=args.warmup,
            threads=args.threads,
        )
    by = {r["metric"]: r["value"] for r in records}
    speedup, limit = by["paired_speedup"], by["token_ratio_bound"]
    log.info(
        "%s paired speed-up %.3f, bound %.3f (%.3f of it), %d items",
        args.engine,
        speedup,
        limit,
        speedup / limit,
        len(items),
    )
    write_json(args.out, {"cell": json.loads(args.cell), "lang": args.lang, "records": records})


if __name__ == "__main__":
    cli_main(main)
