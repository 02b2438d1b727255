"""Initializing a model whose vocabulary was replaced (paper 002 §8.3, Table 11): every embedding and head row is new.

The target tokenizer (``workflow_scripts.vocab.replace``) has its own ids; the model gets exactly its rows (padded to
``pad_to_multiple_of``), each set explicitly, by one of the methods of Table 11:

- Random: every ordinary token drawn as ``init_random`` draws (each dimension ~ N(mean, std) of that dimension over the
  source rows), the tokens V_s shares included: the paper's Random baseline starts from nothing of the source.
- Mean: a token whose string is also a source piece (the byte symbols, ``<0xXX>``, the unknown piece, any shared
  piece) copies its source row, which is what the mean of its source spelling gives for a piece BPE reproduces;
  every other token is the mean of the source rows of the source BPE model's spelling of its own piece string
  (``source_subwords``: bytes for byte-level BPE, "▁"-marked characters for SentencePiece BPE; no mojibake).
- FOCUS: shared tokens copy their source rows (FOCUS's definition: they are its anchors); every other token is the
  sparsemax-weighted combination of the anchors' rows by fastText similarity (``focus_plans``), Random without vector.

Special tokens keep their meaning under every method: each copies the row of the source special with the same string
(ids may differ; the mapping is in the report), and the model config's bos/eos/pad ids and the generation config's
ids are rewritten to the new ids. Untied input embeddings and LM head follow the same rule separately (the head bias
as one more dimension); a tied model stays tied. Padding rows are the source mean and are suppressed in generate().
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from workflow_scripts.initialize.apply import (
    _new_rows,
    _output_matrix,
    _resize,
    _suppress,
    _write_rows,
    initialize,
    is_tied,
)
from workflow_scripts.initialize.registry import COPY_SHARED, INIT_METHODS, InitContext, replace_methods
from workflow_scripts.initialize.tokens import NewToken
from workflow_scripts.io import seed_everything
from workflow_scripts.pieces import SENTENCEPIECE_BPE, is_byte_level, is_partial_utf8, piece_text

# Table 11's initializations (Random, Mean, FOCUS: the methods registered with ``replace``); the others are defined for
# expansion only.
REPLACE_METHODS = replace_methods()
# Methods whose ordinary tokens shared with V_s copy their source rows (Random draws every ordinary token).
_COPY_SHARED = replace_methods(COPY_SHARED)
_CONFIG_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")


def _target_tokens(target_tokenizer: Any) -> tuple[int, list[NewToken], set[int]]:
    """(vocabulary size, one NewToken per id, the ids of special tokens) after checking the ids are 0..N-1."""
    vocab = target_tokenizer.get_vocab()
    n = len(vocab)
    if sorted(vocab.values()) != list(range(n)):
        raise ValueError(f"replacement tokenizer ids must be 0..{n - 1} without gaps")
    byte_level = is_byte_level(target_tokenizer)
    special = {i for i, t in target_tokenizer.added_tokens_decoder.items() if t.special}
    tokens = []
    for piece, i in sorted(vocab.items(), key=lambda kv: kv[1]):
        if byte_level and i not in special:
            text, partial = piece_text(piece), is_partial_utf8(piece)
        else:
            text, partial = piece_text(piece, SENTENCEPIECE_BPE), False
        tokens.append(NewToken(id=i, piece=piece, text=text, partial_utf8=partial))
    return n, tokens, special


def plan_rows(source_tokenizer: Any, target_tokenizer: Any, method: str) -> tuple[int, dict[int, int], list[NewToken]]:
    """(target size, {target id: source id} of copied rows, tokens the method initializes) for ``method``."""
    if method not in REPLACE_METHODS:
        raise ValueError(
            f"initialization {method!r} is not defined for vocab: replace; Table 11 uses {', '.join(REPLACE_METHODS)}"
        )
    n, tokens, special = _target_tokens(target_tokenizer)
    src_vocab = source_tokenizer.get_vocab()
    copied: dict[int, int] = {}
    for tok in tokens:
        if tok.id in special and tok.piece in src_vocab:
            copied[tok.id] = src_vocab[tok.piece]
        elif method in _COPY_SHARED and tok.piece in src_vocab and tok.id not in special:
            copied[tok.id] = src_vocab[tok.piece]
    return n, copied, [t for t in tokens if t.id not in copied]


def _remap(value: Any, id_map: dict[int, int]) -> Any:
    """A config id (int or list) in target ids; ids without a target counterpart are dropped (None if none is left)."""
    if value is None:
        return None
    if isinstance(value, int):
        return id_map.get(value)
    kept = [id_map[v] for v in value if v in id_map]
    return kept or None


def _remap_config_ids(model: Any, source_tokenizer: Any, target_tokenizer: Any) -> dict:
    """Rewrite bos/eos/pad (model and generation config) and suppress_tokens to the target ids of the same strings."""
    tgt_vocab = target_tokenizer.get_vocab()
    id_map = {i: tgt_vocab[p] for p, i in source_tokenizer.get_vocab().items() if p in tgt_vocab}
    changes = {}
    for cfg_name, cfg in (("config", model.config), ("generation_config", model.generation_config)):
        for key in _CONFIG_IDS:
            old = getattr(cfg, key, None)
            if old is not None:
                new = _remap(old, id_map)
                setattr(cfg, key, new)
                changes[f"{cfg_name}.{key}"] = [old, new]
    gen = model.generation_config
    if gen.suppress_tokens:
        gen.suppress_tokens = _remap(list(gen.suppress_tokens), id_map)
    return changes


def _source_matrices(model: Any, tied: bool) -> dict[str, Any]:
    """Detached copies of the source matrices per role (a head bias as one more column), as ``_new_rows`` sees them."""
    import torch

    mats = {"input": model.get_input_embeddings().weight.detach().clone()}
    if not tied:
        w, b = _output_matrix(model)
        mats["output"] = (w if b is None else torch.cat([w, b[:, None]], 1)).detach().clone()
    return mats


def _write_copied(model: Any, tied: bool, mats: dict[str, Any], copied: dict[int, int]) -> None:
    """Copy source rows (and head bias entries) to their target ids."""
    import torch

    if not copied:
        return
    tgt = torch.as_tensor(list(copied), dtype=torch.long)
    src = torch.as_tensor(list(copied.values()), dtype=torch.long)
    with torch.no_grad():
        targets = {"input": (model.get_input_embeddings().weight, None)}
        if not tied:
            targets["output"] = _output_matrix(model)
        for role, (weight, bias) in targets.items():
            d = weight.shape[1]
            weight[tgt] = mats[role][src, :d].to(weight.dtype)
            if bias is not None:
                bias[tgt] = mats[role][src, d].to(bias.dtype)


def _norms(rows: Any, reference: Any) -> dict:
    """Mean L2 norm of the initialized rows against the source rows' (a new row far off the source scale shows)."""
    new = float(rows.to(reference.dtype).norm(dim=1).mean()) if len(rows) else None
    src = float(reference.norm(dim=1).mean())
    return {"mean_l2_norm_new": new, "mean_l2_norm_source": src, "new_over_source": new / src if new else None}


