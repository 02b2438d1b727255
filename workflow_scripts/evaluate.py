"""Target-language evaluation: English→target machine translation (mt, chrF) and held-out perplexity (ppl).

Paper 002 §6.4-§6.5: mt is zero-shot English→target translation scored with chrF (sacrebleu), the mean of per-sentence
chrF over the sampled test items, averaged over five runs (one run per ``--seed``; the runs are averaged by the tables
step); generation stops at the first newline, at most 128 new tokens. Perplexity on held-out target text is an
auxiliary metric; since it depends on the vocabulary, NLL per character and bits per character are reported too.

Prompt: the paper's mt template (Table 12) was lost in the conversion of the paper, and the paper translated its English
template into each target language. We use our own English template for every language (``MT_TEMPLATE``). It ends with
"{target}:" and no trailing space: byte-level and SentencePiece vocabularies attach the space to the next word, so a
prompt ending in a lone space forces an unusual token split; the model generates the space itself and the hypothesis is
stripped. The base models of the paper take plain text, so no chat template is applied (also for instruct models, the
same way for every method).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_scripts.io import (
    atomic_path,
    read_corpus,
    read_pairs,
    seed_everything,
    set_threads,
    setup_logging,
    write_json,
)

log = logging.getLogger("vocabexp")

# Names for the paper's ten target languages (ISO 639-1 codes, as in the config and the paths).
LANGUAGE_NAMES: dict[str, str] = {
    "ar": "Arabic",
    "my": "Burmese",
    "de": "German",
    "el": "Greek",
    "hi": "Hindi",
    "ja": "Japanese",
    "si": "Sinhala",
    "sw": "Swahili",
    "te": "Telugu",
    "th": "Thai",
}

# Our own English template (the paper's Table 12 text was lost in conversion); no trailing space, see module docstring.
# The evaluation tasks: one rule each in rules/evaluate.smk, writing results/{model}/{lang}/{method}/eval/{task}.json.
# mt, sum, mc, gmmlu run through LightEval (workflow_scripts/harness); mc_en, gmmlu_en are the English retention checks
# (Table 9): English Belebele, and the original English MMLU (lighteval/mmlu, LightEval's MMLU prompt).
TASKS = ("mt", "ppl", "speed", "sum", "mc", "gmmlu", "mc_en", "gmmlu_en")
MT_TEMPLATE = "Translate the following sentence from English to {target}.\nEnglish: {source}\n{target}:"

# Table 13 (b): beam sampling. "greedy" is the deterministic default for cheap runs and the speed measurement.
DECODING: dict[str, dict[str, Any]] = {
    "greedy": {"do_sample": False, "num_beams": 1},
    "paper": {
        "do_sample": True,
        "num_beams": 5,
        "temperature": 0.8,
        "top_k": 40,
        "top_p": 0.9,
        "repetition_penalty": 1.1,
        "early_stopping": True,
    },
}


def language_name(lang: str) -> str:
    """English name of a target language code, with an error naming the known codes."""
    try:
        return LANGUAGE_NAMES[lang]
    except KeyError:
        raise ValueError(f"no language name for {lang!r}; known codes: {sorted(LANGUAGE_NAMES)}") from None


def mt_prompt(source: str, lang: str) -> str:
    """The zero-shot English→target translation prompt for one source sentence."""
    return MT_TEMPLATE.format(target=language_name(lang), source=source)


def read_cell(arg: str) -> dict:
    """The grid cell from ``--cell``: inline JSON, or the path of a JSON file."""
    text = arg if arg.lstrip().startswith("{") else Path(arg).read_text(encoding="utf-8")
    cell = json.loads(text)
    if not isinstance(cell, dict):
        raise ValueError(f"--cell must be a JSON object, got {type(cell).__name__}")
    return cell


def load_model(model_dir: str | Path, dtype: str = "auto", device: str | None = None):
    """Load a causal LM and its tokenizer for inference: eval mode, left padding, a pad token (EOS when missing).

    ``dtype`` "auto" is bfloat16 on a GPU and float32 on CPU.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dtype == "auto":
        torch_dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    else:
        torch_dtype = getattr(torch, dtype)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    # Decoder-only generation appends to the right end of each row: pads must be on the left.
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype).to(device).eval()
    return model, tokenizer


def newline_token_mask(tokenizer, vocab_size: int):
    """Boolean tensor over token ids: True where the token's text contains a newline (the stop condition)."""
    import torch

    n = min(len(tokenizer), vocab_size)
    texts = tokenizer.batch_decode([[i] for i in range(n)], skip_special_tokens=False)
    mask = torch.zeros(vocab_size, dtype=torch.bool)
    mask[:n] = torch.tensor(["\n" in t for t in texts], dtype=torch.bool)
    return mask


