"""The replacement tokenizer of vocabulary replacement (paper 002 §8.3, Table 11): a target tokenizer trained on D that
replaces V_s entirely, by the source family's route (``aux.train_aux_tokenizer``).

Its vocabulary has exactly ``vocab_size`` entries: the source's special tokens first (in their source order, at ids
0..n-1, so that their meaning is kept while their ids may change; the mapping is in the report), then the trained BPE
pieces in training order: for byte-level BPE the 256 byte symbols and the learned merges; for SentencePiece
byte-fallback BPE the unknown piece, the 256 ``<0xXX>`` byte pieces and the learned pieces. The special tokens are
added tokens (matched before BPE) and vocabulary entries, as in the source. The source's normalizer, pre-tokenizer,
decoder and post-processor (its special-token ids rewritten) are kept, and so are the chat template and the
tokenizer_config.json (its ``added_tokens_decoder`` renumbered). Added tokens of the source that are not special (e.g.
Gemma's whitespace runs) are ordinary text for the new BPE: they are dropped and listed in the report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from workflow_scripts.io import UserError, atomic_path
from workflow_scripts.pieces import SENTENCEPIECE_BPE
from workflow_scripts.vocab.aux import train_aux_tokenizer
from workflow_scripts.vocab.source import load_source, tokenizer_json_path
from workflow_scripts.vocab.target import _write_tokenizer_folder


def source_specials(tj: dict) -> list[dict]:
    """The source's special added tokens, in source id order (each string once)."""
    seen: set[str] = set()
    out = []
    for tok in sorted(tj.get("added_tokens", []), key=lambda t: t["id"]):
        if tok.get("special") and tok["content"] not in seen:
            seen.add(tok["content"])
            out.append(tok)
    return out


def _remap_ids(node: Any, ids: dict[str, int]) -> Any:
    """A copy of a post-processor with every special token's id replaced by its new id (TemplateProcessing's
    ``special_tokens`` entries, BERT/RoBERTa-style ``sep``/``cls`` pairs), at any depth of a Sequence."""
    if isinstance(node, list):
        return [_remap_ids(v, ids) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _remap_ids(v, ids) for k, v in node.items()}
    if "tokens" in out and "ids" in out and isinstance(out["tokens"], list):
        missing = [t for t in out["tokens"] if t not in ids]
        if missing:
            raise ValueError(f"the source post-processor uses {missing}, which are not special tokens of the source")
        out["ids"] = [ids[t] for t in out["tokens"]]
    for key in ("sep", "cls"):
        pair = out.get(key)
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and pair[0] in ids:
            out[key] = [pair[0], ids[pair[0]]]
    return out


