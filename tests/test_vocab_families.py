"""Vocabulary expansion on the real tokenizers of the paper's other families (workflow_scripts/vocab/): Llama-3's
tiktoken BPE (byte-level route) and Mistral-7B v0.1's SentencePiece byte-fallback BPE (the Llama-2 kind), converted by
workflow_scripts/tokenizer_assets.py, with real Thai and Sinhala text (LibreOffice UI translations). SmolLM2's
byte-level BPE is covered by tests/test_vocab.py. The five properties of an expansion (``test_1`` to ``test_5``) are
pinned for each family."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from tests.conftest import l10n_pairs, require_tokenizer_package
from workflow_scripts import tokenizer_assets as A
from workflow_scripts import vocab as V

REPO = Path(__file__).resolve().parents[1]
# Llama-3 (128K vocabulary: about 20 s to convert and expand) runs in the slow set; Mistral (32K) in the fast one.
FAMILY_PARAMS = (pytest.param("llama3", marks=pytest.mark.slow), "mistral")
AUX_VOCAB = 6000
KS = (50, 100, 500)
JAPANESE = [
    "東京都の天気は晴れです。",
    "新しい語彙を追加しても、文章は正しく復元されるべきだ。",
    "ひらがなとカタカナと漢字",
]
EXPECTED = {
    # name: (family, first new id = every source id + 1, BOS id, source vocabulary with specials)
    "llama3": (V.BYTE_LEVEL_BPE, 128256, 128000, 128256),
    "mistral": (V.SENTENCEPIECE_BPE, 32000, 1, 32000),
}


@pytest.fixture(scope="session")
def texts() -> dict[str, list[str]]:
    th, si = l10n_pairs("th"), l10n_pairs("si")
    target = [t for _, t in th]
    return {
        "train": [t for i, t in enumerate(target) if i % 10],
        "heldout": [t for i, t in enumerate(target) if i % 10 == 0],
        "sinhala": [t for _, t in si],
        "english": [e for e, _ in th] + [e for e, _ in si],
    }


class Lazy(dict):
    """A mapping that builds each entry on first use, so that the fast run never pays for Llama-3's 128K vocabulary."""

    def __init__(self, build):
        super().__init__()
        self.build = build

    def __missing__(self, key):
        self[key] = value = self.build(key)
        return value


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> dict[str, Path]:
    """The real Llama-3 and Mistral tokenizers as HF folders (each converted once per session, when first used)."""

    def convert(name: str) -> Path:
        require_tokenizer_package(name)
        return A.write_folder(name, tmp_path_factory.mktemp(name) / "tokenizer")

    return Lazy(convert)


@pytest.fixture(scope="session")
def expansions(family_dirs, texts, tmp_path_factory) -> dict[str, dict]:
    """Thai aux tokenizer and expansions for each k, per family (built when a family is first used)."""
    return Lazy(lambda name: _expansions(name, family_dirs[name], texts, tmp_path_factory))


def _expansions(name: str, folder: Path, texts: dict, tmp_path_factory) -> dict:
    """One family's Thai aux tokenizer, its ranked candidates and T_t for each k in KS."""
    source = Tokenizer.from_file(str(folder / "tokenizer.json"))
    aux = V.train_aux_tokenizer(texts["train"], folder, AUX_VOCAB, seed=42)
    ranked = V.rank_candidates(aux, source, texts["train"])
    per_k = {}
    for k in KS:
        # The full route (its checks and the saved folder) at the largest k; the same tokenizer.json kept in
        # memory for the others (loading a 128K vocabulary from disk is slow).
        tdir = tmp_path_factory.mktemp(f"{name}_k{k}") / "tokenizer" if k == max(KS) else None
        e = V.expand(folder, aux, texts["train"], k, tdir, ranked=ranked)
        per_k[k] = {"plan": e.plan, "target": e.target, "dir": tdir}
    return {"dir": folder, "source": source, "aux": aux, "ranked": ranked, "k": per_k}


# ---------------------------------------------------------------------------------------------------------------------
# The conversions reproduce the native tokenizers
# ---------------------------------------------------------------------------------------------------------------------


