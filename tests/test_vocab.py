"""Auxiliary tokenizer and vocabulary expansion (workflow_scripts/vocab/) on SmolLM2's real tokenizer and real Thai
and Sinhala text (LibreOffice UI translations), plus a tiny byte-level BPE whose expansion is worked out by hand."""

from __future__ import annotations

import bisect
import itertools
import json
from collections import Counter
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from tests.conftest import l10n_pairs
from workflow_scripts import vocab as V

REPO = Path(__file__).resolve().parents[1]
AUX_VOCAB = 8000
KS = (50, 100, 500)
# Japanese the Thai aux corpus never saw (checked in the test): kana, kanji and a full-width comma.
JAPANESE = [
    "東京都の天気は晴れです。",
    "新しい語彙を追加しても、文章は正しく復元されるべきだ。",
    "ひらがなとカタカナと漢字",
]


@pytest.fixture(scope="module")
def thai() -> dict[str, list[str]]:
    pairs = l10n_pairs("th")
    target = [t for _, t in pairs]
    # Every tenth sentence is held out, so fragmentation is measured on text the aux tokenizer did not see.
    return {
        "train": [t for i, t in enumerate(target) if i % 10],
        "heldout": [t for i, t in enumerate(target) if i % 10 == 0],
        "english": [e for e, _ in pairs],
    }


@pytest.fixture(scope="module")
def sinhala() -> dict[str, list[str]]:
    pairs = l10n_pairs("si")
    return {"target": [t for _, t in pairs], "english": [e for e, _ in pairs]}


@pytest.fixture(scope="module")
def source(smollm2_tokenizer_dir) -> Tokenizer:
    return Tokenizer.from_file(str(smollm2_tokenizer_dir / "tokenizer.json"))


@pytest.fixture(scope="module")
def aux(thai, smollm2_tokenizer_dir) -> Tokenizer:
    return V.train_aux_tokenizer(thai["train"], smollm2_tokenizer_dir, AUX_VOCAB, seed=42)


@pytest.fixture(scope="module")
def ranked(aux, source, thai) -> list[tuple[str, int]]:
    return V.rank_candidates(aux, source, thai["train"])


@pytest.fixture(scope="module")
def expanded(aux, ranked, source, smollm2_tokenizer_dir, tmp_path_factory) -> dict[int, dict]:
    """Thai expansions of SmolLM2 for each k: new tokens, the target backend, and the saved folder at the largest k
    (the same tokenizer.json kept in memory for the others)."""
    out = {}
    for k in KS:
        folder = tmp_path_factory.mktemp(f"tt_{k}") / "tokenizer" if k == max(KS) else None
        e = V.expand(smollm2_tokenizer_dir, aux, [], k, folder, ranked=ranked)
        out[k] = {"new": e.plan.selected, "plan": e.plan, "target": e.target, "dir": folder}
    return out


# ---------------------------------------------------------------------------------------------------------------------
# The hand-checkable case
# ---------------------------------------------------------------------------------------------------------------------

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
ALPHABET = sorted(pre_tokenizers.ByteLevel.alphabet())


