"""Auxiliary tokenizer and vocabulary expansion (paper 002 §3, §6.6).

An auxiliary BPE tokenizer T_aux is trained on the target-language corpus D with the source tokenizer's own normalizer and
pre-tokenizer; V_new is taken from its most frequent tokens that the source vocabulary V_s lacks; the target tokenizer T_t is
a real BPE over V_s ∪ V_new (vocabulary entries plus merge rules appended after the source merges), never "added tokens",
which are matched before BPE and garble byte-level decoding.

The route follows from the source tokenizer's tokenizer.json (``detect_family``): byte-level BPE (GPT-2, SmolLM2, Llama-3)
is supported; SentencePiece-style byte-fallback BPE (Llama-2, Gemma) is recognised but not yet supported; other models
(WordPiece, Unigram, WordLevel) are rejected.

Expansion algorithm ("producible greedy"). Appending a merge (l, r) -> l+r after every existing merge never changes how
a pre-token is split unless l+r occurs in it: the existing merges all run first (BPE applies the lowest-ranked applicable
merge each time), and no existing merge involves the new token. Hence a new token t is produced for its own string exactly
when the current T_t splits that string into two pieces (l, r) and the appended merge is (l, r); a string split into three
or more pieces cannot be produced by one merge. Candidates are ranked by frequency (aux tokenization of D; ties by aux id,
i.e. the aux merge order). Repeatedly, the highest-ranked candidate that the current T_t splits into exactly two pieces is
added with that merge; candidates split into more pieces wait, and are re-examined after each addition, since adding a
token can turn them into two pieces. This stops at exactly k tokens, every one of them in V_aux and not in V_s, each
guaranteed to be produced when its string is encoded alone (later merges cannot undo an earlier one: they rank lower).
We choose the next candidate rather than adding intermediate tokens because intermediates would either leave V_aux (a
two-way split of the source pieces need not be an aux token) or enter V_new out of frequency order; candidates passed
over are reported. New ids follow the frequency order and are contiguous after every source id (model vocabulary and
added/special tokens); the merges follow the order in which tokens were added.
"""

from __future__ import annotations

import argparse
import heapq
import json
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from workflow_scripts.io import atomic_path, read_lines, seed_everything, setup_logging, write_json

BYTE_LEVEL_BPE = "byte_level_bpe"
SENTENCEPIECE_BPE = "sentencepiece_bpe"
SUPPORTED_FAMILIES = (BYTE_LEVEL_BPE,)

# Files of a tokenizer folder that describe the vocabulary itself: they are rewritten (or dropped) after expansion;
# every other file (tokenizer_config.json, special_tokens_map.json, chat_template.jinja, ...) is copied unchanged.
_VOCABULARY_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer.model", "spiece.model")


# ---------------------------------------------------------------------------------------------------------------------
# Reading the source tokenizer and deciding the route
# ---------------------------------------------------------------------------------------------------------------------


def _tokenizer_json_path(source: str | Path) -> Path:
    """tokenizer.json of a tokenizer/model folder (or the file itself)."""
    path = Path(source)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no tokenizer.json at {path}: the source tokenizer must be a Hugging Face folder with a fast tokenizer"
        )
    return path


def _as_tokenizer(tok: Tokenizer | Any | str | Path) -> Tokenizer:
    """Accept a ``tokenizers.Tokenizer``, a transformers fast tokenizer, a tokenizer.json or a folder holding one."""
    if isinstance(tok, Tokenizer):
        return tok
    if isinstance(tok, (str, Path)):
        return Tokenizer.from_file(str(_tokenizer_json_path(tok)))
    backend = getattr(tok, "backend_tokenizer", None)
    if isinstance(backend, Tokenizer):
        return backend
    raise TypeError(f"expected a tokenizers.Tokenizer, a fast transformers tokenizer or a path, got {type(tok).__name__}")