def test_mistral_conversion_matches_sentencepiece(family_dirs, texts):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(A.locate_asset("mistral")))
    hf = Tokenizer.from_file(str(family_dirs["mistral"] / "tokenizer.json"))
    assert hf.get_vocab_size() == sp.get_piece_size() == 32000
    sample = texts["english"][:1500] + texts["train"][:1500] + texts["sinhala"][:500] + JAPANESE
    sample += ["  two  spaces ", "tab\tand\nnewline", "12345 digits"]
    got = [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)]
    assert got == sp.encode(sample)
    assert hf.encode("hi").ids[0] == sp.bos_id() == 1
    assert V.detect_family(json.loads(hf.to_str())) == V.SENTENCEPIECE_BPE


def test_asset_command_line(tmp_path):
    require_tokenizer_package("mistral")
    out = tmp_path / "mistral"
    A.main(["--name", "mistral", "--out", str(out), "--log", str(tmp_path / "log.txt")])
    assert {p.name for p in out.iterdir()} == {"tokenizer.json", "tokenizer_config.json", "tokenizer.model"}
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["bos_token"], config["eos_token"], config["unk_token"]) == ("<s>", "</s>", "<unk>")
    assert "pad_token" not in config  # Mistral v0.1 has no pad piece
    with pytest.raises(SystemExit):
        A.main(["--name", "gemma", "--out", str(tmp_path / "g")])


def _tiktoken_reference(ranks: dict[bytes, int], text: str) -> list[int]:
    """tiktoken's algorithm, independently: regex pre-tokens, then merge the lowest-ranked adjacent pair."""
    import regex

    out = []
    for word in regex.findall(A.LLAMA3_PATTERN, text):
        parts = [bytes([b]) for b in word.encode("utf-8")]
        while len(parts) > 1:
            ranked = [(ranks.get(parts[i] + parts[i + 1]), i) for i in range(len(parts) - 1)]
            ranked = [r for r in ranked if r[0] is not None]
            if not ranked:
                break
            _, i = min(ranked)
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        out.extend(ranks[p] for p in parts)
    return out


@pytest.mark.slow
def test_llama3_conversion_matches_tiktoken(family_dirs, texts):
    ranks = A.load_tiktoken_ranks(A.locate_asset("llama3"))
    assert len(ranks) == 128000
    hf = Tokenizer.from_file(str(family_dirs["llama3"] / "tokenizer.json"))
    sample = texts["english"][:300] + texts["train"][:300] + texts["sinhala"][:100] + JAPANESE + ["1234567 it's"]
    assert [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)] == [
        _tiktoken_reference(ranks, s) for s in sample
    ]
    specials = A.llama3_special_tokens()
    assert len(specials) == 256 and specials[-1] == "<|reserved_special_token_245|>"  # 12 named + reserved 2..245
    assert [hf.token_to_id(t) for t in ("<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>")] == [
        128000,
        128001,
        128009,
    ]
    assert hf.encode("hi").ids == [128000, 6151]
    assert V.detect_family(json.loads(hf.to_str())) == V.BYTE_LEVEL_BPE


# ---------------------------------------------------------------------------------------------------------------------
# SentencePiece route, worked out by hand
# ---------------------------------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_sp(tmp_path) -> Path:
    """A SentencePiece-style source: <unk> = 0, byte pieces <0x00>..<0xFF> = 1..256, ▁ = 257, a = 258, no merges."""
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": b + 1 for b in range(256)}, "▁": 257, "a": 258}
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": 0,
                "content": "<unk>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        ],
        "normalizer": A.sentencepiece_normalizer(add_dummy_prefix=True),
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": A.sentencepiece_decoder(add_dummy_prefix=True),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }
    folder = tmp_path / "sp"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    return folder


