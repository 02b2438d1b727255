"""Applying a method to a model: resize to T_t (padded), write every non-source row, and report (paper 002 §4).

Untied input embeddings and LM head are initialized separately by the same rule (a head bias is one more dimension of
each output row); a tied model has one matrix and stays tied. Every row past the source matrix is set explicitly,
never left to ``resize_token_embeddings``'s own initialization.

Vocabulary padding (``pad_to_multiple_of``, 1 = none; 8 is the reference practice on GPU): the matrices get extra rows
after the last target id so that their size is a multiple of N. No tokenizer id maps to them, so they must never be
produced: their rows are the mean of the source rows, and their ids go into the saved generation_config's
``suppress_tokens`` so that ``generate()`` masks them. config.vocab_size is the padded size; len(tokenizer) is not.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

from workflow_scripts.initialize.registry import INIT_METHODS, METHOD_SPECS, InitContext, InitMethod, InitResult
from workflow_scripts.initialize.tokens import NewToken, find_new_tokens, map_decode_encode, map_full_tokenizer_on_piece
from workflow_scripts.io import atomic_path, seed_everything
from workflow_scripts.pieces import REPLACEMENT_CHAR, is_byte_level


def _output_matrix(model: Any) -> tuple[Any, Any]:
    """The LM head's weight [V, d] and bias [V] (or None)."""
    head = model.get_output_embeddings()
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output embeddings (LM head); initialize needs a causal LM")
    return head.weight, getattr(head, "bias", None)


def is_tied(model: Any) -> bool:
    """Whether the input embeddings and the LM head are one tensor."""
    out_w, _ = _output_matrix(model)
    return out_w.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def _norm_stats(matrix: Any, source_ids: list[int], new_ids: list[int]) -> dict:
    """Mean and std of the L2 norms of new and source rows: a new row far off the source scale shows here."""
    import torch

    src = matrix[torch.as_tensor(source_ids, dtype=torch.long)].to(torch.float64).norm(dim=1)
    new = matrix[torch.as_tensor(new_ids, dtype=torch.long)].to(torch.float64).norm(dim=1) if new_ids else None
    src_mean = float(src.mean())
    new_mean = float(new.mean()) if new is not None else None
    return {
        "mean_l2_norm_new": new_mean,
        "mean_l2_norm_source": src_mean,
        "new_over_source": (new_mean / src_mean) if new_mean is not None and src_mean else None,
        "std_l2_norm_new": float(new.std(correction=0)) if new is not None else None,
        "std_l2_norm_source": float(src.std(correction=0)),
    }


