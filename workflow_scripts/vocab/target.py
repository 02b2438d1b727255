"""The target tokenizer T_t: a real BPE over V_s ∪ V_new (paper 002 §3, §6.6), and the report of what it changes.

New tokens are vocabulary entries plus merge rules appended after the source merges, never "added tokens", which are
matched before BPE and garble byte-level decoding. New ids follow the frequency order, contiguous after every source id
(model vocabulary and added/special tokens: for Llama-3 after its 256 specials at 128000-128255, so that the model's
existing embedding rows keep their meaning and new rows are appended); merges follow the order of addition, which
matters (an early block may cross a character boundary that a later token claims), so ``expand_tokenizer`` takes them
as given.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from workflow_scripts.io import atomic_path
from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE, piece_text
from workflow_scripts.vocab.select import plan_expansion, source_pieces
from workflow_scripts.vocab.source import as_tokenizer, load_source

# Tokenizer files copied unchanged from the source folder (which may be a whole model folder: weights and config.json
# stay behind). tokenizer.json is rewritten; GPT-2-style vocab.json/merges.txt are regenerated from it.
_COPIED_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
_COPIED_FOLDERS = ("additional_chat_templates",)


def next_free_id(tokenizer_json: dict) -> int:
    """The first id after every source id, model vocabulary and added/special tokens alike."""
    ids = list(tokenizer_json["model"]["vocab"].values()) + [t["id"] for t in tokenizer_json.get("added_tokens", [])]
    return max(ids) + 1


NEW_MERGES = ("first", "last")


def build_expanded_json(
    tokenizer_json: dict, new_tokens: Sequence[str], merges: Sequence[tuple[str, str]], new_merges: str = "last"
) -> dict:
    """A copy of the source tokenizer.json with ``new_tokens`` at contiguous ids and ``merges`` after its merges
    (``new_merges="last"``) or before them (``"first"``: new tokens win, the paper's priority); either way the source
    merges keep their order among themselves. The default here is "last" because plans (``plan_expansion``) are made
    for appended merges; ``pipeline.expand`` defaults to "first" and replaces what that order makes unreachable."""
    if new_merges not in NEW_MERGES:
        raise ValueError(f"new_merges must be one of {NEW_MERGES}, got {new_merges!r}")
    # Only the vocabulary and the merges change: copy those, share the rest (a deep copy of a 128K vocabulary is slow).
    model = {
        **tokenizer_json["model"],
        "vocab": dict(tokenizer_json["model"]["vocab"]),
        "merges": list(tokenizer_json["model"]["merges"]),
    }
    out = {**tokenizer_json, "model": model}
    start = next_free_id(tokenizer_json)
    # tokenizers ignores the ids written for added tokens that are not in the model vocabulary and numbers them after
    # the vocabulary's size instead (Llama-3: the 256 specials at 128000-128255 follow the 128,000 BPE entries). New
    # entries after 128255 would move every special. So such tokens enter the BPE vocabulary with their ids; no merge
    # produces them and they stay added tokens, matched before BPE, so tokenization does not change.
    for added in out.get("added_tokens", []):
        if added["content"] not in model["vocab"]:
            model["vocab"][added["content"]] = added["id"]
    for offset, token in enumerate(new_tokens):
        if token in model["vocab"]:
            raise ValueError(f"new token {token!r} is already in the source vocabulary")
        model["vocab"][token] = start + offset
    string_merges = bool(model["merges"]) and isinstance(model["merges"][0], str)
    source_merges, model["merges"] = model["merges"], []
    for left, right in merges:
        if left + right not in model["vocab"]:
            raise ValueError(f"merge ({left!r}, {right!r}) produces {left + right!r}, which has no id")
        if string_merges:
            if " " in left or " " in right:
                raise ValueError(f"merge ({left!r}, {right!r}) cannot be written in the 'left right' merge format")
            model["merges"].append(f"{left} {right}")
        else:
            model["merges"].append([left, right])
    model["merges"] = model["merges"] + source_merges if new_merges == "first" else source_merges + model["merges"]
    return out


def _write_tokenizer_folder(source_dir: Path | None, tokenizer_json_text: str, out: Path) -> None:
    """Copy the source folder's configuration (chat template, special tokens) and write the expanded vocabulary."""
    out.mkdir(parents=True)
    if source_dir is not None:
        for name in _COPIED_FILES:
            if (source_dir / name).is_file():
                shutil.copy2(source_dir / name, out / name)
        for name in _COPIED_FOLDERS:
            if (source_dir / name).is_dir():
                shutil.copytree(source_dir / name, out / name)
    (out / "tokenizer.json").write_text(tokenizer_json_text, encoding="utf-8")
    if source_dir is not None and (source_dir / "vocab.json").exists():
        tj = json.loads(tokenizer_json_text)
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
    source_tokenizer_dir: str | Path,
    new_tokens: Sequence[tuple[str, int]] | Sequence[str],
    out_dir: str | Path,
    merges: Sequence[tuple[str, str]] | None = None,
    new_merges: str = "last",
    unreachable: Sequence[str] = (),
    check_reachable: bool = True,
) -> Tokenizer:
    """Write T_t, a real BPE over V_s ∪ V_new (paper 002 §3, §6.6), as a tokenizer folder; return its backend.

    ``new_tokens`` (piece strings, optionally with frequencies) get contiguous ids in the given order. ``merges`` (one
    per new token, in the order to append them) come from ``plan_expansion``; the order matters when building blocks
    were added, so pass them. Without them the merges are re-derived by passes over the list (enough for a hand-written
    list whose tokens all become two-piece splits). ``new_merges`` places them before ("first") or after ("last") the
    source merges (``build_expanded_json``). Every new token is checked to be produced for its own string, except
    those listed in ``unreachable`` (the plain top-k's tokens without a merge: ``select.plan_topk``), and except
    when ``check_reachable`` is False (the plain top-k under new merges first, reported instead of refused).
    """
    source_dir = Path(source_tokenizer_dir)
    tj, _ = load_source(source_dir)
    tokens = [t if isinstance(t, str) else t[0] for t in new_tokens]
    if not tokens:
        raise ValueError("no new tokens given")
    if merges is None:
        try:
            source = Tokenizer.from_str(json.dumps(tj))
            merges = plan_expansion(source, [(t, 0) for t in tokens], len(tokens)).merges
        except ValueError as e:
            raise ValueError(
                f"cannot make every new token reachable by appended merges in any pass order ({e}); pass the merges "
                "from plan_expansion (their order matters)"
            ) from e
    merges = [(str(left), str(right)) for left, right in merges]
    # Single characters (SentencePiece byte-fallback route) are vocabulary entries without a merge.
    skip = set(unreachable)
    if sorted(left + right for left, right in merges) != sorted(t for t in tokens if len(t) > 1 and t not in skip):
        raise ValueError("merges must produce exactly the new tokens, one merge each (none for single characters)")
    text = json.dumps(build_expanded_json(tj, tokens, merges, new_merges), ensure_ascii=False)
    target = Tokenizer.from_str(text)
    start = next_free_id(tj)
    for offset, token in enumerate(tokens):
        got = [(t.value, t.id) for t in target.model.tokenize(token)]
        if check_reachable and got != [(token, start + offset)] and token not in skip:
            raise ValueError(
                f"new token {token!r} (id {start + offset}) is not produced for its own string but split as {got}: "
                "the merges or their order do not make it reachable"
            )
    with atomic_path(out_dir) as tmp:
        _write_tokenizer_folder(source_dir if source_dir.is_dir() else None, text, tmp)
    return target


def expansion_report(
    source: Tokenizer | str | Path,
    target: Tokenizer | str | Path,
    new_tokens: Sequence[tuple[str, int]],
    heldout_lines: Sequence[str],
) -> dict:
    """New tokens (piece, text, frequency, id) and fragmentation of held-out text before/after (paper 002 Fig. 2, 4)."""
    source, target = as_tokenizer(source), as_tokenizer(target)
    # Byte fallback marks the SentencePiece route (cheaper than serializing a 128K tokenizer to ask detect_family).
    family = SENTENCEPIECE_BPE if getattr(source.model, "byte_fallback", False) else BYTE_LEVEL_BPE
    lines = [line for line in heldout_lines if line]
    tokens = []
    new_ids = set()
    for token, freq in new_tokens:
        tid = target.token_to_id(token)
        new_ids.add(tid)
        tokens.append(
            {
                "id": tid,
                "piece": token,
                "text": piece_text(token, family),
                "frequency": int(freq),
                "source_pieces": len(source_pieces(source, token)),
            }
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