def test_sentencepiece_plan_by_hand(tiny_sp, tmp_path):
    """▁ab needs ab, which needs the character b (spelled <0x62> so far): b enters with no merge, then (a, b),
    (▁, ab)."""
    source = Tokenizer.from_file(str(tiny_sp / "tokenizer.json"))
    assert [t.value for t in source.model.tokenize("▁ab")] == ["▁", "a", "<0x62>"]
    ranked = [("▁ab", 5), ("ab", 2), ("b", 0)]
    parts = {"▁ab": ("▁", "ab"), "ab": ("a", "b")}
    plan = V.plan_expansion(source, ranked, 3, parts)
    assert plan.selected == ranked and plan.merges == [("a", "b"), ("▁", "ab")] and plan.passed_over == []
    # k=1: ▁ab needs three tokens and ab two, so only the character fits.
    plan1 = V.plan_expansion(source, ranked, 1, parts)
    assert plan1.selected == [("b", 0)] and plan1.merges == [] and plan1.passed_over == [("▁ab", 5)]
    target = V.expand_tokenizer(tiny_sp, plan.selected, tmp_path / "tt", plan.merges)
    tj = json.loads((tmp_path / "tt" / "tokenizer.json").read_text(encoding="utf-8"))
    assert {t: tj["model"]["vocab"][t] for t, _ in ranked} == {"▁ab": 259, "ab": 260, "b": 261}
    assert tj["model"]["merges"] == [["a", "b"], ["▁", "ab"]]
    # Normalizer: "ab ba" -> "▁ab▁ba"; b is now a piece, (▁, b) is no merge, so ▁ba = ▁ + b + a.
    assert target.encode("ab ba").ids == [259, 257, 261, 258]
    assert source.encode("ab ba").ids == [257, 258, 99, 257, 99, 258]
    assert target.decode(target.encode("ab ba").ids) == "ab ba"
    # Text without any new string (no b): as before, including byte fallback for other characters.
    for text in ["a a", "aca", "ก a"]:
        assert target.encode(text).ids == source.encode(text).ids
    assert target.decode(target.encode("ก ab").ids) == "ก ab"
    with pytest.raises(ValueError, match="none for single characters"):
        V.expand_tokenizer(tiny_sp, plan.selected, tmp_path / "tt2", [*plan.merges, ("b", "a")])


# ---------------------------------------------------------------------------------------------------------------------
# Aux tokenizers
# ---------------------------------------------------------------------------------------------------------------------


def test_sentencepiece_options_mirror_the_source(family_dirs, tmp_path):
    options, where = V.sentencepiece_options(family_dirs["mistral"])
    assert where.endswith("tokenizer.model")
    # Mistral v0.1's own trainer/normalizer spec (read in the model file): no NFKC, digits split, dummy prefix.
    assert options["normalization_rule_name"] == "identity" and options["split_digits"] is True
    assert options["add_dummy_prefix"] is True and options["remove_extra_whitespaces"] is False
    assert (
        options["byte_fallback"] is True
        and options["model_type"] == "bpe"
        and options["max_sentencepiece_length"] == 16
    )
    # Without the .model, the same follow from tokenizer.json (Prepend ▁, no NFKC, no piece with two digits in a row).
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(family_dirs["mistral"] / "tokenizer.json", bare / "tokenizer.json")
    inferred, where = V.sentencepiece_options(bare)
    assert where.endswith("(inferred)")
    for key in ("normalization_rule_name", "split_digits", "add_dummy_prefix", "remove_extra_whitespaces"):
        assert inferred[key] == options[key], key


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_aux_tokenizer_route_and_size(name, expansions, texts):
    e = expansions[name]
    aux, source = e["aux"], e["source"]
    family = EXPECTED[name][0]
    assert aux.get_vocab_size(with_added_tokens=True) == AUX_VOCAB
    src_json, aux_json = json.loads(source.to_str()), json.loads(aux.to_str())
    assert V.detect_family(aux_json) == family
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        assert aux_json[key] == src_json[key], key
    if family == V.SENTENCEPIECE_BPE:
        vocab = aux.get_vocab()
        assert all(f"<0x{b:02X}>" in vocab for b in range(256))
        # split_digits mirrored: no aux piece holds two digits in a row, though the UI text is full of numbers.
        assert not [p for p in vocab if re.search(r"\d\d", p) and not re.fullmatch(r"<0x..>", p)]
        assert any(re.search(r"\d\d", s) for s in texts["train"])
    else:
        assert aux_json["model"]["ignore_merges"] is True  # Llama-3's
    sentence = texts["heldout"][0]
    assert aux.decode(aux.encode(sentence, add_special_tokens=False).ids) == sentence


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_corpus_too_small_suggests_a_size(name, family_dirs, texts):
    small = texts["train"][:40]
    with pytest.raises(ValueError, match=r"corpus too small .* use aux vocab size <= (\d+)") as err:
        V.train_aux_tokenizer(small, family_dirs[name], 50_000, seed=0)
    size = int(re.search(r"<= (\d+)", str(err.value)).group(1))
    assert 256 < size < 50_000
    assert V.train_aux_tokenizer(small, family_dirs[name], size, seed=0).get_vocab_size() == size


