"""Initialize the target model's new embedding and LM-head rows (paper 002 §4; METHODS.md "Initialization").

Input: a source model folder (HF, safetensors, its tokenizer inside) and an expanded target tokenizer folder: a real BPE
over V_s ∪ V_new whose new ids follow the source ids contiguously. Output: the target model folder, with embeddings and
LM head resized to the target vocabulary, the source rows copied bit for bit, every other row set explicitly (never by
``resize_token_embeddings``'s own initialization), config.vocab_size updated and the target tokenizer saved alongside.

Untied input embeddings and LM head are initialized separately by the same rule; a tied model has one matrix and stays
tied. Methods live in a registry (``INIT_METHODS``): a method maps (source matrix, context, role) to the new rows and
one record per new token, so Merge, Align, FOCUS and EEVE plug in with ``@register_method("Name")``.

Vocabulary padding (``pad_to_multiple_of``, 1 = none; 8 is the reference practice on GPU): the matrices get extra rows
after the last target id so that their size is a multiple of N. No tokenizer id maps to them, so they must never be
produced: their rows are the mean of the source rows, and their ids go into the saved generation_config's
``suppress_tokens`` so that ``generate()`` masks them. config.vocab_size is the padded size; len(tokenizer) is not.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from workflow_scripts.io import atomic_path, seed_everything, set_threads, setup_logging, write_json

METASPACE = "\u2581"  # "▁", SentencePiece's word-boundary marker
REPLACEMENT_CHAR = "\ufffd"
_STATS_CHUNK = 8192  # rows per block when reducing over V_s, so a 128K-row bf16 matrix is never upcast whole


# --------------------------------------------------------------------------------------------------------------------
# Tokens: which ids are new, what their BPE-model strings are, and how they map onto the source BPE.
# --------------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable-character table, the alphabet of byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    """Inverse of :func:`bytes_to_unicode`."""
    return {c: b for b, c in bytes_to_unicode().items()}


def piece_bytes(piece: str) -> bytes:
    """The bytes a byte-level BPE piece stands for (its characters are in the byte-to-unicode alphabet)."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in piece)
    except KeyError as e:
        raise ValueError(f"piece {piece!r} has a character outside the byte-level alphabet: {e}") from e


def _tokenizer_json(tokenizer: Any) -> dict:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(f"{type(tokenizer).__name__} has no backend_tokenizer: initialize needs fast (tokenizers) BPE")
    return json.loads(backend.to_str())


def _has_component(node: Any, kind: str) -> bool:
    """Whether a tokenizer.json component (possibly a Sequence) contains one of type ``kind``."""
    if isinstance(node, dict):
        return node.get("type") == kind or any(_has_component(v, kind) for v in node.values())
    if isinstance(node, list):
        return any(_has_component(v, kind) for v in node)
    return False


def is_byte_level(tokenizer: Any) -> bool:
    """Whether the tokenizer is a byte-level BPE (GPT-2, Llama-3, SmolLM2): its pieces are byte-to-unicode strings."""
    spec = _tokenizer_json(tokenizer)
    return _has_component(spec.get("pre_tokenizer"), "ByteLevel") or _has_component(spec.get("decoder"), "ByteLevel")


@dataclass(frozen=True)
class NewToken:
    """One token of V_new: its id in T_t, its BPE-model string and a readable rendering."""

    id: int
    piece: str  # the BPE vocabulary string: byte-to-unicode form (byte-level) or "▁"-marked characters
    text: str  # readable: bytes decoded with \\x escapes for partial UTF-8; "▁" shown as a space
    partial_utf8: bool  # byte-level piece whose bytes are not valid UTF-8 (decodes to U+FFFD)