def initialize_replacement_model(
    model: Any,
    source_tokenizer: Any,
    target_tokenizer: Any,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Resize ``model`` in place to the replacement tokenizer (padded) and set every row; return the report."""
    from workflow_scripts.initialize.apply import padded_size

    seed_everything(seed)
    n_target, copied, tokens = plan_rows(source_tokenizer, target_tokenizer, method)
    source_ids = sorted(source_tokenizer.get_vocab().values())
    n_rows_src = model.get_input_embeddings().weight.shape[0]
    if max(source_ids) >= n_rows_src:
        raise ValueError(f"source tokenizer has id {max(source_ids)} but the model has only {n_rows_src} rows")
    tied = is_tied(model)
    ctx = InitContext(source_tokenizer, target_tokenizer, source_ids, tokens, seed, tied, resources or {})
    mats = _source_matrices(model, tied)
    results, pad_rows, compared = _new_rows(model, ctx, INIT_METHODS[method], method)
    n_rows = padded_size(n_target, pad_to_multiple_of)
    _resize(model, n_rows)
    padding_ids = list(range(n_target, n_rows))
    _write_rows(model, tied, results, pad_rows, [t.id for t in tokens], padding_ids)
    _write_copied(model, tied, mats, copied)
    id_changes = _remap_config_ids(model, source_tokenizer, target_tokenizer)
    if padding_ids:
        _suppress(model, padding_ids)
    special = {i for i, t in target_tokenizer.added_tokens_decoder.items() if t.special}
    rules = Counter(r["rule"] for r in results["input"].records)
    return {
        "method": method,
        "vocab_mode": "replace",
        "seed": seed,
        "tied": tied,
        "byte_level": is_byte_level(target_tokenizer),
        "vocab": {
            "source": len(source_ids),
            # Every row is new: LAPT's row-limited stages (EEVE) must treat rows from 0 on as new.
            "source_matrix_rows": 0,
            "source_rows_before": n_rows_src,
            "target": n_target,
            "new": len(tokens),
            "rows": n_rows,
            "pad_to_multiple_of": pad_to_multiple_of,
            "padding_ids": padding_ids,
        },
        "copied_rows": {
            "special": sum(1 for i in copied if i in special),
            "shared_with_source": sum(1 for i in copied if i not in special),
        },
        "special_tokens": [
            {"content": target_tokenizer.convert_ids_to_tokens(i), "target_id": i, "source_id": copied.get(i)}
            for i in sorted(special)
        ],
        "config_ids": id_changes,
        "rules": dict(rules),
        "fallbacks": {
            role: dict(Counter(r["fallback"] for r in res.records if r["fallback"])) for role, res in results.items()
        },
        "stats": {role: _norms(res.rows, mats[role].to(res.rows.dtype)) for role, res in results.items()},
        "differs_from_mean": compared or None,
    }


def initialize_replacement(
    source_model: str | Path,
    target_tokenizer: str | Path,
    out: str | Path,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Load the source model and both tokenizers, initialize every row, and write the model folder atomically."""
    return initialize(
        source_model, target_tokenizer, out, method, seed, pad_to_multiple_of, resources, initialize_replacement_model
    )