def test_unsupported_kinds_name_the_model(tmp_path, texts):
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts["english"][:2000]),
        model_writer=model,
        model_type="unigram",
        vocab_size=300,
        minloglevel=2,
    )
    unigram = tmp_path / "unigram.model"
    unigram.write_bytes(model.getvalue())
    with pytest.raises(ValueError, match=f"unsupported tokenizer kind SentencePiece unigram for {unigram}"):
        A.sentencepiece_to_tokenizer_json(unigram, unigram)
    # A Hugging Face Unigram tokenizer.json (the T5/Gemma-3 kind).
    folder = tmp_path / "hf_unigram"
    folder.mkdir()
    uni = Tokenizer(models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0)], unk_id=0))
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    uni.save(str(folder / "tokenizer.json"))
    with pytest.raises(ValueError, match=f"unsupported tokenizer kind Unigram for {folder}"):
        V.train_aux_tokenizer(texts["train"][:100], folder, 500)
    # A byte-fallback BPE folder whose tokenizer.model is a Unigram model: refused when mirroring its options.
    bpe = tmp_path / "bpe_with_unigram_model"
    bpe.mkdir()
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": b + 1 for b in range(256)}, "▁": 257}
    bf = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    bf.save(str(bpe / "tokenizer.json"))
    shutil.copy(unigram, bpe / "tokenizer.model")
    with pytest.raises(ValueError, match=f"SentencePiece unigram for {bpe}"):
        V.train_aux_tokenizer(texts["train"][:100], bpe, 500)


# ---------------------------------------------------------------------------------------------------------------------
# The five properties, per family
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_1_exactly_k_from_aux_not_source_in_frequency_order(name, expansions, texts):
    e = expansions[name]
    aux, source, ranked = e["aux"], e["source"], e["ranked"]
    aux_vocab, source_vocab = aux.get_vocab(), source.get_vocab(with_added_tokens=True)
    freq = dict(ranked)
    for k in KS:
        plan = e["k"][k]["plan"]
        new = plan.selected
        assert len(new) == k and len({t for t, _ in new}) == k
        assert all(t in aux_vocab and t not in source_vocab for t, _ in new)
        assert [f for t, f in new] == [freq[t] for t, _ in new]
        assert [(-f, aux_vocab[t]) for t, f in new] == sorted((-f, aux_vocab[t]) for t, f in new)
        chosen = {t for t, _ in new}
        assert plan.passed_over == [c for c in ranked[:k] if c[0] not in chosen]
    # Frequencies are counts of use when D is tokenized by the aux tokenizer (recounted for the top 20).
    top = [t for t, _ in ranked[:20]]
    counts = dict.fromkeys(top, 0)
    for enc in aux.encode_batch(texts["train"], add_special_tokens=False):
        for t in enc.tokens:
            if t in counts:
                counts[t] += 1
    assert [freq[t] for t in top] == [counts[t] for t in top]
    with pytest.raises(ValueError, match="fewer than k"):
        V.select_new_tokens(aux, source, texts["train"][:200], len(ranked) + 1)