def _has_byte_level(component: dict | None) -> bool:
    """Whether a pre-tokenizer (possibly a Sequence) contains a ByteLevel step."""
    if not component:
        return False
    if component.get("type") == "ByteLevel":
        return True
    if component.get("type") == "Sequence":
        return any(_has_byte_level(c) for c in component.get("pretokenizers", []))
    return False


def detect_family(tokenizer_json: dict, where: str | Path = "<tokenizer>") -> str:
    """The expansion route for a tokenizer.json: ``byte_level_bpe`` or ``sentencepiece_bpe`` (paper 002 §6.6)."""
    model = tokenizer_json.get("model") or {}
    kind = model.get("type")
    if kind != "BPE":
        raise ValueError(
            f"unsupported tokenizer kind {kind} for {where}: vocabulary expansion needs a BPE model "
            "(byte-level BPE like GPT-2/SmolLM2/Llama-3, or SentencePiece byte-fallback BPE like Llama-2/Gemma)"
        )
    if model.get("byte_fallback"):
        return SENTENCEPIECE_BPE
    if _has_byte_level(tokenizer_json.get("pre_tokenizer")):
        return BYTE_LEVEL_BPE
    raise ValueError(
        f"unsupported tokenizer kind BPE without byte-level pre-tokenizer or byte fallback for {where}: new tokens could "
        "produce characters the model cannot represent"
    )


def _require_supported(family: str, where: str | Path) -> None:
    if family not in SUPPORTED_FAMILIES:
        raise NotImplementedError(
            f"tokenizer family {family} ({where}) is not yet supported: vocabulary expansion currently handles "
            f"{', '.join(SUPPORTED_FAMILIES)} only"
        )


def load_source(source_tokenizer_dir: str | Path) -> tuple[dict, str]:
    """The source tokenizer.json as a dict and its family; raises for families that are not supported yet."""
    path = _tokenizer_json_path(source_tokenizer_dir)
    tj = json.loads(path.read_text(encoding="utf-8"))
    family = detect_family(tj, source_tokenizer_dir)
    _require_supported(family, source_tokenizer_dir)
    return tj, family


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map used by byte-level BPE pieces."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_UNICODE_TO_BYTE = {c: b for b, c in bytes_to_unicode().items()}


def piece_bytes(piece: str) -> bytes:
    """The raw bytes a byte-level BPE piece stands for."""
    try:
        return bytes(_UNICODE_TO_BYTE[c] for c in piece)
    except KeyError as e:
        raise ValueError(f"{piece!r} is not a byte-level BPE piece (character {e.args[0]!r} is not a byte symbol)") from e


def piece_text(piece: str) -> str:
    """A byte-level piece as text; partial UTF-8 sequences stay visible as backslash escapes."""
    return piece_bytes(piece).decode("utf-8", errors="backslashreplace")