def _newline_criterion(mask, prompt_len: int):
    """A per-sequence stopping criterion: a row is done once any generated token contains a newline.

    Rows stop individually (transformers pads finished rows), and generation ends when every row is done.
    """
    from transformers import StoppingCriteria

    on_device = {}  # one copy of the mask per device, made at the first step and reused (no host copy per step)

    class NewlineStop(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            generated = input_ids[:, prompt_len:]
            if generated.device not in on_device:
                on_device[generated.device] = mask.to(generated.device)
            return on_device[generated.device][generated].any(dim=1)

    return NewlineStop()


@dataclass
class Generation:
    """One generated continuation: its text (decoded, cut at the first newline, stripped) and its token counts."""

    text: str
    raw_text: str  # everything generated up to the stop token, decoded without special tokens
    new_tokens: int  # generated tokens up to and including the stop token (newline or EOS)
    prompt_tokens: int


def generate(
    model,
    tokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int = 128,
    decoding: str = "greedy",
    stop: str = "newline",
    newline_mask=None,
) -> list[Generation]:
    """Generate continuations of one batch of prompts (left-padded), stopping at the first newline (§6.4).

    ``stop="length"`` ignores newlines and EOS and generates exactly ``max_new_tokens`` (a pure decoding benchmark).
    """
    import torch
    from transformers import GenerationConfig, StoppingCriteriaList

    if decoding not in DECODING:
        raise ValueError(f"unknown decoding {decoding!r}; expected one of {sorted(DECODING)}")
    if stop not in ("newline", "length"):
        raise ValueError(f"unknown stop {stop!r}; expected 'newline' or 'length'")
    vocab_size = model.get_output_embeddings().weight.shape[0]
    if newline_mask is None:
        newline_mask = newline_token_mask(tokenizer, vocab_size)
    enc = tokenizer(prompts, return_tensors="pt", padding=True).to(model.device)
    prompt_len = enc["input_ids"].shape[1]
    # A fresh config, so that defaults stored with a checkpoint (temperature, top_p, ...) never leak into the runs.
    config = GenerationConfig(
        max_new_tokens=max_new_tokens,
        min_new_tokens=max_new_tokens if stop == "length" else 0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        **DECODING[decoding],
    )
    criteria = StoppingCriteriaList([_newline_criterion(newline_mask, prompt_len)] if stop == "newline" else [])
    with torch.inference_mode():
        out = model.generate(**enc, generation_config=config, stopping_criteria=criteria)
    gen = out[:, prompt_len:].cpu()
    prompt_counts = enc["attention_mask"].sum(dim=1).tolist()
    stops = newline_mask[gen] if stop == "newline" else torch.zeros_like(gen, dtype=torch.bool)
    if stop == "newline" and tokenizer.eos_token_id is not None:
        stops |= gen == tokenizer.eos_token_id
    results = []
    for row, stop_row, n_prompt in zip(gen, stops, prompt_counts, strict=True):
        hits = stop_row.nonzero()
        length = int(hits[0]) + 1 if len(hits) else len(row)
        raw = tokenizer.decode(row[:length], skip_special_tokens=True)
        results.append(Generation(raw.split("\n", 1)[0].strip(), raw, length, int(n_prompt)))
    return results


def chrf_scores(hypotheses: list[str], references: list[str]) -> tuple[float, float]:
    """(mean sentence-level chrF, corpus chrF) with sacrebleu's default chrF (character 6-grams, beta 2)."""
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    per_sentence = [metric.sentence_score(h, [r]).score for h, r in zip(hypotheses, references, strict=True)]
    corpus = metric.corpus_score(hypotheses, [references]).score
    return sum(per_sentence) / len(per_sentence), corpus


def evaluate_mt(
    model,
    tokenizer,
    pairs: list[tuple[str, str]],
    lang: str,
    *,
    max_new_tokens: int = 128,
    batch_size: int = 8,
    decoding: str = "greedy",
    seed: int = 0,
) -> dict:
    """Zero-shot English→target translation of ``pairs``, scored with chrF (§6.4, §6.5).

    Returns records, details and the predictions as (source, reference, hypothesis) triples.
    """
    import torch

    seed_everything(seed)
    newline_mask = newline_token_mask(tokenizer, model.get_output_embeddings().weight.shape[0])
    hypotheses: list[Generation] = []
    t0 = time.perf_counter()
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        prompts = [mt_prompt(en, lang) for en, _ in batch]
        hypotheses += generate(
            model, tokenizer, prompts, max_new_tokens=max_new_tokens, decoding=decoding, newline_mask=newline_mask
        )
        log.info("mt: %d/%d generated", len(hypotheses), len(pairs))
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    texts = [g.text for g in hypotheses]
    refs = [ref for _, ref in pairs]
    chrf, chrf_corpus = chrf_scores(texts, refs)
    details = {
        "n": len(pairs),
        "language": lang,
        "template": MT_TEMPLATE,
        "decoding": decoding,
        "decoding_parameters": DECODING[decoding],
        "seed": seed,
        "max_new_tokens": max_new_tokens,
        "batch_size": batch_size,
        "empty_hypotheses": sum(not t for t in texts),
        "hit_max_new_tokens": sum(g.new_tokens >= max_new_tokens for g in hypotheses),
        "generated_tokens": sum(g.new_tokens for g in hypotheses),
        "generation_seconds": round(seconds, 3),
    }
    records = [
        {"task": "mt", "metric": "chrF", "value": chrf},
        {"task": "mt", "metric": "chrF_corpus", "value": chrf_corpus},
    ]
    predictions = [(en, ref, hyp) for (en, ref), hyp in zip(pairs, texts, strict=True)]
    return {"records": records, "details": details, "predictions": predictions}


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
        with torch.inference_mode():
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
    }
    return {"records": records, "details": details}