def _clean(tok: Tokenizer, texts: list[str], new: list[str]) -> list[bool]:
    """For each text, whether none of its pre-tokens (as the BPE model sees them) contains a new token string."""
    sep = "\uffff"  # in neither alphabet, so no match spans two pre-tokens
    pieces = [sep.join(V.pre_tokens(tok, t)) for t in texts]
    starts, pos = [], 0
    for p in pieces:
        starts.append(pos)
        pos += len(p) + 1
    joined = sep.join(pieces)
    hit = [False] * len(texts)
    import bisect

    for token in new:
        i = joined.find(token)
        while i >= 0:
            hit[bisect.bisect_right(starts, i) - 1] = True
            i = joined.find(token, i + 1)
    return [not h for h in hit]


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_2_text_without_new_strings_unchanged_and_specials_kept(name, expansions, texts):
    e = expansions[name]
    source, first_new, bos, n_source = e["source"], *EXPECTED[name][1:]
    k = max(KS)
    target, new = e["k"][k]["target"], [t for t, _ in e["k"][k]["plan"].selected]
    english = texts["english"]
    pool = english + texts["sinhala"] + texts["heldout"]
    keep = _clean(source, pool, new)
    clean = [t for t, ok in zip(pool, keep, strict=True) if ok]
    assert sum(keep[: len(english)]) > 0.8 * len(english) > 5000
    # A Thai expansion leaves almost all Sinhala alone (Llama-3 learns Latin words of the Thai UI text, " OLE").
    sinhala_kept = keep[len(english) : len(english) + len(texts["sinhala"])]
    assert sum(sinhala_kept) > 0.99 * len(sinhala_kept)
    assert [x.ids for x in target.encode_batch(clean)] == [x.ids for x in source.encode_batch(clean)]
    # Every source entry and special keeps its id; new ids are the next k after every source id.
    src_vocab, tgt_vocab = source.get_vocab(with_added_tokens=True), target.get_vocab(with_added_tokens=True)
    assert len(src_vocab) == n_source and {t: tgt_vocab[t] for t in src_vocab} == src_vocab
    assert sorted(tgt_vocab[t] for t in new) == list(range(first_new, first_new + k))
    assert source.get_added_tokens_decoder() == target.get_added_tokens_decoder()
    assert target.encode("x").ids[0] == bos
    specials = [t.content for t in source.get_added_tokens_decoder().values()]
    text = specials[-1] + " hello " + specials[0]
    assert target.encode(text).ids == source.encode(text).ids
    assert [target.id_to_token(source.token_to_id(s)) for s in specials] == specials


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_3_roundtrip_including_unseen_characters(name, expansions, texts):
    e = expansions[name]
    seen = set("".join(texts["train"]))
    unseen = set("".join(JAPANESE + texts["sinhala"])) - seen
    assert len(unseen) > 40
    every = texts["train"] + texts["heldout"] + texts["sinhala"] + JAPANESE + texts["english"][:500]
    for k in KS:
        target = e["k"][k]["target"]
        sample = every if k == max(KS) else texts["heldout"] + texts["sinhala"][:300] + JAPANESE
        ids = [x.ids for x in target.encode_batch(sample, add_special_tokens=False)]
        assert target.decode_batch(ids) == sample


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_4_thai_shorter_monotonically_in_k(name, expansions, texts):
    e = expansions[name]
    reports = {
        k: V.expansion_report(e["source"], e["k"][k]["target"], e["k"][k]["plan"].selected, texts["heldout"])
        for k in KS
    }
    before = reports[KS[0]]["tokens_per_sentence_source"]
    after = [reports[k]["tokens_per_sentence_target"] for k in KS]
    assert before > after[0] > after[1] > after[2]
    shares = [reports[k]["new_token_share"] for k in KS]
    assert 0 < shares[0] < shares[1] < shares[2] < 1
    rep = reports[max(KS)]
    family = EXPECTED[name][0]
    texts_of_new = [x["text"] for x in rep["new_tokens"]]
    if family == V.SENTENCEPIECE_BPE:
        assert texts_of_new == [p.replace("▁", " ") for p, _ in e["k"][max(KS)]["plan"].selected]
        assert any(t.startswith(" ") for t in texts_of_new)
    else:
        assert texts_of_new == [V.piece_text(p) for p, _ in e["k"][max(KS)]["plan"].selected]