def padded_size(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (1 = unchanged)."""
    if multiple < 1:
        raise ValueError(f"pad_to_multiple_of must be >= 1, got {multiple}")
    return math.ceil(n / multiple) * multiple


def mapping_diagnostics(source_tokenizer: Any, target_tokenizer: Any, tokens: list[NewToken], ctx: InitContext) -> dict:
    """How often the two wrong mappings (decode→encode; full tokenizer on the piece) disagree with the BPE-model one."""
    fffd = source_tokenizer.encode(REPLACEMENT_CHAR, add_special_tokens=False)
    fffd_single = fffd[0] if len(fffd) == 1 else None
    decode_diff, piece_diff, fffd_uses = [], [], []
    for tok in tokens:
        ids, _ = ctx.subwords(tok)
        if map_decode_encode(source_tokenizer, target_tokenizer, tok) != ids:
            decode_diff.append(tok.id)
        if map_full_tokenizer_on_piece(source_tokenizer, tok) != ids:
            piece_diff.append(tok.id)
        if fffd_single is not None and fffd_single in ids:
            fffd_uses.append(tok.id)
    return {
        "partial_utf8_tokens": sum(t.partial_utf8 for t in tokens),
        "decode_encode_differs": len(decode_diff),
        "decode_encode_differs_ids": decode_diff,
        "full_tokenizer_on_piece_differs": len(piece_diff),
        "replacement_char_token_id": fffd_single,
        "bpe_model_mapping_uses_replacement_char": fffd_uses,
    }


def method_stats(ctx: InitContext, method: str) -> dict:
    """The method's own report entries (``MethodSpec.stats``: corpus statistics and timings of Align and FOCUS,
    EEVE's tied-model rule); empty for the others."""
    spec = METHOD_SPECS.get(method)
    return spec.stats(ctx) if spec and spec.stats else {}


def differs_from_mean(rows: Any, mean_rows: Any, tokens: list[NewToken], rtol: float = 1e-9) -> dict:
    """How many new rows differ from Mean's (beyond float64 round-off), and which ids (paper 002 §4.3: where Merge and
    Align can add anything over Mean)."""

    scale = mean_rows.abs().amax(dim=1).clamp(min=1e-30)
    diff = (rows - mean_rows).abs().amax(dim=1) > rtol * scale
    ids = [t.id for t, d in zip(tokens, diff.tolist(), strict=True) if d]
    return {"rows": len(ids), "of": len(tokens), "ids": ids}


def _new_rows(
    model: Any, ctx: InitContext, fn: InitMethod, method: str = ""
) -> tuple[dict[str, InitResult], dict[str, Any], dict[str, Any]]:
    """Per role ("input", and "output" when untied): the method's new rows, the padding row (the source mean) and,
    for the methods ``compared_with_mean`` (``MethodSpec``), how many new rows differ from Mean's.

    Computed from the untouched source matrices, before resizing.
    """
    import torch

    with torch.no_grad():
        matrices: dict[str, Any] = {"input": model.get_input_embeddings().weight.detach()}
        out_w, out_b = _output_matrix(model)
        if not ctx.tied:
            # A head bias is one more dimension of each output row: the same rule covers it.
            matrices["output"] = out_w.detach() if out_b is None else torch.cat([out_w, out_b[:, None]], 1).detach()
        results = {role: fn(m, ctx, role) for role, m in matrices.items()}
        pad_rows = {role: ctx.row_stats(m)[0] for role, m in matrices.items()}
        compared = {}
        if method in METHOD_SPECS and METHOD_SPECS[method].compared_with_mean:
            mean = INIT_METHODS["Mean"]
            compared = {
                role: differs_from_mean(results[role].rows, mean(m, ctx, role).rows, ctx.new_tokens)
                for role, m in matrices.items()
            }
    return results, pad_rows, compared


def _resize(model: Any, n_rows: int) -> None:
    """Resize both matrices to ``n_rows``; every row past the source matrix is overwritten afterwards."""
    # mean_resizing=False: the multivariate-normal draw would cost a d×d covariance for rows we overwrite anyway.
    model.resize_token_embeddings(n_rows, mean_resizing=False)
    if model.config.get_text_config().vocab_size != n_rows:
        raise RuntimeError(
            f"config.vocab_size is {model.config.get_text_config().vocab_size} after resizing to {n_rows}"
        )


def _write_rows(
    model: Any,
    tied: bool,
    results: dict[str, InitResult],
    pad_rows: dict[str, Any],
    new_ids: list[int],
    fresh_padding: list[int],
) -> None:
    """Write the new rows and the padding rows into the resized matrices (and the head bias, if any)."""
    import torch

    with torch.no_grad():
        targets = {"input": (model.get_input_embeddings().weight, None)}
        if not tied:
            targets["output"] = _output_matrix(model)
        for role, (weight, bias) in targets.items():
            d = weight.shape[1]
            rows = results[role].rows
            if new_ids:
                weight[new_ids] = rows[:, :d].to(weight.dtype)
                if bias is not None:
                    bias[new_ids] = rows[:, d].to(bias.dtype)
            if fresh_padding:
                weight[fresh_padding] = pad_rows[role][:d].to(weight.dtype)
                if bias is not None:
                    bias[fresh_padding] = pad_rows[role][d].to(bias.dtype)


def _suppress(model: Any, padding_ids: list[int]) -> None:
    """List the padding ids in generation_config.suppress_tokens, so that generate() never produces them."""
    gen_cfg = model.generation_config
    gen_cfg.suppress_tokens = sorted(set(gen_cfg.suppress_tokens or []) | set(padding_ids))
    # A config marked as derived from the model config may be rebuilt from it at generate() time, losing the list.
    gen_cfg._from_model_config = False


def _token_records(tokens: list[NewToken], results: dict[str, InitResult]) -> list[dict]:
    """One report record per new token; per-role records only where input and output rules differ."""
    records = []
    for k, tok in enumerate(tokens):
        rec: dict[str, Any] = {"id": tok.id, "piece": tok.piece, "text": tok.text, "partial_utf8": tok.partial_utf8}
        per_role = {role: r.records[k] for role, r in results.items()}
        if len(per_role) == 1 or per_role["input"] == per_role["output"]:
            rec.update(per_role["input"])
        else:
            rec.update(per_role)
        records.append(rec)
    return records


def _final_stats(model: Any, tied: bool, source_ids: list[int], new_ids: list[int]) -> dict:
    """Norm statistics of the written matrices, per role."""
    final = {"input": model.get_input_embeddings().weight}
    if not tied:
        final["output"] = _output_matrix(model)[0]
    stats: dict[str, Any] = {role: _norm_stats(w.detach(), source_ids, new_ids) for role, w in final.items()}
    if tied:
        stats["output"] = "tied: same matrix as input"
    return stats


def initialize_model(
    model: Any,
    source_tokenizer: Any,
    target_tokenizer: Any,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Resize ``model`` in place to T_t's vocabulary (padded), set every non-source row explicitly; return the report.

    Source rows are copied unchanged; new rows come from ``INIT_METHODS[method]`` (input and untied output separately);
    padding rows are the source mean and are listed in generation_config.suppress_tokens.
    """
    if method not in INIT_METHODS:
        raise ValueError(f"unknown initialization method {method!r}; registered: {sorted(INIT_METHODS)}")
    seed_everything(seed)
    tokens = find_new_tokens(source_tokenizer, target_tokenizer)
    source_ids = sorted(source_tokenizer.get_vocab().values())
    n_target = max(target_tokenizer.get_vocab().values()) + 1
    n_rows_src = model.get_input_embeddings().weight.shape[0]
    if max(source_ids) >= n_rows_src:
        raise ValueError(
            f"source tokenizer has id {max(source_ids)} but the model has only {n_rows_src} embedding rows"
        )
    tied = is_tied(model)
    resources = dict(resources or {})
    if METHOD_SPECS[method].needs_model:  # the source model, before resizing (MethodSpec.needs_model)
        resources["model"] = model
    ctx = InitContext(source_tokenizer, target_tokenizer, source_ids, tokens, seed, tied, resources)
    results, pad_rows, compared = _new_rows(model, ctx, INIT_METHODS[method], method)

    n_rows = padded_size(max(n_target, n_rows_src), pad_to_multiple_of)
    _resize(model, n_rows)
    padding_ids = list(range(n_target, n_rows))
    new_ids = [t.id for t in tokens]
    # Rows past the source matrix that are neither new nor padding would keep resize's random init: there must be none.
    unset = set(range(n_rows_src, n_rows)) - set(new_ids) - set(padding_ids)
    if unset:
        raise RuntimeError(f"rows {sorted(unset)[:5]} would keep resize_token_embeddings' initialization")
    # Padding ids inside the source matrix (a source model that was padded already) keep their source rows.
    fresh_padding = [i for i in padding_ids if i >= n_rows_src]
    _write_rows(model, tied, results, pad_rows, new_ids, fresh_padding)
    if padding_ids:
        _suppress(model, padding_ids)

    fallbacks = {
        role: dict(Counter(r["fallback"] for r in res.records if r["fallback"])) for role, res in results.items()
    }
    return {
        "method": method,
        "seed": seed,
        "tied": tied,
        "byte_level": is_byte_level(source_tokenizer),
        "vocab": {
            "source": len(source_ids),
            "source_matrix_rows": n_rows_src,
            "target": n_target,
            "new": len(tokens),
            "rows": n_rows,
            "pad_to_multiple_of": pad_to_multiple_of,
            "padding_ids": padding_ids,
        },
        "stats": _final_stats(model, tied, source_ids, new_ids),
        "fallbacks": fallbacks,
        "mapping_diagnostics": mapping_diagnostics(source_tokenizer, target_tokenizer, tokens, ctx),
        "method_stats": method_stats(ctx, method),
        # Per role: new rows that differ from Mean's (absent for Random and Mean).
        "differs_from_mean": compared or None,
        "tokens": _token_records(tokens, results),
    }


def initialize(
    source_model: str | Path,
    target_tokenizer: str | Path,
    out: str | Path,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
    initialize_fn=None,
) -> dict:
    """Load the source model and both tokenizers, initialize, and write the target model folder atomically.

    ``initialize_fn`` sets the rows: ``initialize_model`` (expansion) by default, or
    ``replace.initialize_replacement_model`` (vocabulary replacement), with the same arguments."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    src_tok = AutoTokenizer.from_pretrained(source_model)
    tgt_tok = AutoTokenizer.from_pretrained(target_tokenizer)
    # The source's own dtype (bf16 where the model trains with bf16 frozen weights, source_model.SAVE_DTYPES): the
    # initialized model is saved in it, new rows rounded once from their float64 computation.
    model = AutoModelForCausalLM.from_pretrained(source_model, dtype="auto")
    t_load = time.time()
    report = (initialize_fn or initialize_model)(model, src_tok, tgt_tok, method, seed, pad_to_multiple_of, resources)
    t_init = time.time()
    with atomic_path(out) as tmp:
        model.save_pretrained(tmp)
        tgt_tok.save_pretrained(tmp)
    report["source_model"] = str(source_model)
    report["target_tokenizer"] = str(target_tokenizer)
    report["dtype"] = str(model.dtype).removeprefix("torch.")
    report["seconds"] = {
        "load": round(t_load - t0, 2),
        "initialize": round(t_init - t_load, 2),
        "save": round(time.time() - t_init, 2),
    }
    return report