def byte_level_form(text: str) -> str:
    """``text`` in the byte-level alphabet, so that piece strings can be searched in it."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


# ---------------------------------------------------------------------------------------------------------------------
# 1. The auxiliary tokenizer
# ---------------------------------------------------------------------------------------------------------------------


def train_aux_tokenizer(
    lines: Iterable[str], source_tokenizer_dir: str | Path, vocab_size: int, seed: int = 42
) -> Tokenizer:
    """Train T_aux on D with the source's normalizer, pre-tokenizer and decoder, so that pieces compare (paper 002 §3).

    Byte-level route: Hugging Face BPE trainer with the full byte-level initial alphabet and no special tokens. The
    trainer has no randomness (ties go to the lower pair ids); ``seed`` is still applied for any library that might use it.
    """
    from tokenizers import pre_tokenizers, trainers

    seed_everything(seed)
    tj, family = load_source(source_tokenizer_dir)
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise ValueError("the corpus D is empty: cannot train an auxiliary tokenizer")
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if vocab_size <= len(alphabet):
        raise ValueError(f"aux vocab_size={vocab_size} must exceed the byte-level alphabet ({len(alphabet)} symbols)")
    src_model = tj["model"]
    shell = {
        "version": tj.get("version", "1.0"),
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": tj.get("normalizer"),
        "pre_tokenizer": tj.get("pre_tokenizer"),
        "post_processor": None,
        "decoder": tj.get("decoder"),
        "model": {"type": "BPE", "vocab": {}, "merges": []},
    }
    aux = Tokenizer.from_str(json.dumps(shell))
    options = {k: src_model[k] for k in ("continuing_subword_prefix", "end_of_word_suffix") if src_model.get(k)}
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False, special_tokens=[], initial_alphabet=alphabet, **options
    )
    aux.train_from_iterator(lines, trainer=trainer, length=len(lines))
    reached = aux.get_vocab_size()
    if reached < vocab_size:
        raise ValueError(
            f"corpus too small for an aux vocabulary of {vocab_size}: BPE training on {len(lines)} lines stopped at "
            f"{reached} tokens (no pair left to merge); use aux vocab size <= {reached} (config aux_vocab_size) or more text"
        )
    # Same model options as the source (e.g. Llama-3's ignore_merges), so that aux pieces behave like source pieces.
    out = json.loads(aux.to_str())
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges"):
        if key in src_model:
            out["model"][key] = src_model[key]
    return Tokenizer.from_str(json.dumps(out))


# ---------------------------------------------------------------------------------------------------------------------
# 2. Choosing V_new
# ---------------------------------------------------------------------------------------------------------------------


def rank_candidates(aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str]) -> list[tuple[str, int]]:
    """Aux tokens not in V_s with their frequency of use when D is tokenized by T_aux, most frequent first.

    Ties are broken by the aux id (the aux merge order), so the ranking is deterministic. Unused aux tokens are left out.
    """
    aux, source = _as_tokenizer(aux), _as_tokenizer(source)
    encodings = aux.encode_batch([line for line in lines if line], add_special_tokens=False)
    ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64)
    counts = np.bincount(ids, minlength=aux.get_vocab_size(with_added_tokens=True))
    source_vocab = source.get_vocab(with_added_tokens=True)
    special = {t.content for t in aux.get_added_tokens_decoder().values()}
    ranked = []
    for idx in np.flatnonzero(counts):
        token = aux.id_to_token(int(idx))
        if token not in source_vocab and token not in special:
            ranked.append((int(idx), token, int(counts[idx])))
    ranked.sort(key=lambda x: (-x[2], x[0]))
    return [(token, freq) for _, token, freq in ranked]


@dataclass
class ExpansionPlan:
    """The outcome of the producible greedy: V_new in frequency order and the merges to append, in addition order."""

    selected: list[tuple[str, int]]
    merges: list[tuple[str, str]]
    passed_over: list[tuple[str, int]] = field(default_factory=list)


def _apply_merge(pieces: list[str], left: str, right: str) -> list[str]:
    """Apply one merge left to right without overlaps, as the BPE model does for a newly lowest-priority merge."""
    out, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and pieces[i] == left and pieces[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(pieces[i])
            i += 1
    return out


def _source_pieces(source: Tokenizer, token: str) -> list[str]:
    """How the source BPE model splits a piece string (no pre-tokenizer: the string is already a pre-token)."""
    return [t.value for t in source.model.tokenize(token)]


def plan_expansion(source: Tokenizer | str | Path, ranked: Sequence[tuple[str, int]], k: int) -> ExpansionPlan:
    """Pick k producible tokens from the ranked candidates and the merges that produce them (module docstring)."""
    source = _as_tokenizer(source)
    if k < 1:
        raise ValueError(f"k (the number of new tokens) must be positive, got {k}")
    source_vocab = source.get_vocab(with_added_tokens=True)
    tokens = [t for t, _ in ranked]
    if len(set(tokens)) != len(tokens):
        raise ValueError("candidate tokens must be unique")
    in_vs = [t for t in tokens if t in source_vocab]
    if in_vs:
        raise ValueError(f"{len(in_vs)} candidate tokens are already in the source vocabulary, e.g. {in_vs[:5]}")
    pieces = [_source_pieces(source, t) for t in tokens]
    # Only candidates split into 3+ pieces can change when a merge is appended; 2-piece ones wait in the heap.
    heap = [i for i, p in enumerate(pieces) if len(p) == 2]
    heapq.heapify(heap)
    pair_index: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i, p in enumerate(pieces):
        if len(p) > 2:
            for pair in zip(p, p[1:], strict=False):
                pair_index[pair].add(i)
    chosen: list[int] = []
    merges: list[tuple[str, str]] = []
    while len(chosen) < k and heap:
        i = heapq.heappop(heap)
        left, right = pieces[i]
        chosen.append(i)
        merges.append((left, right))
        for j in pair_index.pop((left, right), set()):
            old = pieces[j]
            new = _apply_merge(old, left, right)
            for pair in zip(old, old[1:], strict=False):
                if pair != (left, right):
                    pair_index[pair].discard(j)
            pieces[j] = new
            if len(new) == 2:
                heapq.heappush(heap, j)
            else:
                for pair in zip(new, new[1:], strict=False):
                    pair_index[pair].add(j)
    if len(chosen) < k:
        raise ValueError(
            f"only {len(chosen)} of {len(tokens)} candidate tokens can be made reachable by appended merges, fewer than "
            f"k={k}: lower k or train the aux tokenizer on more text / with a larger vocabulary"
        )
    chosen_set = set(chosen)
    last = max(chosen)
    selected = [ranked[i] for i in sorted(chosen)]
    passed_over = [ranked[i] for i in range(last) if i not in chosen_set]
    return ExpansionPlan(selected=[(t, int(f)) for t, f in selected], merges=merges, passed_over=passed_over)


def select_new_tokens(
    aux: Tokenizer | str | Path, source: Tokenizer | str | Path, lines: Sequence[str], k: int
) -> list[tuple[str, int]]:
    """V_new: the k most frequent aux tokens not in V_s that appended merges can produce, most frequent first (§3)."""
    ranked = rank_candidates(aux, source, lines)
    if len(ranked) < k:
        raise ValueError(
            f"the aux tokenizer yields only {len(ranked)} tokens used on D and absent from V_s, fewer than k={k}: lower k "
            "or train the aux tokenizer with a larger vocabulary"
        )
    return plan_expansion(source, ranked, k).selected


# ---------------------------------------------------------------------------------------------------------------------
# 3. The target tokenizer T_t
# ---------------------------------------------------------------------------------------------------------------------


def next_free_id(tokenizer_json: dict) -> int:
    """The first id after every source id, model vocabulary and added/special tokens alike."""
    ids = list(tokenizer_json["model"]["vocab"].values()) + [t["id"] for t in tokenizer_json.get("added_tokens", [])]
    return max(ids) + 1


def build_expanded_json(tokenizer_json: dict, new_tokens: Sequence[str], merges: Sequence[tuple[str, str]]) -> dict:
    """A copy of the source tokenizer.json with ``new_tokens`` as contiguous ids and ``merges`` after the source merges."""
    out = json.loads(json.dumps(tokenizer_json))
    model = out["model"]
    start = next_free_id(tokenizer_json)
    for offset, token in enumerate(new_tokens):
        if token in model["vocab"]:
            raise ValueError(f"new token {token!r} is already in the source vocabulary")
        model["vocab"][token] = start + offset
    string_merges = bool(model["merges"]) and isinstance(model["merges"][0], str)
    for left, right in merges:
        if left + right not in model["vocab"]:
            raise ValueError(f"merge ({left!r}, {right!r}) produces {left + right!r}, which has no id")
        if string_merges:
            if " " in left or " " in right:
                raise ValueError(f"merge ({left!r}, {right!r}) cannot be written in the 'left right' merge format")
            model["merges"].append(f"{left} {right}")
        else:
            model["merges"].append([left, right])
    return out


def _write_tokenizer_folder(source_dir: Path | None, tokenizer: Tokenizer, out: Path) -> None:
    """Copy the source folder's configuration (chat template, special tokens) and write the expanded vocabulary."""
    out.mkdir(parents=True)
    if source_dir is not None:
        for f in sorted(source_dir.iterdir()):
            if f.is_file() and f.name not in _VOCABULARY_FILES:
                shutil.copy2(f, out / f.name)
    tokenizer.save(str(out / "tokenizer.json"))
    tj = json.loads(tokenizer.to_str())
    if source_dir is not None and (source_dir / "vocab.json").exists():
        # GPT-2-style slow files must not disagree with tokenizer.json.
        vocab = dict(sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1]))
        (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
        (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    config = out / "tokenizer_config.json"
    if not config.exists():
        config.write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}, indent=2) + "\n", encoding="utf-8")
    stm = out / "special_tokens_map.json"
    if not stm.exists():
        # transformers 5 keeps special tokens in tokenizer_config.json; older readers look for this file.
        cfg = json.loads(config.read_text(encoding="utf-8"))
        names = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
        special = {n: cfg[n] for n in names if cfg.get(n) is not None}
        if cfg.get("additional_special_tokens"):
            special["additional_special_tokens"] = cfg["additional_special_tokens"]
        stm.write_text(json.dumps(special, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def expand_tokenizer(
    source_tokenizer_dir: str | Path, new_tokens: Sequence[tuple[str, int]] | Sequence[str], out_dir: str | Path
) -> Tokenizer:
    """Write T_t, a real BPE over V_s ∪ V_new (paper 002 §3, §6.6), as a tokenizer folder; return its backend.

    ``new_tokens`` (piece strings, optionally with frequencies) get contiguous ids in the given order; their merges are
    found by the producible greedy, and every token is checked to be produced when its string is encoded alone.
    """
    source_dir = Path(source_tokenizer_dir)
    tj, _ = load_source(source_dir)
    source = Tokenizer.from_str(json.dumps(tj))
    tokens = [t if isinstance(t, str) else t[0] for t in new_tokens]
    if not tokens:
        raise ValueError("no new tokens given")
    # Re-planning over exactly these tokens reproduces the selection's addition order; it fails for a token that no
    # appended merge can produce (e.g. a hand-written list whose token splits into three pieces).
    try:
        plan = plan_expansion(source, [(t, 0) for t in tokens], len(tokens))
    except ValueError as e:
        stuck = [(t, _source_pieces(source, t)) for t in tokens if len(_source_pieces(source, t)) > 2][:5]
        raise ValueError(f"cannot make every new token reachable by appended merges ({e}); e.g. {stuck}") from e
    target = Tokenizer.from_str(json.dumps(build_expanded_json(tj, tokens, plan.merges)))
    start = next_free_id(tj)
    for offset, token in enumerate(tokens):
        got = [(t.value, t.id) for t in target.model.tokenize(token)]
        if got != [(token, start + offset)]:
            raise RuntimeError(f"new token {token!r} (id {start + offset}) is not produced for its own string: {got}")
    with atomic_path(out_dir) as tmp:
        _write_tokenizer_folder(source_dir if source_dir.is_dir() else None, target, tmp)
    return target


# ---------------------------------------------------------------------------------------------------------------------
# 4. The report
# ---------------------------------------------------------------------------------------------------------------------


def expansion_report(
    source: Tokenizer | str | Path,
    target: Tokenizer | str | Path,
    new_tokens: Sequence[tuple[str, int]],
    heldout_lines: Sequence[str],
) -> dict:
    """New tokens (piece, text, frequency, id) and fragmentation of held-out text before/after (paper 002 Fig. 2, 4)."""
    source, target = _as_tokenizer(source), _as_tokenizer(target)
    lines = [line for line in heldout_lines if line]
    tokens = []
    new_ids = set()
    for token, freq in new_tokens:
        tid = target.token_to_id(token)
        new_ids.add(tid)
        tokens.append(
            {"id": tid, "piece": token, "text": piece_text(token), "frequency": int(freq),
             "source_pieces": len(_source_pieces(source, token))}
        )
    before = [len(e.ids) for e in source.encode_batch(lines, add_special_tokens=False)]
    after_enc = target.encode_batch(lines, add_special_tokens=False)
    after = [len(e.ids) for e in after_enc]
    n_after = sum(after)
    n_new = sum(1 for e in after_enc for i in e.ids if i in new_ids)
    used = {i for e in after_enc for i in e.ids if i in new_ids}
    n_lines = max(1, len(lines))
    return {
        "k": len(tokens),
        "source_vocab_size": source.get_vocab_size(with_added_tokens=True),
        "target_vocab_size": target.get_vocab_size(with_added_tokens=True),
        "heldout_sentences": len(lines),
        "heldout_characters": sum(len(line) for line in lines),
        "tokens_per_sentence_source": sum(before) / n_lines,
        "tokens_per_sentence_target": n_after / n_lines,
        "token_ratio_target_over_source": (n_after / sum(before)) if sum(before) else None,
        "new_token_share": (n_new / n_after) if n_after else 0.0,
        "new_tokens_used_in_heldout": len(used),
        "new_tokens": tokens,
    }


# ---------------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("aux", help="train the auxiliary tokenizer T_aux on D")
    a.add_argument("--source-tokenizer", required=True, help="HF model/tokenizer folder with tokenizer.json")
    a.add_argument("--corpus", required=True, help="D, one sentence a line")
    a.add_argument("--vocab-size", type=int, required=True)
    a.add_argument("--seed", type=int, default=42)
    a.add_argument("--out", required=True, help="aux tokenizer.json")
    a.add_argument("--log")
    e = sub.add_parser("expand", help="choose V_new and write the target tokenizer T_t")
    e.add_argument("--source-tokenizer", required=True)
    e.add_argument("--aux", required=True, help="aux tokenizer.json")
    e.add_argument("--corpus", required=True, help="D, for token frequencies")
    e.add_argument("--heldout", required=True, help="held-out target text for the report")
    e.add_argument("--k", type=int, required=True)
    e.add_argument("--out", required=True, help="target tokenizer folder")
    e.add_argument("--report", required=True)
    e.add_argument("--log")
    args = p.parse_args(argv)
    log = setup_logging(args.log)
    if args.command == "aux":
        lines = read_lines(args.corpus)
        t0 = time.perf_counter()
        aux = train_aux_tokenizer(lines, args.source_tokenizer, args.vocab_size, args.seed)
        log.info("aux tokenizer: %d tokens from %d lines in %.1f s", aux.get_vocab_size(), len(lines), time.perf_counter() - t0)
        with atomic_path(args.out) as tmp:
            aux.save(str(tmp))
        return
    lines = read_lines(args.corpus)
    t0 = time.perf_counter()
    source = Tokenizer.from_str(json.dumps(load_source(args.source_tokenizer)[0]))
    aux = _as_tokenizer(args.aux)
    ranked = rank_candidates(aux, source, lines)
    if len(ranked) < args.k:
        raise ValueError(f"{args.aux} yields only {len(ranked)} candidate tokens for k={args.k}; lower k")
    plan = plan_expansion(source, ranked, args.k)
    target = expand_tokenizer(args.source_tokenizer, plan.selected, args.out)
    seconds = time.perf_counter() - t0
    report = expansion_report(source, target, plan.selected, read_lines(args.heldout))
    report.update(
        {
            "aux_vocab_size": aux.get_vocab_size(),
            "candidates": len(ranked),
            "passed_over": [{"piece": t, "text": piece_text(t), "frequency": f} for t, f in plan.passed_over],
            "merges": [list(m) for m in plan.merges],
            "seconds": seconds,
        }
    )
    write_json(args.report, report)
    log.info(
        "T_t: %d new tokens (%d candidates passed over) in %.1f s; held-out tokens/sentence %.1f -> %.1f",
        args.k, len(plan.passed_over), seconds, report["tokens_per_sentence_source"], report["tokens_per_sentence_target"],
    )


if __name__ == "__main__":
    main()
