"""Held-out perplexity (the ppl task): perplexity, NLL per character and bits per character of target-language text.

Paper 002 §6.5: perplexity on held-out target text is an auxiliary metric; since it depends on the vocabulary, NLL per
character and bits per character are reported too (they compare across vocabularies).
"""

from __future__ import annotations

import argparse
import logging
import math
import time

from workflow_scripts.inference import add_common_args, items_used, load_model, read_cell, read_sentences
from workflow_scripts.io import set_threads, setup_logging, write_json

log = logging.getLogger("vocabexp")


def tokenize_for_ppl(tokenizer, sentences: list[str]) -> list[list[int]]:
    """Token ids for scoring each sentence: the tokenizer's own special tokens (BOS where it adds one by default).

    A tokenizer that adds no BOS (byte-level BPE such as SmolLM2's or GPT-2's) gets a context token prepended (its BOS,
    else EOS), as lm-evaluation-harness does for rolling log-likelihoods, so that every text token is predicted and
    NLL per character covers the whole sentence whatever the vocabulary.
    """
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    out = []
    for s in sentences:
        ids = tokenizer(s)["input_ids"]
        if not ids or ids[0] != tokenizer.bos_token_id:
            if prefix is None:
                raise ValueError("tokenizer has neither BOS nor EOS token to condition the first text token on")
            ids = [prefix, *ids]
        out.append(ids)
    return out


def sentence_nll(model, token_ids: list[list[int]], batch_size: int = 8) -> list[float]:
    """Summed negative log-likelihood (nats) of tokens 1..n of each sequence given the preceding ones.

    Batches are right-padded with an attention mask; padded positions are excluded from the loss. Sequences are
    batched by length to reduce padding; results come back in input order.
    """
    import torch

    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    nll = [0.0] * len(token_ids)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        width = max(len(token_ids[i]) for i in idx)
        ids = torch.zeros(len(idx), width, dtype=torch.long)
        attn = torch.zeros(len(idx), width, dtype=torch.long)
        for row, i in enumerate(idx):
            ids[row, : len(token_ids[i])] = torch.tensor(token_ids[i])
            attn[row, : len(token_ids[i])] = 1
        ids, attn = ids.to(model.device), attn.to(model.device)
        # no_grad, not inference_mode: an FSDP-sharded model (a LAPT job's curve, lapt/curve.py) keeps buffers made
        # in its forward for its training steps, and inference tensors cannot be written outside inference mode.
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=attn).logits.float()
        labels = ids[:, 1:].masked_fill(attn[:, 1:] == 0, -100)
        token_nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].transpose(1, 2), labels, ignore_index=-100, reduction="none"
        )
        for row, value in zip(idx, token_nll.sum(dim=1).tolist(), strict=True):
            nll[row] = value
    return nll


def evaluate_ppl(model, tokenizer, sentences: list[str], *, batch_size: int = 8) -> dict:
    """Perplexity, NLL per character and bits per character of held-out target text (§6.5, auxiliary metric).

    Perplexity (exp of the token-mean NLL) compares only models with the same vocabulary; NLL and bits per character
    (characters = Unicode code points) compare across vocabularies.
    """
    token_ids = tokenize_for_ppl(tokenizer, sentences)
    nll = sentence_nll(model, token_ids, batch_size)
    total_nll = sum(nll)
    predicted = sum(len(ids) - 1 for ids in token_ids)
    chars = sum(len(s) for s in sentences)
    nll_per_char = total_nll / chars
    records = [
        {"task": "ppl", "metric": "perplexity", "value": math.exp(total_nll / predicted)},
        {"task": "ppl", "metric": "nll_per_char", "value": nll_per_char},
        {"task": "ppl", "metric": "bits_per_char", "value": nll_per_char / math.log(2)},
        {"task": "ppl", "metric": "tokens_per_sentence", "value": predicted / len(sentences)},
    ]
    details = {
        "n": len(sentences),
        "predicted_tokens": predicted,
        "characters": chars,
        "total_nll_nats": total_nll,
        "batch_size": batch_size,
        # The unscored first token of every sequence: the tokenizer's BOS, or the context token we prepended.
        "context_token": tokenizer.convert_ids_to_tokens(token_ids[0][0]),
        # per sentence, in the order of the held-out file: what the paired bootstrap of the tables resamples
        # (workflow_scripts/intervals.py); sums of these are the totals above
        "nll_nats": [float(x) for x in nll],
        "chars": [len(s) for s in sentences],
    }
    return {"records": records, "details": details}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--text", required=True, help="held-out text, one sentence a line")
    a = p.parse_args(argv)

    setup_logging(a.log)
    set_threads(a.threads)
    cell = read_cell(a.cell)
    t0 = time.time()
    # The text is read first, so a bad file is refused before the model is loaded.
    sentences = read_sentences(a.text, a.n)
    model, tokenizer = load_model(a.model, a.dtype)
    result = evaluate_ppl(model, tokenizer, sentences, batch_size=a.batch_size)
    result["details"]["text_file"] = str(a.text)
    result["details"].update(items_used("ppl", a.n, len(sentences), a.text))
    details = {"model_dir": str(a.model), **result["details"], "seconds": round(time.time() - t0, 2)}
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": result["records"], "details": details})
    log.info("ppl: %s", {r["metric"]: round(r["value"], 4) for r in result["records"]})


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