def find_new_tokens(source_tokenizer: Any, target_tokenizer: Any) -> list[NewToken]:
    """V_new as T_t's ids above the source ids, after checking that T_t keeps every source token at its source id."""
    for name, tok in (("source", source_tokenizer), ("target", target_tokenizer)):
        if (kind := _tokenizer_json(tok)["model"].get("type")) != "BPE":
            raise ValueError(f"initialize needs BPE tokenizers; the {name} tokenizer's model is {kind!r}")
    src_vocab = source_tokenizer.get_vocab()
    tgt_vocab = target_tokenizer.get_vocab()
    moved = [(p, i, tgt_vocab.get(p)) for p, i in src_vocab.items() if tgt_vocab.get(p) != i]
    if moved:
        raise ValueError(
            f"target tokenizer does not keep the source vocabulary at its ids ({len(moved)} tokens differ, e.g. "
            f"{moved[:3]} as (piece, source id, target id)); expand the source tokenizer instead of retraining it"
        )
    n_src = max(src_vocab.values()) + 1
    new_ids = sorted(i for p, i in tgt_vocab.items() if p not in src_vocab)
    if new_ids and new_ids != list(range(n_src, n_src + len(new_ids))):
        raise ValueError(
            f"new target ids must follow the source ids contiguously from {n_src}; got {new_ids[:5]}...{new_ids[-3:]}"
        )
    model = target_tokenizer.backend_tokenizer.model
    added = [i for i in new_ids if model.id_to_token(i) is None]
    if added:
        # Added tokens are matched before BPE and are reachable by no merge (METHODS.md "Tokenizers"): not a real BPE.
        raise ValueError(
            f"{len(added)} new target ids are added tokens, not BPE vocabulary entries (e.g. {added[:5]}); the target "
            "tokenizer must extend the BPE model itself (vocab + merges)"
        )
    byte_level = is_byte_level(target_tokenizer)
    tokens = []
    for i in new_ids:
        piece = model.id_to_token(i)
        if byte_level:
            raw = piece_bytes(piece)
            try:
                text, partial = raw.decode("utf-8"), False
            except UnicodeDecodeError:
                text, partial = raw.decode("utf-8", errors="backslashreplace"), True
        else:
            text, partial = piece.replace(METASPACE, " "), False
        tokens.append(NewToken(id=i, piece=piece, text=text, partial_utf8=partial))
    return tokens


def _clean_bpe_model(tokenizer: Any) -> Any:
    """The tokenizer's BPE model, rebuilt without dropout if it has any (dropout would make the mapping random)."""
    from tokenizers import Tokenizer

    if not tokenizer.backend_tokenizer.model.dropout:
        return tokenizer.backend_tokenizer.model
    spec = _tokenizer_json(tokenizer)
    spec["model"]["dropout"] = None
    return Tokenizer.from_str(json.dumps(spec)).model


def source_subwords(source_bpe: Any, piece: str) -> tuple[list[int], str | None]:
    """Source ids spelling ``piece``: the SOURCE BPE model applied to the new token's own BPE string (METHODS.md).

    For byte-level BPE the string is already in byte-to-unicode form, so this is exactly its bytes; for SentencePiece
    BPE it is its "▁"-marked characters (byte fallback covers characters V_s lacks). Returns (ids, fallback): fallback
    is None, "unk_dropped" (unknown characters left out) or "no_subwords" (nothing maps; callers fall back).
    """
    found = source_bpe.tokenize(piece)
    unk = source_bpe.unk_token
    unk_id = source_bpe.token_to_id(unk) if unk else None
    ids = [t.id for t in found if t.id != unk_id]
    covered = len(ids) == len(found) and (source_bpe.byte_fallback or "".join(t.value for t in found) == piece)
    if not ids:
        return [], "no_subwords"
    # Without byte fallback and without an unk token, the BPE model silently skips unknown characters.
    return ids, None if covered else "unk_dropped"


def map_full_tokenizer_on_piece(source_tokenizer: Any, token: NewToken) -> list[int]:
    """WRONG mapping (1), kept only to measure it: run the full source tokenizer on the printed piece string.

    For byte-level BPE the piece is already byte-to-unicode text, so its characters are byte-encoded a second time.
    """
    return source_tokenizer.encode(token.piece, add_special_tokens=False)


