"""Inference efficiency (paper 002 §6.5, Table 4): tokens generated per second on the mt prompts.

Every method gets the identical prompts (the same first n English sources, the same template, see
``evaluate.MT_TEMPLATE``), greedy decoding, batch size 1 as the paper's reference code, a fixed ``max_new_tokens``, and
a warm-up call that is not timed. ``time.perf_counter`` wraps each generate call (after ``torch.cuda.synchronize`` on a
GPU), so tokenization and decoding are not timed.

What is timed: by default the real mt generation, stopping at the first newline (or EOS), as the paper timed its task
generation. The counts therefore depend on what each model generates; tokens/s is a rate and stays comparable, and
characters/s (decoded text, newline included) measures the speed on text, which is what a larger vocabulary buys.
``--stop length`` instead generates exactly ``max_new_tokens`` for every prompt (EOS and newlines ignored), a pure
decoding-throughput benchmark independent of the outputs.
"""

from __future__ import annotations

import argparse
import logging
import time

from workflow_scripts.evaluate import (
    add_common_args,
    generate,
    load_model,
    mt_prompt,
    newline_token_mask,
    read_cell,
    read_pairs,
)
from workflow_scripts.io import set_threads, setup_logging, write_json

log = logging.getLogger("vocabexp")


def _sync(model) -> None:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)


def measure_speed(
    model,
    tokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int = 128,
    batch_size: int = 1,
    stop: str = "newline",
) -> dict:
    """Greedy generation speed over ``prompts``: tokens/s, characters/s, mean generated and prompt tokens (§6.5).

    Generated tokens count up to and including each row's stop token; rows that finished early in a batch do not count
    their padding.
    """
    newline_mask = newline_token_mask(tokenizer, model.get_output_embeddings().weight.shape[0])
    kwargs = {"max_new_tokens": max_new_tokens, "decoding": "greedy", "stop": stop, "newline_mask": newline_mask}
    # Warm-up (not timed): first-call allocations and kernel selection would otherwise be charged to the first prompt.
    generate(model, tokenizer, prompts[:batch_size], **kwargs)
    seconds = 0.0
    generations = []
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start : start + batch_size]
        _sync(model)
        t0 = time.perf_counter()
        out = generate(model, tokenizer, batch, **kwargs)
        _sync(model)
        seconds += time.perf_counter() - t0
        generations += out
    tokens = sum(g.new_tokens for g in generations)
    chars = sum(len(g.raw_text) for g in generations)
    records = [
        {"task": "mt", "metric": "tokens_per_second", "value": tokens / seconds},
        {"task": "mt", "metric": "chars_per_second", "value": chars / seconds},
        {"task": "mt", "metric": "generated_tokens", "value": tokens / len(generations)},
        {
            "task": "mt",
            "metric": "prompt_tokens",
            "value": sum(g.prompt_tokens for g in generations) / len(generations),
        },
    ]
    details = {
        "n": len(prompts),
        "batch_size": batch_size,
        "max_new_tokens": max_new_tokens,
        "stop": stop,
        "decoding": "greedy",
        "generated_tokens_total": tokens,
        "generated_chars_total": chars,
        "generation_seconds": round(seconds, 4),
        "device": str(model.device),
    }
    return {"records": records, "details": details}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p, batch_size=1)  # batch size 1 as in the paper
    p.add_argument("--pairs", required=True, help="mt TSV English<TAB>target (only the English side is used)")
    p.add_argument("--lang", required=True)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--stop", default="newline", choices=["newline", "length"])
    a = p.parse_args(argv)

    setup_logging(a.log)
    set_threads(a.threads)
    cell = read_cell(a.cell)
    model, tokenizer = load_model(a.model, a.dtype)
    prompts = [mt_prompt(en, a.lang) for en, _ in read_pairs(a.pairs, a.n)]
    result = measure_speed(
        model, tokenizer, prompts, max_new_tokens=a.max_new_tokens, batch_size=a.batch_size, stop=a.stop
    )
    details = {"model_dir": str(a.model), "pairs_file": str(a.pairs), "language": a.lang, **result["details"]}
    if a.threads:
        details["threads"] = a.threads
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": result["records"], "details": details})
    log.info("speed: %s", {r["metric"]: round(r["value"], 3) for r in result["records"]})


if __name__ == "__main__":
    main()