def build_replacement_json(tj: dict, family: str, aux: Tokenizer, vocab_size: int) -> tuple[dict, dict]:
    """The replacement tokenizer.json from the source's and the trained BPE's, and the special-token mapping."""
    specials = source_specials(tj)
    aux_tj = json.loads(aux.to_str())
    vocab: dict[str, int] = {}
    for tok in specials:
        vocab[tok["content"]] = len(vocab)
    for piece, _ in sorted(aux_tj["model"]["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    if len(vocab) != vocab_size:
        raise ValueError(
            f"replacement vocabulary has {len(vocab)} entries, not the requested {vocab_size} "
            "(a trained piece equals a special token's string?)"
        )
    added = [{**tok, "id": vocab[tok["content"]]} for tok in specials]
    ids = {tok["content"]: vocab[tok["content"]] for tok in specials}
    model = {**aux_tj["model"], "vocab": vocab}
    out = {
        **aux_tj,
        "added_tokens": added,
        "post_processor": _remap_ids(tj.get("post_processor"), ids),
        "model": model,
    }
    src_vocab = tj["model"]["vocab"]
    mapping = {
        "special_tokens": [
            {"content": t["content"], "source_id": t["id"], "target_id": ids[t["content"]]} for t in specials
        ],
        "special_ids_changed": sum(t["id"] != ids[t["content"]] for t in specials),
        "dropped_added_tokens": [t["content"] for t in tj.get("added_tokens", []) if not t.get("special")],
        "family": family,
        "vocab_size": len(vocab),
        "shared_with_source": sum(1 for p in vocab if p in src_vocab),
        "unk_token": model.get("unk_token"),
    }
    if family == SENTENCEPIECE_BPE:
        mapping["byte_fallback_pieces"] = sum(1 for b in range(256) if f"<0x{b:02X}>" in vocab)
    return out, mapping


def train_replacement_tokenizer(
    lines: Sequence[str], source_tokenizer_dir: str | Path, vocab_size: int, seed: int = 42, threads: int = 1
) -> tuple[Tokenizer, dict, str]:
    """Train the replacement tokenizer on D (paper 002 §8.3): (tokenizer, mapping report, tokenizer.json text).

    The BPE is trained for ``vocab_size`` minus the special tokens it does not learn itself (the SentencePiece route
    learns the unknown piece), so that the whole vocabulary has exactly ``vocab_size`` entries.
    """
    tj, family = load_source(source_tokenizer_dir)
    specials = {t["content"] for t in source_specials(tj)}
    learned = {tj["model"].get("unk_token") or "<unk>"} if family == SENTENCEPIECE_BPE else set()
    reserve = len(specials - learned)
    if vocab_size <= reserve + 256:
        raise ValueError(
            f"replace_vocab_size={vocab_size} leaves no room for BPE pieces after {reserve} special tokens and "
            "256 byte symbols"
        )
    try:
        aux = train_aux_tokenizer(lines, source_tokenizer_dir, vocab_size - reserve, seed, threads)
    except ValueError as e:
        # the same BPE route as the aux tokenizer, but the size a user can change is replace_vocab_size
        limit = re.search(r"corpus too small .* use aux vocab size <= (\d+)", str(e))
        if limit is None:
            raise
        most = int(limit.group(1)) + reserve
        raise UserError(
            f"tokenizer.replace_vocab_size: corpus too small for a replacement vocabulary of {vocab_size} "
            f"({reserve} special tokens included): BPE on {len(lines)} lines reaches at most {most}; use "
            f"replace_vocab_size <= {most} or more text"
        ) from None
    out, mapping = build_replacement_json(tj, family, aux, vocab_size)
    text = json.dumps(out, ensure_ascii=False)
    return Tokenizer.from_str(text), mapping, text


def _rewrite_config(folder: Path, mapping: dict) -> None:
    """tokenizer_config.json with ``added_tokens_decoder`` keyed by the new ids, and a copied added_tokens.json with
    the new ids (dropped tokens left out of both)."""
    new_ids = {m["content"]: m["target_id"] for m in mapping["special_tokens"]}
    added = folder / "added_tokens.json"
    if added.is_file():
        old = json.loads(added.read_text(encoding="utf-8"))
        added.write_text(json.dumps({t: new_ids[t] for t in old if t in new_ids}, ensure_ascii=False), encoding="utf-8")
    path = folder / "tokenizer_config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    decoder = cfg.get("added_tokens_decoder")
    if decoder:
        cfg["added_tokens_decoder"] = {
            str(new_ids[v["content"]]): v for v in decoder.values() if v.get("content") in new_ids
        }
    path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def save_replacement(source_tokenizer_dir: str | Path, text: str, mapping: dict, out_dir: str | Path) -> None:
    """Write the replacement tokenizer folder atomically: tokenizer.json and the source's configuration files."""
    source_dir = tokenizer_json_path(source_tokenizer_dir).parent
    with atomic_path(out_dir) as tmp:
        _write_tokenizer_folder(source_dir, text, tmp)
        _rewrite_config(tmp, mapping)


def replacement_report(
    source: Tokenizer, target: Tokenizer, mapping: dict, heldout: Sequence[str], corpus: Sequence[str]
) -> dict:
    """The mapping plus fragmentation of held-out text and the round trip of D (decode(encode(x)) == x)."""
    lines = [line for line in heldout if line]
    n = max(1, len(lines))
    before = sum(len(e.ids) for e in source.encode_batch(lines, add_special_tokens=False))
    after = sum(len(e.ids) for e in target.encode_batch(lines, add_special_tokens=False))
    encs = target.encode_batch(list(corpus), add_special_tokens=False)
    bad = [i for i, (line, e) in enumerate(zip(corpus, encs, strict=True)) if target.decode(e.ids) != line]
    return {
        **mapping,
        "heldout_sentences": len(lines),
        "tokens_per_sentence_source": before / n,
        "tokens_per_sentence_target": after / n,
        "token_ratio_target_over_source": after / before if before else None,
        "roundtrip_failures_in_D": len(bad),
        "roundtrip_failure_lines": bad[:20],
    }