def map_decode_encode(source_tokenizer: Any, target_tokenizer: Any, token: NewToken) -> list[int]:
    """WRONG mapping (2), kept only to measure it: decode the new token to text, then encode the text.

    Partial-UTF-8 byte-level tokens decode to U+FFFD and so map to the replacement character's row.
    """
    return source_tokenizer.encode(target_tokenizer.decode([token.id]), add_special_tokens=False)


# --------------------------------------------------------------------------------------------------------------------
# The registry of methods.
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class InitContext:
    """What a method may use besides the source matrix: tokenizers, V_s, V_new, seed, method-specific resources."""

    source_tokenizer: Any
    target_tokenizer: Any
    source_ids: list[int]  # ids of V_s: the rows that statistics ("over the source rows") run over
    new_tokens: list[NewToken]
    seed: int
    tied: bool
    resources: dict[str, Any] = field(default_factory=dict)  # e.g. the corpus D for Align / FOCUS
    _bpe: Any = None
    _subwords: dict[int, tuple[list[int], str | None]] = field(default_factory=dict)
    _stats: dict[tuple, tuple[Any, Any]] = field(default_factory=dict)

    def row_stats(self, matrix: Any) -> tuple[Any, Any]:
        """:func:`source_row_stats` of ``matrix`` over V_s, computed once per matrix."""
        key = (matrix.data_ptr(), tuple(matrix.shape))
        if key not in self._stats:
            self._stats[key] = source_row_stats(matrix, self.source_ids)
        return self._stats[key]

    def subwords(self, token: NewToken) -> tuple[list[int], str | None]:
        """The source ids spelling ``token`` (:func:`source_subwords`), cached across roles and methods."""
        if token.id not in self._subwords:
            if self._bpe is None:
                self._bpe = _clean_bpe_model(self.source_tokenizer)
            self._subwords[token.id] = source_subwords(self._bpe, token.piece)
        return self._subwords[token.id]


@dataclass
class InitResult:
    """New rows (one per token of ``ctx.new_tokens``, float64) and one JSON-able record per token.

    Each record has "rule" (what produced the row) and "fallback" (None, or why the method's own rule did not apply).
    """

    rows: Any  # torch.Tensor [k, d]
    records: list[dict]


# (source matrix [n_rows, d] in its own dtype, context, role "input" | "output") -> InitResult
InitMethod = Callable[[Any, InitContext, str], InitResult]
INIT_METHODS: dict[str, InitMethod] = {}


def register_method(name: str) -> Callable[[InitMethod], InitMethod]:
    """Register an initialization method under its paper name (Random, Mean, Merge, Align, FOCUS, EEVE)."""

    def deco(fn: InitMethod) -> InitMethod:
        if name in INIT_METHODS:
            raise ValueError(f"initialization method {name!r} is registered twice")
        INIT_METHODS[name] = fn
        return fn

    return deco


def source_row_stats(matrix: Any, source_ids: list[int]) -> tuple[Any, Any]:
    """Per-dimension mean and (population) std over the V_s rows, in float64, reduced block by block."""
    import torch

    idx = torch.as_tensor(source_ids, dtype=torch.long)
    n = len(source_ids)
    total = torch.zeros(matrix.shape[1], dtype=torch.float64)
    for s in range(0, n, _STATS_CHUNK):
        total += matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64).sum(0)
    mean = total / n
    sq = torch.zeros_like(mean)
    for s in range(0, n, _STATS_CHUNK):  # two passes: numerically safer than E[x²] − E[x]²
        sq += ((matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64) - mean) ** 2).sum(0)
    return mean, (sq / n).sqrt()


def mean_of_rows(matrix: Any, id_lists: list[list[int]]) -> Any:
    """Row k = mean of ``matrix`` rows over ``id_lists[k]`` (a repeated id counts per occurrence), float64; one gather.

    Every list must be non-empty.
    """
    import torch

    flat = torch.as_tensor([i for ids in id_lists for i in ids], dtype=torch.long)
    counts = torch.as_tensor([len(ids) for ids in id_lists], dtype=torch.long)
    segment = torch.repeat_interleave(torch.arange(len(id_lists)), counts)
    sums = torch.zeros(len(id_lists), matrix.shape[1], dtype=torch.float64)
    sums.index_add_(0, segment, matrix.index_select(0, flat).to(torch.float64))
    return sums / counts[:, None].to(torch.float64)


