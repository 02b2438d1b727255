"""Does the GGUF behave as the transformers folder it was converted from? Token ids of held-out sentences from
llama.cpp's tokenizer against the Hugging Face tokenizer's, and greedy continuations from llama.cpp against
transformers' on the same input ids (docs/serving.md). Needs llama-cpp-python (``make llama-cpp``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from workflow_scripts.io import UserError, cli_main, read_corpus, setup_logging, write_json
from workflow_scripts.languages import language_arg


def llama_cpp():
    try:
        import llama_cpp
    except ImportError as e:
        raise UserError("llama-cpp-python is not installed: run `make llama-cpp` (docs/serving.md)") from e
    return llama_cpp


def open_gguf(path: str | Path, *, vocab_only: bool = False, n_ctx: int = 512, threads: int = 1):
    """A llama.cpp model from a GGUF file (vocab_only: the tokenizer alone), quiet; prompts up to n_ctx tokens are
    evaluated in one batch."""
    n_ctx = max(n_ctx, 512)
    return llama_cpp().Llama(
        model_path=str(path),
        vocab_only=vocab_only,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        seed=0,
        verbose=False,
    )


def token_mismatches(llm, tokenizer, sentences: list[str]) -> list[dict]:
    """The sentences whose llama.cpp token ids differ from the HF tokenizer's (no special tokens on either side)."""
    out = []
    for i, text in enumerate(sentences):
        ours = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        theirs = tokenizer(text, add_special_tokens=False)["input_ids"]
        if ours != theirs:
            out.append({"index": i, "text": text, "llama_cpp": ours, "transformers": theirs})
    return out


def greedy_transformers(model, ids: list[int], n: int) -> list[int]:
    """n greedy tokens after ``ids`` (argmax each step; an end-of-sequence token does not stop it)."""
    import torch

    out, past, step = [], None, torch.tensor([ids])
    with torch.no_grad():
        for _ in range(n):
            result = model(input_ids=step, past_key_values=past, use_cache=True)
            past = result.past_key_values
            token = int(result.logits[0, -1].argmax())
            out.append(token)
            step = torch.tensor([[token]])
    return out


def greedy_llama_cpp(llm, ids: list[int], n: int) -> list[int]:
    """n greedy tokens after ``ids`` from llama.cpp's own greedy sampler (temperature 0; it does not stop at an
    end-of-sequence token either)."""
    out = []
    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
        out.append(int(token))
        if len(out) == n:
            break
    return out


def agreeing_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens two sequences share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def tensor_types(path: str | Path) -> dict:
    """The tensor types a GGUF file holds: its token embeddings', its output layer's (None: tied to the embeddings)
    and the count of each type among the blocks' weight matrices (what llama.cpp's quantizer chose, fallbacks
    included)."""
    from collections import Counter

    from gguf import GGUFReader

    types = {t.name: t.tensor_type.name.lower() for t in GGUFReader(path).tensors}
    blocks = Counter(v for k, v in types.items() if k.startswith("blk.") and k.endswith(".weight") and "norm" not in k)
    return {
        "token_embd": types.get("token_embd.weight"),
        "output": types.get("output.weight"),
        "blocks": dict(sorted(blocks.items())),
    }


def gguf_name(path: str | Path) -> str:
    """The GGUF type's name of a file ``model.<name>.gguf`` (f16, q4_0+emb_q8_0)."""
    return Path(path).name.removeprefix("model.").removesuffix(".gguf")


def check(
    ggufs: list[Path], model_dir: Path, sentences: list[str], n_prompts: int, n_tokens: int, threads: int = 1
) -> dict:
    """Per GGUF file: token-id mismatches on ``sentences``, and the greedy agreement over the first ``n_prompts``
    sentences as prompts, ``n_tokens`` each."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32").eval()
    prompts = [tokenizer(s, add_special_tokens=False)["input_ids"] for s in sentences[:n_prompts]]
    reference = [greedy_transformers(model, ids, n_tokens) for ids in prompts]
    files = {}
    for path in ggufs:
        mismatched = token_mismatches(open_gguf(path, vocab_only=True), tokenizer, sentences)
        llm = open_gguf(path, n_ctx=max(len(p) for p in prompts) + n_tokens + 8, threads=threads)
        continuations = [greedy_llama_cpp(llm, ids, n_tokens) for ids in prompts]
        agree = [agreeing_prefix(c, r) for c, r in zip(continuations, reference, strict=True)]
        files[path.name] = {
            "gguf": gguf_name(path),
            "tensor_types": tensor_types(path),
            "sentences": len(sentences),
            "token_mismatches": len(mismatched),
            "mismatched": mismatched[:5],
            "greedy_prompts": len(prompts),
            "greedy_tokens": n_tokens,
            "greedy_agreeing_tokens": agree,
            "greedy_equal_prompts": sum(a == n_tokens for a in agree),
            "greedy_token_agreement": sum(
                a == b for c, r in zip(continuations, reference, strict=True) for a, b in zip(c, r, strict=True)
            )
            / (len(prompts) * n_tokens),
        }
    return files


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", nargs="+", required=True, type=Path)
    ap.add_argument("--model", required=True, type=Path, help="the transformers folder the GGUF files come from")
    ap.add_argument("--text", required=True, help="held-out sentences of the language, one a line")
    ap.add_argument("--n", type=int, default=100, help="sentences whose token ids are compared")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--lang", required=True, type=language_arg)
    ap.add_argument("--cell", default="{}")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log)
    sentences = read_corpus(args.text, what="held-out text")[: args.n]
    files = check(args.gguf, args.model, sentences, args.prompts, args.tokens, args.threads)
    for name, r in files.items():
        log.info(
            "%s: %d/%d token-id mismatches; greedy: %d/%d prompts equal for %d tokens (agreement %.3f)",
            name,
            r["token_mismatches"],
            r["sentences"],
            r["greedy_equal_prompts"],
            r["greedy_prompts"],
            r["greedy_tokens"],
            r["greedy_token_agreement"],
        )
    import json

    write_json(args.out, {"lang": args.lang, "cell": json.loads(args.cell), "files": files})


if __name__ == "__main__":
    cli_main(main)