def _bpe_json(vocab: dict[str, int], merges: list[list[str]], added: list[dict]) -> dict:
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": BYTE_LEVEL,
        "post_processor": None,
        "decoder": {**BYTE_LEVEL, "add_prefix_space": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


@pytest.fixture
def tiny(tmp_path) -> dict:
    """Source: special <|end|> = 0, the 256 byte symbols = 1..256, one merge (a, b) -> ab = 257.

    Aux (built by hand, as if trained on D): merges (b,c) (a,bc) (c,d) (x,y) (xy,z) (y,z).
    D tokenized by aux: "abc abc" -> abc, Ġ abc; "abc" -> abc; "bcd" -> bc d; "cd cd cd" -> cd, Ġ cd, Ġ cd;
    "xyz" five times -> xyz ×5 (and Ġ ×4); "xy" -> xy.  Candidates (not in V_s): xyz 5, abc 3, cd 3, bc 1, xy 1,
    yz 0 (never output: (x,y) ranks first), ties by aux id: abc (257) before cd (258), bc (256) before xy (259).
    Source splits: xyz -> x y z (three pieces: waits), abc -> ab c, cd -> c d, bc -> b c, xy -> x y.
    """
    vocab = {"<|end|>": 0, **{c: i + 1 for i, c in enumerate(ALPHABET)}, "ab": 257}
    special = [
        {
            "id": 0,
            "content": "<|end|>",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
    ]
    src_dir = tmp_path / "source"
    src_dir.mkdir()
    (src_dir / "tokenizer.json").write_text(json.dumps(_bpe_json(vocab, [["a", "b"]], special)), encoding="utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|end|>", "chat_template": "{{ 'X' }}"}
    (src_dir / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    # A model folder: the weights and model config must not travel into the tokenizer folder.
    (src_dir / "config.json").write_text("{}", encoding="utf-8")
    (src_dir / "model.safetensors").write_bytes(b"\0" * 8)
    aux_vocab = {c: i for i, c in enumerate(ALPHABET)}
    aux_merges = [["b", "c"], ["a", "bc"], ["c", "d"], ["x", "y"], ["xy", "z"], ["y", "z"]]
    for i, (left, right) in enumerate(aux_merges):
        aux_vocab[left + right] = 256 + i
    aux = Tokenizer.from_str(json.dumps(_bpe_json(aux_vocab, aux_merges, [])))
    lines = ["abc abc", "abc", "bcd", "cd cd cd", "xyz xyz xyz xyz xyz", "xy"]
    return {"dir": src_dir, "source": Tokenizer.from_file(str(src_dir / "tokenizer.json")), "aux": aux, "lines": lines}


def test_tiny_ranking_and_selection_by_hand(tiny):
    ranked = V.rank_candidates(tiny["aux"], tiny["source"], tiny["lines"])
    assert ranked == [("xyz", 5), ("abc", 3), ("cd", 3), ("bc", 1), ("xy", 1), ("yz", 0)]
    parts = V.aux_merge_parts(tiny["aux"])
    assert parts["xyz"] == ("xy", "z") and parts["abc"] == ("a", "bc")
    # k=1: xyz needs its block xy first (two tokens, over budget), so the next candidate is taken.
    plan = V.plan_expansion(tiny["source"], ranked, 1, parts)
    assert plan.selected == [("abc", 3)] and plan.merges == [("ab", "c")] and plan.passed_over == [("xyz", 5)]
    # k=2: xyz with its block xy (aux merge (x,y)); abc is passed over, xy is a member ranked below k.
    plan = V.plan_expansion(tiny["source"], ranked, 2, parts)
    assert plan.selected == [("xyz", 5), ("xy", 1)] and plan.merges == [("x", "y"), ("xy", "z")]
    assert plan.passed_over == [("abc", 3)] and plan.outside_top_k == [("xy", 1)]
    # abc is taken by its source split (ab, c), not by its aux parts (a, bc).
    plan = V.plan_expansion(tiny["source"], ranked, 4, parts)
    assert plan.selected == [("xyz", 5), ("abc", 3), ("cd", 3), ("xy", 1)] and plan.passed_over == [("bc", 1)]
    assert plan.merges == [("x", "y"), ("xy", "z"), ("ab", "c"), ("c", "d")]
    plan = V.plan_expansion(tiny["source"], ranked, 5, parts)
    assert plan.selected == ranked[:5] and plan.passed_over == [] and plan.outside_top_k == []
    assert plan.merges == [("x", "y"), ("xy", "z"), ("ab", "c"), ("c", "d"), ("b", "c")]
    assert V.select_new_tokens(tiny["aux"], tiny["source"], tiny["lines"], 2) == [("xyz", 5), ("xy", 1)]
    assert V.select_new_tokens(tiny["aux"], tiny["source"], tiny["lines"], 5) == ranked[:5]
    # yz is never output by the aux tokenizer (frequency 0) but is still a candidate, last.
    assert V.plan_expansion(tiny["source"], ranked, 6, parts).merges[-1] == ("y", "z")
    with pytest.raises(ValueError, match=r"only 6 tokens .* fewer than k=7"):
        V.select_new_tokens(tiny["aux"], tiny["source"], tiny["lines"], 7)
    # Without building blocks a candidate waits until T_t splits it in two: k=4 leaves xyz out (xy comes last).
    plan = V.plan_expansion(tiny["source"], ranked, 4)
    assert plan.selected == [("abc", 3), ("cd", 3), ("bc", 1), ("xy", 1)] and plan.passed_over == [("xyz", 5)]


def test_tiny_merge_order_of_building_blocks_matters(tiny, tmp_path):
    """wxyz is built from its aux blocks wx + yz; the later token xy would cross that boundary if it came first."""
    ranked = [("wxyz", 9), ("xy", 5), ("wx", 0), ("yz", 0)]
    parts = {"wxyz": ("wx", "yz"), "wx": ("w", "x"), "yz": ("y", "z"), "xy": ("x", "y")}
    plan = V.plan_expansion(tiny["source"], ranked, 4, parts)
    assert plan.merges == [("w", "x"), ("y", "z"), ("wx", "yz"), ("x", "y")]
    target = V.expand_tokenizer(tiny["dir"], plan.selected, tmp_path / "tt", plan.merges)
    assert target.encode("wxyz", add_special_tokens=False).tokens == ["wxyz"]
    assert target.encode("axyb", add_special_tokens=False).tokens == ["a", "xy", "b"]
    # Re-derived in frequency order, xy would come first and wxyz would split as w + xy + z: refused, not garbled.
    with pytest.raises(ValueError, match="pass the merges from plan_expansion"):
        V.expand_tokenizer(tiny["dir"], plan.selected, tmp_path / "tt2")
    with pytest.raises(ValueError, match=r"'wxyz' .* not produced for its own string"):
        V.expand_tokenizer(tiny["dir"], plan.selected, tmp_path / "tt2", [plan.merges[i] for i in (3, 0, 1, 2)])
    with pytest.raises(ValueError, match="one merge each"):
        V.expand_tokenizer(tiny["dir"], plan.selected, tmp_path / "tt2", plan.merges[:3])
    assert not (tmp_path / "tt2").exists()


def test_tiny_expansion_by_hand(tiny, tmp_path):
    new = [("xyz", 5), ("abc", 3), ("cd", 3), ("bc", 1), ("xy", 1)]
    target = V.expand_tokenizer(tiny["dir"], new, tmp_path / "tt")
    tj = json.loads((tmp_path / "tt" / "tokenizer.json").read_text(encoding="utf-8"))
    # Ids contiguous after every source id (special 0, bytes 1..256, ab 257), in the given (frequency) order.
    assert {t: tj["model"]["vocab"][t] for t, _ in new} == {"xyz": 258, "abc": 259, "cd": 260, "bc": 261, "xy": 262}
    assert tj["model"]["merges"] == [["a", "b"], ["ab", "c"], ["c", "d"], ["b", "c"], ["x", "y"], ["xy", "z"]]
    assert tj["added_tokens"] == json.loads((tiny["dir"] / "tokenizer.json").read_text())["added_tokens"]

    def toks(text: str) -> list[str]:
        return target.encode(text, add_special_tokens=False).tokens

    assert toks("xyz") == ["xyz"] and toks("abc") == ["abc"] and toks("xy") == ["xy"]
    # (c,d) ranks before (b,c): "bcd" becomes b + cd (aux said bc + d); "abcd": (a,b) then (ab,c) win over (c,d).
    assert toks("bcd") == ["b", "cd"] and toks("abcd") == ["abc", "d"]
    # Text without any new string: as the source tokenizes it; the special token keeps its id.
    for text in ["hello world", "ab ba", "<|end|>zyx"]:
        assert target.encode(text).ids == tiny["source"].encode(text).ids
    assert target.encode("<|end|>xyz").ids == [0, 258]
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(tmp_path / "tt")
    assert hf.eos_token == "<|end|>" and hf.eos_token_id == 0 and hf.chat_template == "{{ 'X' }}"
    byte_id = {c: i + 1 for i, c in enumerate(ALPHABET)}
    assert hf("abcd xyz", add_special_tokens=False)["input_ids"] == [259, byte_id["d"], byte_id["Ġ"], 258]
    assert len(hf) == 263
    files = {p.name for p in (tmp_path / "tt").iterdir()}
    assert files == {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
    assert json.loads((tmp_path / "tt" / "special_tokens_map.json").read_text()) == {"eos_token": "<|end|>"}


def test_tiny_unreachable_token_is_refused(tiny, tmp_path):
    with pytest.raises(ValueError, match="reachable"):
        V.expand_tokenizer(tiny["dir"], [("xyz", 5)], tmp_path / "tt")
    assert not (tmp_path / "tt").exists()
    with pytest.raises(ValueError, match="already in the source vocabulary"):
        V.plan_expansion(tiny["source"], [("ab", 9)], 1)


# ---------------------------------------------------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------------------------------------------------


def test_family_detection_and_unsupported_kinds(smollm2_tokenizer_dir, tmp_path):
    tj = json.loads((smollm2_tokenizer_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert V.detect_family(tj) == V.BYTE_LEVEL_BPE

    wordpiece = tmp_path / "wordpiece"
    wordpiece.mkdir()
    wp = Tokenizer(models.WordPiece({"[UNK]": 0, "the": 1, "##s": 2}, unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    wp.save(str(wordpiece / "tokenizer.json"))
    with pytest.raises(ValueError, match=f"unsupported tokenizer kind WordPiece for {wordpiece}"):
        V.train_aux_tokenizer(["the cats"], wordpiece, 300, seed=0)
    with pytest.raises(ValueError, match="unsupported tokenizer kind WordPiece"):
        V.expand_tokenizer(wordpiece, ["xx"], tmp_path / "out")

    spm = tmp_path / "sentencepiece_like"
    spm.mkdir()
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": b + 1 for b in range(256)}, "▁": 257, "a": 258}
    bf = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    bf.pre_tokenizer = pre_tokenizers.Metaspace()
    bf.save(str(spm / "tokenizer.json"))
    assert V.detect_family(json.loads((spm / "tokenizer.json").read_text(encoding="utf-8"))) == V.SENTENCEPIECE_BPE
    # Supported now (tests/test_vocab_families.py): "▁a" is the merge (▁, a), at the next id.
    target = V.expand_tokenizer(spm, ["▁a"], tmp_path / "out")
    assert target.encode("a", add_special_tokens=False).ids == [259]

    # BPE that is neither byte-level nor byte-fallback could produce characters the model cannot spell.
    plain = tmp_path / "plain_bpe"
    plain.mkdir()
    pb = Tokenizer(models.BPE({"a": 0, "b": 1}, []))
    pb.pre_tokenizer = pre_tokenizers.Whitespace()
    pb.save(str(plain / "tokenizer.json"))
    with pytest.raises(ValueError, match=f"BPE without byte-level pre-tokenizer or byte fallback for {plain}"):
        V.expand_tokenizer(plain, ["ab"], tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


# ---------------------------------------------------------------------------------------------------------------------
# SmolLM2 with real Thai text
# ---------------------------------------------------------------------------------------------------------------------


def test_aux_tokenizer_shares_pre_tokenizer_and_is_deterministic(aux, source, thai, smollm2_tokenizer_dir):
    assert aux.get_vocab_size() == AUX_VOCAB
    assert json.loads(aux.to_str())["pre_tokenizer"] == json.loads(source.to_str())["pre_tokenizer"]
    assert set(pre_tokenizers.ByteLevel.alphabet()) <= set(aux.get_vocab())
    sentence = thai["heldout"][0]
    assert aux.decode(aux.encode(sentence).ids) == sentence
    # Same corpus, different seed: identical merges (the trainer has no randomness).
    small = thai["train"][:800]
    a = V.train_aux_tokenizer(small, smollm2_tokenizer_dir, 1500, seed=1)
    b = V.train_aux_tokenizer(small, smollm2_tokenizer_dir, 1500, seed=2)
    assert a.to_str() == b.to_str()
    with pytest.raises(ValueError, match=r"stopped at (\d+) tokens .* use aux vocab size <= \1"):
        V.train_aux_tokenizer(small[:50], smollm2_tokenizer_dir, 50_000, seed=0)


def test_new_tokens_exactly_k_from_aux_not_source_in_frequency_order(aux, source, ranked, thai):
    new = V.select_new_tokens(aux, source, thai["train"], 100)
    assert len(new) == 100 and len({t for t, _ in new}) == 100
    aux_vocab, source_vocab = aux.get_vocab(), source.get_vocab()
    assert all(t in aux_vocab and t not in source_vocab for t, _ in new)
    # Frequencies recounted independently; order = frequency, ties by aux id.
    counts = Counter(t for line in thai["train"] for t in aux.encode(line, add_special_tokens=False).tokens)
    assert [f for _, f in new] == [counts[t] for t, _ in new]
    assert [(-f, aux_vocab[t]) for t, f in new] == sorted((-f, aux_vocab[t]) for t, f in new)
    # V_new = the top k minus the passed-over candidates, plus members ranked below k (building blocks); most of the
    # top k is kept.
    plan = V.plan_expansion(source, ranked, 100, V.aux_merge_parts(aux))
    assert plan.selected == new
    chosen = {t for t, _ in new}
    assert plan.passed_over == [c for c in ranked[:100] if c[0] not in chosen]
    assert plan.outside_top_k == [c for c in new if c not in ranked[:100]]
    assert len(plan.passed_over) < 50
    # Each appended merge joins tokens that exist by then: source tokens or earlier new ones.
    known = set(source_vocab)
    for left, right in plan.merges:
        assert left in known and right in known and left + right in chosen
        known.add(left + right)
    with pytest.raises(ValueError, match="fewer than k"):
        V.select_new_tokens(aux, source, thai["train"], len(ranked) + 1)


def _without_new_strings(texts: list[str], new: list[tuple[str, int]]) -> list[bool]:
    """For each text, whether its byte-level form contains none of the new token strings (one scan per token)."""
    forms = [V.byte_level_form(t) for t in texts]
    joined = "\n".join(forms)  # "\n" is never a byte-level symbol, so no match spans two texts
    starts = list(itertools.accumulate((len(f) + 1 for f in forms), initial=0))
    hit = [False] * len(texts)
    for token, _ in new:
        pos = joined.find(token)
        while pos >= 0:
            hit[bisect.bisect_right(starts, pos) - 1] = True
            pos = joined.find(token, pos + 1)
    return [not h for h in hit]


def test_text_without_new_strings_is_tokenized_as_before(expanded, source, thai, sinhala):
    k = max(KS)
    new, target = expanded[k]["new"], expanded[k]["target"]
    english = thai["english"] + sinhala["english"]
    texts = english + sinhala["target"]
    keep = _without_new_strings(texts, new)
    clean = [t for t, ok in zip(texts, keep, strict=True) if ok]
    # Most English text contains no new string (the ones that do hold digit strings like " 100" learned from D).
    assert sum(keep[: len(english)]) > 0.8 * len(english)
    before = source.encode_batch(clean, add_special_tokens=False)
    after = target.encode_batch(clean, add_special_tokens=False)
    assert [e.ids for e in before] == [e.ids for e in after]
    # Vocabulary and specials: every source entry keeps its id; new ids are the next k; added tokens unchanged.
    src_vocab, tgt_vocab = source.get_vocab(with_added_tokens=True), target.get_vocab(with_added_tokens=True)
    assert {t: tgt_vocab[t] for t in src_vocab} == src_vocab
    assert sorted(tgt_vocab[t] for t, _ in new) == list(range(len(src_vocab), len(src_vocab) + k))
    assert [tgt_vocab[t] for t, _ in new] == sorted(tgt_vocab[t] for t, _ in new)
    assert source.get_added_tokens_decoder() == target.get_added_tokens_decoder()
    chat = "<|im_start|>user\nPlease help<|im_end|>\n<|im_start|>assistant\n"
    assert target.encode(chat).ids == source.encode(chat).ids and target.encode(chat).ids[0] == 1


def test_decode_encode_roundtrip(expanded, aux, thai, sinhala):
    seen = set("".join(thai["train"]))
    assert not seen & set("".join(JAPANESE)) - set("、。")
    every = thai["train"] + thai["heldout"] + sinhala["target"] + JAPANESE + thai["english"][:500]
    some = thai["heldout"] + sinhala["target"][:300] + JAPANESE
    for k in KS:
        target = expanded[k]["target"]
        texts = every if k == max(KS) else some
        encodings = target.encode_batch(texts, add_special_tokens=False)
        assert target.decode_batch([e.ids for e in encodings]) == texts


def test_thai_gets_shorter_as_k_grows(expanded, source, thai):
    reports = {k: V.expansion_report(source, expanded[k]["target"], expanded[k]["new"], thai["heldout"]) for k in KS}
    n_before = sum(len(source.encode(s, add_special_tokens=False).ids) for s in thai["heldout"])
    assert reports[KS[0]]["tokens_per_sentence_source"] == pytest.approx(n_before / len(thai["heldout"]))
    per_sentence = [reports[k]["tokens_per_sentence_target"] for k in KS]
    assert reports[KS[0]]["tokens_per_sentence_source"] > per_sentence[0] > per_sentence[1] > per_sentence[2]
    shares = [reports[k]["new_token_share"] for k in KS]
    assert 0 < shares[0] < shares[1] < shares[2] < 1
    rep = reports[max(KS)]
    assert [e["piece"] for e in rep["new_tokens"]] == [t for t, _ in expanded[max(KS)]["new"]]
    for entry in rep["new_tokens"]:
        assert entry["text"] == V.piece_bytes(entry["piece"]).decode("utf-8", errors="backslashreplace")
    # Thai characters are three UTF-8 bytes; byte-level BPE learns partial ones, which must stay visible.
    assert any("\\x" in e["text"] for e in rep["new_tokens"])
    assert any(e["text"] and all(0x0E00 <= ord(c) <= 0x0E7F for c in e["text"]) for e in rep["new_tokens"])


def test_saved_tokenizer_reloads_and_every_new_token_is_reachable(expanded, smollm2_tokenizer_dir, thai):
    from transformers import AutoTokenizer

    src_hf = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    k = max(KS)
    folder, target, new = expanded[k]["dir"], expanded[k]["target"], expanded[k]["new"]
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} <= {p.name for p in folder.iterdir()}
    hf = AutoTokenizer.from_pretrained(folder)
    assert len(hf) == len(src_hf) + k
    assert hf.special_tokens_map == src_hf.special_tokens_map and hf.chat_template == src_hf.chat_template
    assert (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id) == (src_hf.bos_token_id, src_hf.eos_token_id, 2)
    sample = thai["heldout"][:200] + thai["english"][:200]
    assert [hf(s, add_special_tokens=False)["input_ids"] for s in sample] == [
        e.ids for e in target.encode_batch(sample, add_special_tokens=False)
    ]
    assert all(hf.decode(hf(s)["input_ids"]) == s for s in sample[:50])
    whole = 0
    for token, _ in new:
        tid = hf.convert_tokens_to_ids(token)
        # The piece string as a pre-token (covers partial UTF-8 pieces) ...
        assert [(t.value, t.id) for t in hf.backend_tokenizer.model.tokenize(token)] == [(token, tid)]
        # ... and, where the piece is whole text that pre-tokenizes as one unit, the text itself.
        try:
            text = V.piece_bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(hf.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)) == 1:
            assert hf(text, add_special_tokens=False)["input_ids"] == [tid]
            whole += 1
    assert whole > k // 2


@pytest.mark.slow  # trains an aux tokenizer and expands through the CLI
def test_command_line(smollm2_tokenizer_dir, thai, tmp_path):
    corpus, heldout = tmp_path / "train.txt", tmp_path / "heldout.txt"
    corpus.write_text("\n".join(thai["train"][:1500]) + "\n", encoding="utf-8")
    heldout.write_text("\n".join(thai["heldout"][:200]) + "\n", encoding="utf-8")
    aux_file, log = tmp_path / "aux" / "tokenizer.json", tmp_path / "log.txt"
    common = ["--source-tokenizer", str(smollm2_tokenizer_dir), "--corpus", str(corpus), "--log", str(log)]
    V.main(["aux", *common, "--vocab-size", "2000", "--seed", "42", "--out", str(aux_file)])
    assert Tokenizer.from_file(str(aux_file)).get_vocab_size() == 2000
    out, report = tmp_path / "tt", tmp_path / "report.json"
    args = ["--aux", str(aux_file), "--heldout", str(heldout), "--k", "30", "--out", str(out), "--report", str(report)]
    V.main(["expand", *common, *args])
    rep = json.loads(report.read_text(encoding="utf-8"))
    assert rep["k"] == 30 and len(rep["new_tokens"]) == 30 and len(rep["merges"]) == 30
    assert rep["aux_vocab_size"] == 2000 and rep["heldout_sentences"] == 200
    assert rep["tokens_per_sentence_target"] < rep["tokens_per_sentence_source"]
    assert [e["id"] for e in rep["new_tokens"]] == list(range(49152, 49182))
    target = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert target.get_vocab_size() == 49182
    assert "30 new tokens" in log.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="lower k"):
        V.main(["expand", *common, *args[:5], "100000", *args[6:]])


@pytest.mark.slow  # aux training and expansion through the command line: 2-6 s of CPU
def test_command_line_skips_invalid_utf8_and_refuses_an_empty_corpus(smollm2_tokenizer_dir, thai, tmp_path):
    """The tokenizer step reads D like every other step: bad lines skipped and counted, empty D refused."""
    corpus, blank, log = tmp_path / "train.txt", tmp_path / "blank.txt", tmp_path / "log.txt"
    good = "\n".join(thai["train"][:300]).encode("utf-8")
    corpus.write_bytes(b"\xff\xfe broken\n" + good + b"\n")
    blank.write_text("  \n\t\n\n", encoding="utf-8")
    aux_file = tmp_path / "aux.json"
    common = ["--source-tokenizer", str(smollm2_tokenizer_dir), "--log", str(log)]
    V.main(["aux", *common, "--corpus", str(corpus), "--vocab-size", "400", "--out", str(aux_file)])
    assert Tokenizer.from_file(str(aux_file)).get_vocab_size() == 400
    assert "not valid UTF-8" in log.read_text(encoding="utf-8")
    args = ["--aux", str(aux_file), "--heldout", str(corpus), "--k", "5", "--out", str(tmp_path / "tt")]
    with pytest.raises(ValueError, match=rf"{blank}: the corpus D is empty"):
        V.main(["expand", *common, "--corpus", str(blank), *args, "--report", str(tmp_path / "r.json")])
    assert not (tmp_path / "tt").exists()
    with pytest.raises(ValueError, match=rf"{blank}: the corpus D is empty"):
        V.main(["aux", *common, "--corpus", str(blank), "--vocab-size", "400", "--out", str(tmp_path / "a2.json")])
    V.main(["expand", *common, "--corpus", str(corpus), *args, "--report", str(tmp_path / "r.json")])
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["corpus"]["skipped_invalid_utf8"] == 1 and report["corpus"]["lines_kept"] == 300