@register_method("Random")
def init_random(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Random (paper 002 §4): each dimension ~ N(mean, std) of that dimension over the source rows, seeded."""
    import torch

    mean, std = ctx.row_stats(source)
    # One stream per role, so that an untied head does not reuse the embedding's standard normals.
    gen = torch.Generator().manual_seed(ctx.seed * 2 + (role == "output"))
    z = torch.randn(len(ctx.new_tokens), source.shape[1], generator=gen, dtype=torch.float64)
    records = [{"rule": "random", "fallback": None} for _ in ctx.new_tokens]
    return InitResult(rows=mean + std * z, records=records)


@register_method("Mean")
def init_mean(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Mean (paper 002 §4): mean of the source rows of the source tokens that spell the new token (BPE-model level).

    A token nothing maps onto gets the mean of all source rows (fallback "no_subwords", counted in the report).
    """
    import torch

    mapped = [ctx.subwords(tok) for tok in ctx.new_tokens]
    rows = torch.empty(len(mapped), source.shape[1], dtype=torch.float64)
    have = [k for k, (ids, _) in enumerate(mapped) if ids]
    if have:
        rows[have] = mean_of_rows(source, [mapped[k][0] for k in have])
    if len(have) < len(mapped):
        rows[[k for k, (ids, _) in enumerate(mapped) if not ids]] = ctx.row_stats(source)[0]
    records = [
        {"rule": "mean_of_source_subwords" if ids else "mean_of_source_rows", "source_ids": ids, "fallback": fallback}
        for ids, fallback in mapped
    ]
    return InitResult(rows=rows, records=records)


# --------------------------------------------------------------------------------------------------------------------
# Applying a method to a model.
# --------------------------------------------------------------------------------------------------------------------


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
    import torch

    if method not in INIT_METHODS:
        raise ValueError(f"unknown initialization method {method!r}; registered: {sorted(INIT_METHODS)}")
    seed_everything(seed)
    tokens = find_new_tokens(source_tokenizer, target_tokenizer)
    source_ids = sorted(source_tokenizer.get_vocab().values())
    n_target = max(target_tokenizer.get_vocab().values()) + 1
    emb = model.get_input_embeddings().weight
    n_rows_src = emb.shape[0]
    if max(source_ids) >= n_rows_src:
        raise ValueError(
            f"source tokenizer has id {max(source_ids)} but the model has only {n_rows_src} embedding rows"
        )
    tied = is_tied(model)
    ctx = InitContext(source_tokenizer, target_tokenizer, source_ids, tokens, seed, tied, resources or {})
    fn = INIT_METHODS[method]

    # Compute every new row from the untouched source matrices before resizing.
    with torch.no_grad():
        matrices: dict[str, Any] = {"input": emb.detach()}
        out_w, out_b = _output_matrix(model)
        if not tied:
            # A head bias is one more dimension of each output row: the same rule covers it.
            matrices["output"] = out_w.detach() if out_b is None else torch.cat([out_w, out_b[:, None]], 1).detach()
        results = {role: fn(m, ctx, role) for role, m in matrices.items()}
        pad_rows = {role: ctx.row_stats(m)[0] for role, m in matrices.items()}

    n_rows = padded_size(max(n_target, n_rows_src), pad_to_multiple_of)
    # mean_resizing=False: the multivariate-normal draw would cost a d×d covariance for rows we overwrite anyway.
    model.resize_token_embeddings(n_rows, mean_resizing=False)
    if model.config.get_text_config().vocab_size != n_rows:
        raise RuntimeError(
            f"config.vocab_size is {model.config.get_text_config().vocab_size} after resizing to {n_rows}"
        )
    padding_ids = list(range(n_target, n_rows))
    new_ids = [t.id for t in tokens]
    # Rows past the source matrix that are neither new nor padding would keep resize's random init: there must be none.
    unset = set(range(n_rows_src, n_rows)) - set(new_ids) - set(padding_ids)
    if unset:
        raise RuntimeError(f"rows {sorted(unset)[:5]} would keep resize_token_embeddings' initialization")
    # Padding ids inside the source matrix (a source model that was padded already) keep their source rows.
    fresh_padding = [i for i in padding_ids if i >= n_rows_src]

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

    if padding_ids:
        gen_cfg = model.generation_config
        gen_cfg.suppress_tokens = sorted(set(gen_cfg.suppress_tokens or []) | set(padding_ids))
        # A config marked as derived from the model config may be rebuilt from it at generate() time, losing the list.
        gen_cfg._from_model_config = False

    records = []
    for k, tok in enumerate(tokens):
        rec: dict[str, Any] = {"id": tok.id, "piece": tok.piece, "text": tok.text, "partial_utf8": tok.partial_utf8}
        per_role = {role: r.records[k] for role, r in results.items()}
        if len(per_role) == 1 or per_role["input"] == per_role["output"]:
            rec.update(per_role["input"])
        else:
            rec.update(per_role)
        records.append(rec)
    fallbacks = {
        role: dict(Counter(r["fallback"] for r in res.records if r["fallback"])) for role, res in results.items()
    }
    final = {"input": model.get_input_embeddings().weight}
    if not tied:
        final["output"] = _output_matrix(model)[0]
    stats = {role: _norm_stats(w.detach(), source_ids, new_ids) for role, w in final.items()}
    if tied:
        stats["output"] = "tied: same matrix as input"
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
        "stats": stats,
        "fallbacks": fallbacks,
        "mapping_diagnostics": mapping_diagnostics(source_tokenizer, target_tokenizer, tokens, ctx),
        "tokens": records,
    }


