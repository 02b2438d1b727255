"""FOCUS (Dobler & de Melo 2023; paper 002 §4.2; docs/initialization.md "FOCUS"): fastText similarity to shared tokens.

fastText CBOW on D tokenized with T_t (PyPI fasttext-wheel), sparsemax over cosine similarities to the overlapping
tokens' vectors, the weights applied to their source rows; a token without a fastText vector is drawn as Random, as
deepfocus does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from workflow_scripts.initialize.methods.random_mean import init_random
from workflow_scripts.initialize.registry import (
    COPY_SHARED,
    InitContext,
    InitResult,
    Plan,
    register_method,
    rows_from_plans,
)

# deepfocus's defaults for a fastText model trained on the target-tokenized corpus (FOCUS, Dobler & de Melo 2023).
FASTTEXT_DEFAULTS = {"dim": 100, "epoch": 3, "min_count": 10, "neg": 10}
_FASTTEXT_SPACE = set(" \n\t\v\f\r\0")


def sparsemax(z: Any) -> Any:
    """Sparsemax (Martins & Astudillo 2016) of a 1-D float64 tensor: the Euclidean projection onto the simplex."""
    import torch

    zs, _ = torch.sort(z, descending=True)
    k = torch.arange(1, z.numel() + 1, dtype=z.dtype)
    cum = zs.cumsum(0)
    support = 1 + k * zs > cum
    k_z = int(support.nonzero().max()) + 1
    tau = (cum[k_z - 1] - 1) / k_z
    return (z - tau).clamp(min=0)


def fasttext_word(piece: str) -> str:
    """A T_t piece as one fastText word: characters fastText splits on are written as \\xNN escapes."""
    if not _FASTTEXT_SPACE & set(piece):
        return piece
    return "".join(f"\\x{ord(c):02x}" if c in _FASTTEXT_SPACE else c for c in piece)


def _fasttext_cbow(path: str, seed: int, **options: Any) -> Any:
    """fastText CBOW on one thread with ``seed``: the wrapper of fasttext-wheel 0.9.2 accepts no seed for
    unsupervised training although the C++ trainer has one, so the arguments are built the way the wrapper does."""
    import fasttext
    from fasttext import FastText as ft

    kwargs = {"model": "cbow", "thread": 1, "verbose": 0, **options}
    try:
        return fasttext.train_unsupervised(path, seed=seed, **kwargs)
    except TypeError:
        pass
    args, manual = ft.read_args([path], {**kwargs, "seed": seed}, ["input", *kwargs, "seed"], ft.unsupervised_default)
    built = ft._build_args(args, manual)
    model = ft._FastText(args=built)
    ft.fasttext.train(model.f, built)
    model.set_args(model.f.getArgs())
    return model


def train_fasttext(target_tokenizer: Any, sentences: list[str], seed: int, **options: Any) -> dict[str, Any]:
    """fastText CBOW on D tokenized with T_t (paper 002 §4.2): {T_t piece: vector} for the words it kept.

    One thread so that the vectors depend only on the seed (fastText's multi-threaded SGD is not reproducible).
    """
    import tempfile

    import numpy as np

    opts = {**FASTTEXT_DEFAULTS, **options}
    encs = target_tokenizer.backend_tokenizer.encode_batch(sentences, add_special_tokens=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.tok.txt"
        with open(path, "w", encoding="utf-8") as f:
            for enc in encs:
                f.write(" ".join(fasttext_word(p) for p in enc.tokens) + "\n")
        model = _fasttext_cbow(
            str(path), seed, dim=opts["dim"], epoch=opts["epoch"], minCount=opts["min_count"], neg=opts["neg"]
        )
    words = model.get_words()
    by_word = {fasttext_word(p): p for p in target_tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)}
    return {by_word[w]: np.asarray(model.get_word_vector(w), dtype=np.float64) for w in words if w in by_word}


def focus_plans(ctx: InitContext) -> tuple[list[tuple[Plan | None, dict]], dict]:
    """FOCUS (Dobler & de Melo 2023; paper 002 §4.2): sparsemax over fastText cosine similarities to the overlapping
    tokens (V_s ∩ V_t with a fastText vector, special tokens excluded); weights applied to their source rows (cached).

    A new token without a fastText vector (rarer than min_count in T_t's tokenization of D) is drawn as Random, as
    deepfocus does (fallback "no_fasttext_vector").
    """
    import numpy as np
    import torch

    if "FOCUS" in ctx.cache:
        return ctx.cache["FOCUS"]
    t0 = time.perf_counter()
    vectors = ctx.resources.get("fasttext_vectors")  # tests may inject {piece: vector}
    if vectors is None:
        vectors = train_fasttext(
            ctx.target_tokenizer, ctx.corpus("FOCUS"), ctx.seed, **ctx.resources.get("fasttext_options", {})
        )
    t_train = time.perf_counter() - t0
    src_vocab = ctx.source_tokenizer.get_vocab()
    special = set(ctx.source_tokenizer.all_special_ids) | {int(i) for i in ctx.source_tokenizer.added_tokens_decoder}
    overlap = sorted((src_vocab[p], p) for p in vectors if p in src_vocab and src_vocab[p] not in special)
    if not overlap:
        raise ValueError("FOCUS: no source token has a fastText vector; the corpus D is too small for min_count")
    ov_ids = [i for i, _ in overlap]
    ov = torch.as_tensor(np.stack([vectors[p] for _, p in overlap]), dtype=torch.float64)
    ov = ov / ov.norm(dim=1, keepdim=True).clamp(min=1e-12)
    out = []
    for tok in ctx.new_tokens:
        vec = vectors.get(tok.piece)
        if vec is None:
            out.append((None, {"rule": "random", "fallback": "no_fasttext_vector"}))
            continue
        v = torch.as_tensor(vec, dtype=torch.float64)
        sim = ov @ (v / v.norm().clamp(min=1e-12))
        w = sparsemax(sim)
        nz = torch.nonzero(w).flatten().tolist()
        plan = {ov_ids[j]: float(w[j]) for j in nz}
        top = sorted(plan.items(), key=lambda kv: -kv[1])[:5]
        out.append(
            (
                plan,
                {
                    "rule": "sparsemax_fasttext",
                    "support": len(plan),
                    "top": [[i, round(x, 4)] for i, x in top],
                    "fallback": None,
                },
            )
        )
    stats = {
        "overlapping_tokens": len(ov_ids),
        "fasttext_words": len(vectors),
        "seconds_fasttext": round(t_train, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    ctx.cache["FOCUS"] = (out, stats)
    return out, stats


def focus_stats(ctx: InitContext) -> dict:
    """The report's statistics and timing of FOCUS (overlapping tokens, fastText training)."""
    return {"focus": ctx.cache["FOCUS"][1]} if "FOCUS" in ctx.cache else {}


@register_method("FOCUS", needs_corpus=True, stats=focus_stats, replace=COPY_SHARED, order=50, draws=True)
def init_focus(source: Any, ctx: InitContext, role: str) -> InitResult:
    """FOCUS (paper 002 §4.2): sparsemax-weighted combination of overlapping tokens' rows by fastText similarity."""
    plans, _ = focus_plans(ctx)
    rows = rows_from_plans(source, ctx, [p for p, _ in plans])
    missing = [k for k, (p, _) in enumerate(plans) if p is None]
    if missing:
        rows[missing] = init_random(source, ctx, role).rows[missing]
    return InitResult(rows=rows, records=[r for _, r in plans])
