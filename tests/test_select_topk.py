"""V_new by the paper's plain top-k (``tokenizer.selection: topk``) next to ours (``reachable``: building blocks
added, unreachable candidates skipped), on hand cases of both tokenizer families: byte-level BPE and SentencePiece
byte-fallback BPE (workflow_scripts/vocab/select.py, pipeline.py). Each expected number is worked out by hand in the
comments."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from tests.conftest import save_tokenizer, sentencepiece_source
from workflow_scripts.pieces import bytes_to_unicode
from workflow_scripts.vocab.pipeline import expand
from workflow_scripts.vocab.select import aux_merge_parts, plan_expansion, plan_topk

# ----------------------------------------------------------------------------------------------------------------------
# Byte-level BPE. V_s: the 256 byte symbols and "ab" (merge a b). ASCII letters are their own byte symbols.
# Candidates, most frequent first; k = 4, so the plain top-k is abcd, cd, bcde, de. The aux merge tree builds
# cd = c+d, ab+cd = abcd, bcd = b+cd, bcde = bcd+e, de = d+e; bcd is only an intermediate (frequency 0).
BL_RANKED = [("abcd", 50), ("cd", 40), ("bcde", 35), ("de", 30), ("bcd", 0)]
BL_AUX_MERGES = [("a", "b"), ("c", "d"), ("ab", "cd"), ("b", "cd"), ("bcd", "e"), ("d", "e")]
K = 4


def _byte_level_source(folder):
    symbols = list(bytes_to_unicode().values())
    vocab = {s: i for i, s in enumerate(symbols)}
    vocab["ab"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("a", "b")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return save_tokenizer(tok, folder)


def _aux(vocab_tokens, merges, **bpe):
    vocab = {t: i for i, t in enumerate(dict.fromkeys([*vocab_tokens, *(a + b for a, b in merges)]))}
    return Tokenizer(models.BPE(vocab=vocab, merges=merges, **bpe))


@pytest.fixture(scope="module")
def byte_level(tmp_path_factory):
    folder = _byte_level_source(tmp_path_factory.mktemp("bl") / "source")
    aux = _aux(list(bytes_to_unicode().values()), BL_AUX_MERGES)
    return folder, aux


def test_byte_level_topk_by_hand(byte_level):
    folder, _ = byte_level
    plan = plan_topk(Tokenizer.from_file(str(folder / "tokenizer.json")), BL_RANKED, K)
    # pass 1: abcd splits as ab|c|d (no merge); cd = c|d gets (c, d), which turns abcd into ab|cd and bcde into
    # b|cd|e; bcde: three pieces; de = d|e gets (d, e). Pass 2: abcd = ab|cd gets (ab, cd). Pass 3 adds nothing:
    # bcde stays b|cd|e, its block bcd is not in V_s or V_new.
    assert [t for t, _ in plan.selected] == ["abcd", "cd", "bcde", "de"]
    assert plan.merges == [("c", "d"), ("d", "e"), ("ab", "cd")]
    assert plan.unreachable == [("bcde", 35)]
    assert plan.top_k_in == 4 and plan.passed_over == [] and plan.outside_top_k == []


def test_byte_level_reachable_by_hand(byte_level):
    folder, aux = byte_level
    plan = plan_expansion(Tokenizer.from_file(str(folder / "tokenizer.json")), BL_RANKED, K, aux_merge_parts(aux))
    # abcd needs its block cd (2 tokens: cd, abcd); bcde needs bcd (2 more): k = 4 is full before de
    assert [t for t, _ in plan.selected] == ["abcd", "cd", "bcde", "bcd"]
    assert plan.passed_over == [("de", 30)] and plan.outside_top_k == [("bcd", 0)]
    assert plan.top_k_in == 3 and plan.unreachable == []


def test_byte_level_topk_tokenizer_and_report(tmp_path, byte_level):
    folder, aux = byte_level
    heldout = ["abcd bcde", "de cd"]
    out = tmp_path / "target"
    result = expand(folder, aux, heldout, K, out, heldout, ranked=BL_RANKED, selection="topk")
    report = result.report
    assert report["selection"] == "topk" and report["top_k_in_v_new"] == 4
    assert [e["piece"] for e in report["unreachable"]] == ["bcde"]
    target = Tokenizer.from_file(str(out / "tokenizer.json"))
    start = Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size()
    # the unreachable member has its id (an embedding row) but T_t never produces it
    assert target.token_to_id("bcde") == start + 2
    assert [t.value for t in target.model.tokenize("bcde")] == ["b", "cd", "e"]
    assert [t.value for t in target.model.tokenize("abcd")] == ["abcd"]
    assert all(target.decode(target.encode(x).ids) == x for x in heldout)
    assert report["new_tokens_used_in_heldout"] == 3  # abcd, cd, de; never bcde

    ours = expand(folder, aux, heldout, K, tmp_path / "ours", heldout, ranked=BL_RANKED).report
    assert ours["selection"] == "reachable" and ours["top_k_in_v_new"] == 3 and ours["unreachable"] == []


# ----------------------------------------------------------------------------------------------------------------------
# SentencePiece byte-fallback BPE (conftest.sentencepiece_source): V_s holds ▁ ก า ม and ▁ก (merge ▁ ก), not ข or ค
# (they are spelled with byte pieces). Candidates, k = 5: the plain top-k is ▁กา มา ขา ข คม; ค is only the aux block
# of คม.
SP_RANKED = [("▁กา", 50), ("มา", 40), ("ขา", 35), ("ข", 30), ("คม", 25), ("ค", 0)]
SP_AUX_MERGES = [("▁", "ก"), ("▁ก", "า"), ("ม", "า"), ("ข", "า"), ("ค", "ม")]
SP_K = 5


@pytest.fixture(scope="module")
def sentencepiece(tmp_path_factory):
    folder = sentencepiece_source(tmp_path_factory.mktemp("sp") / "source")
    base = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), "▁", "ก", "า", "ม", "ข", "ค"]
    aux = _aux(base, SP_AUX_MERGES, unk_token="<unk>", byte_fallback=True)
    return folder, aux


def test_sentencepiece_topk_by_hand(sentencepiece):
    folder, _ = sentencepiece
    plan = plan_topk(Tokenizer.from_file(str(folder / "tokenizer.json")), SP_RANKED, SP_K)
    # pass 1: ▁กา = ▁ก|า gets (▁ก, า); มา = ม|า gets (ม, า); ขา is bytes of ข + า (no merge yet); ข is a character
    # V_s lacks: a vocabulary entry, no merge, and ขา becomes ข|า; คม: bytes of ค + ม. Pass 2: ขา gets (ข, า).
    # คม stays bytes + ม: ค is in neither V_s nor the top 5.
    assert [t for t, _ in plan.selected] == ["▁กา", "มา", "ขา", "ข", "คม"]
    assert plan.merges == [("▁ก", "า"), ("ม", "า"), ("ข", "า")]
    assert plan.unreachable == [("คม", 25)] and plan.top_k_in == 5


def test_sentencepiece_reachable_by_hand(sentencepiece):
    folder, aux = sentencepiece
    plan = plan_expansion(Tokenizer.from_file(str(folder / "tokenizer.json")), SP_RANKED, SP_K, aux_merge_parts(aux))
    # ▁กา, มา (2); ขา needs ข (4); คม needs ค and itself, 2 > the 1 left: skipped; ค fills the last place
    assert [t for t, _ in plan.selected] == ["▁กา", "มา", "ขา", "ข", "ค"]
    assert plan.passed_over == [("คม", 25)] and plan.outside_top_k == [("ค", 0)] and plan.top_k_in == 4


@pytest.mark.parametrize("new_merges", ["last", "first"])
def test_sentencepiece_topk_tokenizer_and_report(tmp_path, sentencepiece, new_merges):
    folder, aux = sentencepiece
    heldout = ["กา มา", "ขา คม"]
    out = tmp_path / "target"
    result = expand(folder, aux, heldout, SP_K, out, heldout, ranked=SP_RANKED, new_merges=new_merges, selection="topk")
    report = result.report
    assert report["top_k_in_v_new"] == 5 and [e["piece"] for e in report["unreachable"]] == ["คม"]
    assert report["replaced"] == []  # the plain choice is never refilled, under "first" either
    target = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert target.token_to_id("คม") == 264 + 4  # source ids 0..263; new ids in rank order from 264: คม is the fifth
    assert "คม" not in [t.value for t in target.model.tokenize("▁คม")]
    assert [t.value for t in target.model.tokenize("ขา")] == ["ขา"]
    assert all(target.decode(target.encode(x).ids) == x for x in heldout)
    saved = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["merges"]
    assert sum(1 for m in saved if "".join(m if isinstance(m, list) else m.split(" ")) == "คม") == 0


def test_unknown_selection_is_refused(sentencepiece, tmp_path):
    folder, aux = sentencepiece
    with pytest.raises(ValueError, match=r"tokenizer\.selection must be one of"):
        expand(folder, aux, ["กา"], 1, None, ranked=SP_RANKED, selection="plain")