@pytest.mark.parametrize("name", FAMILY_PARAMS)
def test_5_reload_same_ids_and_model_after_resize(name, expansions, texts):
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    e = expansions[name]
    k = max(KS)
    folder, target = e["k"][k]["dir"], e["k"][k]["target"]
    hf = AutoTokenizer.from_pretrained(folder)
    n_source, bos = EXPECTED[name][3], EXPECTED[name][2]
    assert len(hf) == n_source + k
    eos = e["source"].token_to_id(json.loads((e["dir"] / "tokenizer_config.json").read_text())["eos_token"])
    assert (hf.bos_token_id, hf.eos_token_id) == (bos, eos)
    sample = texts["heldout"][:200] + texts["english"][:100] + texts["sinhala"][:50]
    assert [hf(s)["input_ids"] for s in sample] == [x.ids for x in target.encode_batch(sample)]
    assert all(hf.decode(hf(s)["input_ids"], skip_special_tokens=True) == s for s in sample)
    # A tiny random Llama sized to the source vocabulary, resized to V_t, runs on text that uses the new ids.
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=n_source,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    model.resize_token_embeddings(len(hf), mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight[n_source:] = 0.0
    ids = hf(texts["heldout"][1], return_tensors="pt")["input_ids"]
    assert int(ids.max()) >= n_source
    with torch.no_grad():
        logits = model(ids).logits
        generated = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert logits.shape == (1, ids.shape[1], len(hf)) and torch.isfinite(logits).all()
    assert generated.shape[1] == ids.shape[1] + 3 and int(generated.max()) < len(hf)
    assert isinstance(hf.decode(generated[0]), str)


@pytest.mark.slow  # aux training and expansion through the command line: 2-6 s of CPU
def test_command_line_sentencepiece_route(family_dirs, texts, tmp_path):
    """The rule's two commands on Mistral: aux by SentencePiece (chosen from the source, no flag), then expansion."""
    corpus, heldout = tmp_path / "train.txt", tmp_path / "heldout.txt"
    corpus.write_text("\n".join(texts["train"][:1500]) + "\n", encoding="utf-8")
    heldout.write_text("\n".join(texts["heldout"][:200]) + "\n", encoding="utf-8")
    aux_file, log = tmp_path / "aux" / "tokenizer.json", tmp_path / "log.txt"
    common = ["--source-tokenizer", str(family_dirs["mistral"]), "--corpus", str(corpus), "--log", str(log)]
    V.main(["aux", *common, "--vocab-size", "1500", "--seed", "42", "--threads", "2", "--out", str(aux_file)])
    aux = Tokenizer.from_file(str(aux_file))
    assert aux.get_vocab_size() == 1500 and aux.model.byte_fallback
    out, report = tmp_path / "tt", tmp_path / "report.json"
    args = ["--aux", str(aux_file), "--heldout", str(heldout), "--k", "40", "--out", str(out), "--report", str(report)]
    V.main(["expand", *common, *args])
    rep = json.loads(report.read_text(encoding="utf-8"))
    assert rep["k"] == 40 and [e["id"] for e in rep["new_tokens"]] == list(range(32000, 32040))
    assert all(e["text"] == e["piece"].replace("▁", " ") for e in rep["new_tokens"])
    # Characters that need no merge plus one merge per longer token.
    assert len(rep["merges"]) == sum(len(e["piece"]) > 1 for e in rep["new_tokens"])
    assert rep["tokens_per_sentence_target"] < rep["tokens_per_sentence_source"]
    assert not (out / "tokenizer.model").exists()  # the source's SentencePiece model would be stale


@pytest.mark.parametrize("name", [*FAMILY_PARAMS, "smollm2"])
def test_components_read_alone_are_the_tokenizer_json_entries(name, family_dirs, smollm2_tokenizer_dir):
    """``is_byte_level`` reads the normalizer and pre-tokenizer off their objects, and ``initialize`` the model type
    off the model's class: each must be what the whole tokenizer.json says, from a backend and from a fast
    transformers tokenizer."""
    from transformers import AutoTokenizer

    from workflow_scripts.pieces import component_json, is_byte_level, model_type

    folder = smollm2_tokenizer_dir if name == "smollm2" else family_dirs[name]
    backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    whole = json.loads(backend.to_str())
    for tok in (backend, AutoTokenizer.from_pretrained(folder), whole, folder):
        for part in ("normalizer", "pre_tokenizer"):
            assert component_json(tok, part) == whole[part], (type(tok), part)
        assert model_type(tok) == whole["model"]["type"] == "BPE"
        assert is_byte_level(tok) == (name != "mistral")  # Llama-3 and SmolLM2: ByteLevel; Mistral: byte fallback
