"""Serving speed in llama.cpp (rule serve_speed, docs/serving.md): teacher forcing of the mt references, one token a
step through llama.cpp's KV cache, with Source's GGUF timed item by item next to the model's in the same job.

The measurement is the speed step's own (workflow_scripts/speed/measure.py: the same items, counts, repeats,
counterbalanced pairing, records and bound); only the engine differs, so ``paired_speedup`` ÷ ``token_ratio_bound``
here stands next to the transformers one in speed.json. Records carry ``engine: llama.cpp`` and the GGUF type.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from workflow_scripts.io import cli_main, setup_logging, write_json
from workflow_scripts.languages import language_arg
from workflow_scripts.serve.fidelity import open_gguf
from workflow_scripts.speed.decoders import Forced
from workflow_scripts.speed.measure import encode_items, rate_records, time_teacher_forced
from workflow_scripts.speed.units import summary


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
    timing = time_teacher_forced(decoder, tokenizer, source_tokenizer, prompt_ids, target_ids, repeats=repeats,
                                 warmup=warmup, baseline=(source, *source_ids))  # fmt: skip
    variant = {"mode": "teacher_forced", "decoding": "greedy", "batch_size": 1, "engine": "llama.cpp",
               "gguf": model_gguf.name.removeprefix("model.").removesuffix(".gguf")}  # fmt: skip
    records = rate_records("mt", timing, **variant)
    paired = timing["paired"]
    records.append({"task": "mt", "metric": "paired_speedup", **summary(paired), "repeats": paired, **variant})
    records.append({"task": "mt", "metric": "argmax_matches", "value": timing["matches"], **variant})
    return records


def main(argv: list[str] | None = None) -> None:
    from workflow_scripts.speed.__main__ import mt_items

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", required=True, type=Path, help="the cell's GGUF file")
    ap.add_argument("--source-gguf", required=True, type=Path, help="Source's GGUF file of the same type")
    ap.add_argument("--model", required=True, type=Path, help="the cell's transformers folder (its tokenizer)")
    ap.add_argument("--source", required=True, type=Path, help="the source model's folder (its tokenizer)")
    ap.add_argument("--pairs", required=True, help="mt.tsv: English and target sentences")
    ap.add_argument("--lang", required=True, type=language_arg)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--reference-chars", type=int, default=0, help="first N characters of each reference (0: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cell", default="{}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log)
    items = mt_items(args.pairs, args.lang, args.n, args.reference_chars or None)
    records = measure(args.gguf, args.source_gguf, args.model, args.source, items, repeats=args.repeats,
                      warmup=args.warmup, threads=args.threads)  # fmt: skip
    by = {r["metric"]: r["value"] for r in records}
    speedup, limit = by["paired_speedup"], by["token_ratio_bound"]
    log.info(
        "llama.cpp paired speed-up %.3f, bound %.3f (%.3f of it), %d items", speedup, limit, speedup / limit, len(items)
    )
    write_json(args.out, {"cell": json.loads(args.cell), "lang": args.lang, "records": records})


if __name__ == "__main__":
    cli_main(main)