def read_sentences(path: str | Path, n: int | None = None) -> list[str]:
    """The first ``n`` usable lines of a one-sentence-per-line file (``io.read_corpus``: an empty file is refused)."""
    sentences = read_corpus(path, what="held-out text")
    return sentences[:n] if n is not None else sentences


def write_predictions(path: str | Path, predictions: list[tuple[str, str, str]]) -> None:
    """Write (source, reference, hypothesis) rows as a TSV with a header; tabs inside fields become spaces."""
    lines = ["source\treference\thypothesis"]
    lines += ["\t".join(field.replace("\t", " ").replace("\n", " ") for field in row) for row in predictions]
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")


def add_common_args(p: argparse.ArgumentParser, batch_size: int = 8) -> None:
    """The arguments every model-running result CLI shares (evaluate mt / ppl, speed)."""
    p.add_argument("--model", required=True, help="HF model folder")
    p.add_argument("--n", type=int, default=None, help="first n items (default: all)")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--cell", required=True, help="grid cell as JSON, or a JSON file")
    p.add_argument("--out", required=True, help="result JSON")
    p.add_argument("--data-label", default=None, help="copied into details.data_label (e.g. the stand-in data note)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--log")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="task", required=True)
    mt = sub.add_parser("mt", help="English→target translation, chrF")
    add_common_args(mt)
    mt.add_argument("--pairs", required=True, help="TSV English<TAB>target")
    mt.add_argument("--lang", required=True, choices=sorted(LANGUAGE_NAMES))
    mt.add_argument("--max-new-tokens", type=int, default=128)
    mt.add_argument("--decoding", default="greedy", choices=sorted(DECODING))
    mt.add_argument("--seed", type=int, default=0)
    mt.add_argument("--predictions", required=True, help="output TSV: source, reference, hypothesis")
    ppl = sub.add_parser("ppl", help="perplexity and bits per character on held-out text")
    add_common_args(ppl)
    ppl.add_argument("--text", required=True, help="held-out text, one sentence a line")
    a = p.parse_args(argv)

    setup_logging(a.log)
    set_threads(a.threads)
    cell = read_cell(a.cell)
    t0 = time.time()
    # The text is read first, so a bad file is refused before the model is loaded.
    pairs = read_pairs(a.pairs, a.n) if a.task == "mt" else None
    sentences = read_sentences(a.text, a.n) if a.task == "ppl" else None
    model, tokenizer = load_model(a.model, a.dtype)
    if a.task == "mt":
        result = evaluate_mt(
            model,
            tokenizer,
            pairs,
            a.lang,
            max_new_tokens=a.max_new_tokens,
            batch_size=a.batch_size,
            decoding=a.decoding,
            seed=a.seed,
        )
        write_predictions(a.predictions, result.pop("predictions"))
        result["details"]["pairs_file"] = str(a.pairs)
    else:
        result = evaluate_ppl(model, tokenizer, sentences, batch_size=a.batch_size)
        result["details"]["text_file"] = str(a.text)
    details = {"model_dir": str(a.model), **result["details"], "seconds": round(time.time() - t0, 2)}
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": result["records"], "details": details})
    log.info("%s: %s", a.task, {r["metric"]: round(r["value"], 4) for r in result["records"]})


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