def initialize(
    source_model: str | Path,
    target_tokenizer: str | Path,
    out: str | Path,
    method: str,
    seed: int,
    pad_to_multiple_of: int = 1,
    resources: dict[str, Any] | None = None,
) -> dict:
    """Load the source model and both tokenizers, initialize, and write the target model folder atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    src_tok = AutoTokenizer.from_pretrained(source_model)
    tgt_tok = AutoTokenizer.from_pretrained(target_tokenizer)
    model = AutoModelForCausalLM.from_pretrained(source_model, dtype="auto")
    t_load = time.time()
    report = initialize_model(model, src_tok, tgt_tok, method, seed, pad_to_multiple_of, resources)
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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source-model", required=True, help="source model folder (HF, safetensors, tokenizer inside)")
    p.add_argument("--target-tokenizer", required=True, help="expanded target tokenizer folder (BPE over V_s ∪ V_new)")
    p.add_argument("--method", required=True, choices=sorted(INIT_METHODS), help="initialization (paper names)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--pad-to-multiple-of", type=int, default=1, help="pad the vocabulary rows to a multiple of N")
    p.add_argument("--out", required=True, help="output target model folder")
    p.add_argument("--report", required=True, help="output JSON: per-token mapping, norms, fallbacks")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)

    log = setup_logging(a.log)
    set_threads(a.threads)
    report = initialize(a.source_model, a.target_tokenizer, a.out, a.method, a.seed, a.pad_to_multiple_of)
    diag = report["mapping_diagnostics"]
    log.info(
        "%s: %d new tokens (%d partial UTF-8), %d rows, fallbacks %s, new/source norm %s, %s s",
        a.method,
        report["vocab"]["new"],
        diag["partial_utf8_tokens"],
        report["vocab"]["rows"],
        report["fallbacks"],
        {r: s["new_over_source"] for r, s in report["stats"].items() if isinstance(s, dict)},
        report["seconds"],
    )
    write_json(a.report, report)


if __name__ == "__main__":
    main()
