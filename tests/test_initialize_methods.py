"""Merge, Align, FOCUS and EEVE (workflow_scripts/initialize/methods/): expected rows are built from the definitions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.conftest import (
    SMOL_MERGES,
    byte_level_bos_source,
    expand_tokenizer,
    hand_rows,
    l10n_pairs,
    load,
    rows,
    save_tokenizer,
    sentencepiece_source,
    thai_expansion_merges,
    tiny_model,
)
from workflow_scripts.initialize import (
    align_counts,
    bpe_merge_ranks,
    initialize,
    initialize_model,
    main,
    merge_tree,
    sparsemax,
)

REPO = Path(__file__).resolve().parents[1]
try:
    import fasttext  # noqa: F401  (PyPI fasttext-wheel)

    HAS_FASTTEXT = True
except ImportError:
    HAS_FASTTEXT = False
needs_fasttext = pytest.mark.skipif(not HAS_FASTTEXT, reason="fasttext-wheel is not installed")


def mean(matrix: torch.Tensor, ids: list[int]) -> torch.Tensor:
    return torch.stack([matrix[i].double() for i in ids]).mean(0)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a.double(), b.double(), atol=1e-5)


# --------------------------------------------------------------------------------------------------------------------
# Byte-level BPE with a BOS: bytes at ids 0..255, "à¸" (E0 B8) 256, BOS 257 added before every sentence.
# New: 258 "à¸ģ" = ก (E0 B8 81); 259 "à¸ģà¸" = ก + E0 B8 (partial UTF-8); 260 "ģà¸" = 81 E0 B8 (partial, never produced
# in context: the merge to 258 ranks before it).
# --------------------------------------------------------------------------------------------------------------------

BOS_MERGES = [("à¸", "ģ"), ("à¸ģ", "à¸"), ("ģ", "à¸")]


@pytest.fixture(scope="module")
def bos_case(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("bos_case")
    src_tok = byte_level_bos_source(root / "src_tok")
    tgt_tok = expand_tokenizer(src_tok, root / "tgt_tok", BOS_MERGES)
    emb, head = hand_rows(258, 6, 3, 29), hand_rows(258, 6, 5, 31) - 7
    with torch.no_grad():
        emb[257] = 100.0  # a BOS row far from everything: any leak into a new row shows
    src = tiny_model(src_tok, root / "src_model", emb, head)
    return {"src": src, "tgt_tok": tgt_tok, "emb": emb, "head": head}


def test_bos_case_tokenizes_as_designed(bos_case):
    from transformers import AutoTokenizer

    src = AutoTokenizer.from_pretrained(bos_case["src"])
    tgt = AutoTokenizer.from_pretrained(bos_case["tgt_tok"])
    assert src("กข")["input_ids"] == [257, 256, 129, 256, 130]  # BOS | à¸ ģ à¸ Ĥ
    assert tgt("กข")["input_ids"] == [257, 259, 130]  # BOS | à¸ģà¸ | Ĥ
    assert tgt("ก")["input_ids"] == [257, 258]
    # Character offsets of the partial token cover both characters it touches: they overlap Ĥ's (1, 2), and BOS is
    # zero-width at (0, 0), inside every sentence-initial span. That is why Align works on byte spans.
    enc = tgt.backend_tokenizer.encode("กข")
    assert enc.offsets == [(0, 0), (0, 2), (1, 2)]


def test_align_excludes_bos_counts_every_occurrence_and_uses_byte_spans(bos_case, tmp_path):
    from transformers import AutoTokenizer

    src = AutoTokenizer.from_pretrained(bos_case["src"])
    tgt = AutoTokenizer.from_pretrained(bos_case["tgt_tok"])
    corpus = ["กข", "ก", "ก ก"]  # ก: 3 occurrences, two in one sentence; กข: once; 260 never
    counts, stats = align_counts(src, tgt, corpus, [258, 259, 260])
    assert counts == {258: {(256, 129): 3}, 259: {(256, 129, 256): 1}}
    assert stats["occurrences"] == 4 and stats["char_offset_sentences"] == 0 and stats["skipped_occurrences"] == 0

    report = initialize(bos_case["src"], bos_case["tgt_tok"], tmp_path / "out", "Align", 0, 1, {"corpus": corpus})
    emb, head = rows(load(tmp_path / "out")[0])
    for matrix, got in ((bos_case["emb"], emb), (bos_case["head"], head)):
        assert close(got[258], mean(matrix, [256, 129]))
        assert close(got[259], mean(matrix, [256, 129, 256]))  # not Ĥ (char-offset overlap), not BOS
        assert close(got[260], 0.5 * matrix[129].double() + 0.5 * matrix[256].double())  # unseen: Merge
    by_id = {r["id"]: r for r in report["tokens"]}
    assert by_id[260]["fallback"] == "unseen_in_corpus" and by_id[260]["rule"] == "merge:hierarchical_mean"
    assert by_id[258]["occurrences"] == 3 and by_id[258]["fallback"] is None
    assert report["fallbacks"]["input"] == {"unseen_in_corpus": 1}
    assert report["method_stats"]["align"]["occurrences"] == 4


def test_align_and_focus_need_the_corpus(bos_case, tmp_path):
    args = ["--source-model", str(bos_case["src"]), "--target-tokenizer", str(bos_case["tgt_tok"]), "--seed", "0"]
    args += ["--out", str(tmp_path / "m"), "--report", str(tmp_path / "r.json")]
    for method in ("Align", "FOCUS"):
        with pytest.raises(SystemExit):
            main([*args, "--method", method])
    with pytest.raises(ValueError, match="--corpus"):
        initialize(bos_case["src"], bos_case["tgt_tok"], tmp_path / "m", "Align", 0)
    corpus = tmp_path / "d.txt"
    corpus.write_text("กข\nก\n", encoding="utf-8")
    main([*args, "--method", "Align", "--corpus", str(corpus)])
    assert json.loads((tmp_path / "r.json").read_text())["method_stats"]["align"]["occurrences"] == 2


# --------------------------------------------------------------------------------------------------------------------
# SentencePiece-style BPE with new merges ranked FIRST (the reference SentencePiece route: new pieces score 0), so that
# T_s splits a new token's span differently by context.
# --------------------------------------------------------------------------------------------------------------------


def sp_priority_case(root: Path) -> tuple[Path, Path]:
    """Source: ▁ a b c d, "ab", "bc" (merges a+b, then b+c); BOS <s> added. New, merged first: cd (264), bcd (265)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
    vocab.update({"▁": 259, "a": 260, "b": 261, "c": 262, "d": 263, "ab": 264, "bc": 265})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("a", "b"), ("b", "c")], unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    src = save_tokenizer(tok, root / "src_tok", unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tgt = root / "tgt_tok"
    tgt.mkdir()
    for f in src.iterdir():
        (tgt / f.name).write_bytes(f.read_bytes())
    spec = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["vocab"].update({"cd": 266, "bcd": 267})
    spec["model"]["merges"] = [["c", "d"], ["b", "cd"], *spec["model"]["merges"]]
    (tgt / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return src, tgt


def test_align_two_spellings_weighted_by_frequency(tmp_path):
    from transformers import AutoTokenizer

    src_dir, tgt_dir = sp_priority_case(tmp_path)
    src, tgt = AutoTokenizer.from_pretrained(src_dir), AutoTokenizer.from_pretrained(tgt_dir)
    # "▁abcd": T_s ▁|ab|c|d, T_t ▁|a|bcd: bcd's span holds c, d (ab straddles its edge). "▁bcd": T_s ▁|bc|d.
    assert src("abcd")["input_ids"] == [1, 259, 264, 262, 263] and tgt("abcd")["input_ids"] == [1, 259, 260, 267]
    assert src("bcd")["input_ids"] == [1, 259, 265, 263] and tgt("bcd")["input_ids"] == [1, 259, 267]
    corpus = ["abcd", "bcd bcd", "bcd"]  # (c, d) once; (bc, d) three times, twice in one sentence
    counts, _ = align_counts(src, tgt, corpus, [266, 267])
    assert counts == {267: {(262, 263): 1, (265, 263): 3}}

    emb = hand_rows(266, 4, 2, 23)
    model = tiny_model(src_dir, tmp_path / "src_model", emb, None)
    report = initialize(model, tgt_dir, tmp_path / "out", "Align", 0, 1, {"corpus": corpus})
    got = rows(load(tmp_path / "out")[0])[0]
    expected = 0.25 * mean(emb, [262, 263]) + 0.75 * mean(emb, [265, 263])
    assert close(got[267], expected)
    # Counting only the last occurrence per sentence (the reference code) would give 1/3 and 2/3: a different row.
    assert not close(got[267], mean(emb, [262, 263]) / 3 + 2 * mean(emb, [265, 263]) / 3)
    assert close(got[266], mean(emb, [262, 263]))  # cd is never output alone: Merge, c and d
    assert report["tied"] and [r["fallback"] for r in report["tokens"]] == ["unseen_in_corpus", None]


# --------------------------------------------------------------------------------------------------------------------
# Merge.
# --------------------------------------------------------------------------------------------------------------------


def test_merge_follows_a_chain_of_new_tokens(bos_case, tmp_path):
    from transformers import AutoTokenizer

    # 261 = "à¸ģà¸Ĥ" (กข) built as (à¸ģà¸, Ĥ); à¸ģà¸ (259) is new, built as (à¸ģ, à¸); à¸ģ (258) is new too.
    tgt_dir = expand_tokenizer(bos_case["tgt_tok"], tmp_path / "tgt", [("à¸ģà¸", "Ĥ")])
    tgt = AutoTokenizer.from_pretrained(tgt_dir)
    assert merge_tree("à¸ģà¸Ĥ", bpe_merge_ranks(tgt)) == (((("à", "¸"), "ģ"), ("à", "¸")), "Ĥ")
    initialize(bos_case["src"], tgt_dir, tmp_path / "out", "Merge", 0)
    emb, head = rows(load(tmp_path / "out")[0])
    a, g, h = 256, 129, 130  # à¸, ģ, Ĥ
    for src, got in ((bos_case["emb"], emb), (bos_case["head"], head)):
        e = {i: src[i].double() for i in (a, g, h)}
        r258 = (e[a] + e[g]) / 2
        r259 = (r258 + e[a]) / 2
        r261 = (r259 + e[h]) / 2  # = 3/8 à¸ + 1/8 ģ + 1/2 Ĥ, unlike Mean's 1/2 à¸ + 1/4 ģ + 1/4 Ĥ
        assert close(got[258], r258) and close(got[259], r259) and close(got[261], r261)
        assert close(got[260], (e[g] + e[a]) / 2)
        assert not close(got[261], mean(src, [a, g, a, h]))


def test_merge_tree_replays_bpe_order():
    ranks = {("a", "b"): 0, ("b", "c"): 1, ("ab", "c"): 2, ("a", "bc"): 3}
    assert merge_tree("abc", ranks) == (("a", "b"), "c")  # a+b ranks first, so (ab, c) builds abc, not (a, bc)
    assert merge_tree("abd", ranks) is None
    assert merge_tree("a", ranks) == "a"


def test_merge_sentencepiece_style_with_fallbacks(tmp_path):
    src_tok = sentencepiece_source(tmp_path / "src_tok")
    # New: ข (264, added without a merge rule), ▁กา (265 = ▁ก + า), ขา (266 = ข + า, whose part ข has no rule).
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า"), ("ข", "า")], pieces=["ข"])
    emb = hand_rows(264, 4, 2, 23)
    src = tiny_model(src_tok, tmp_path / "src_model", emb, None)
    report = initialize(src, tgt_tok, tmp_path / "out", "Merge", seed=0)
    got = rows(load(tmp_path / "out")[0])[0]
    kho = mean(emb, [3 + 0xE0, 3 + 0xB8, 3 + 0x82])  # ข = E0 B8 82 through byte fallback: Mean
    assert close(got[264], kho)
    assert close(got[265], (emb[263].double() + emb[261].double()) / 2)
    assert close(got[266], (kho + emb[261].double()) / 2)
    assert [r["fallback"] for r in report["tokens"]] == ["no_merge_rule", None, "part_without_merge_rule"]


# --------------------------------------------------------------------------------------------------------------------
# EEVE.
# --------------------------------------------------------------------------------------------------------------------


def test_eeve_untied_first_subword_output_rows(bos_case, tmp_path):
    report = initialize(bos_case["src"], bos_case["tgt_tok"], tmp_path / "out", "EEVE", 0)
    emb, head = rows(load(tmp_path / "out")[0])
    spelled = {258: [256, 129], 259: [256, 129, 256], 260: [129, 256]}
    for new_id, ids in spelled.items():
        assert close(emb[new_id], mean(bos_case["emb"], ids))
        assert torch.equal(head[new_id], bos_case["head"][ids[0]])
    assert torch.equal(head[:258], bos_case["head"]) and torch.equal(emb[:258], bos_case["emb"])
    by_id = {r["id"]: r for r in report["tokens"]}
    assert by_id[260]["output"]["source_ids"] == [129] and by_id[260]["input"]["source_ids"] == [129, 256]
    assert report["method_stats"]["eeve"].startswith("untied")


def test_eeve_tied_uses_the_input_rule(tmp_path):
    src_tok = sentencepiece_source(tmp_path / "src_tok")
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า")])
    emb = hand_rows(264, 4, 2, 23)
    src = tiny_model(src_tok, tmp_path / "src_model", emb, None)
    report = initialize(src, tgt_tok, tmp_path / "out", "EEVE", seed=0)
    model = load(tmp_path / "out")[0]
    got, head = rows(model)
    assert model.config.tie_word_embeddings and got.data_ptr() == head.data_ptr()
    assert close(got[264], mean(emb, [263, 261]))  # the mean of subwords, not the first subword's row
    assert report["method_stats"]["eeve"].startswith("tied")


# --------------------------------------------------------------------------------------------------------------------
# FOCUS.
# --------------------------------------------------------------------------------------------------------------------


def reference_sparsemax(z: list[float]) -> list[float]:
    """Sparsemax by its definition: p = max(z − τ, 0) with τ found by bisection so that Σ p = 1."""
    lo, hi = min(z) - 1, max(z)
    for _ in range(200):
        tau = (lo + hi) / 2
        if sum(max(x - tau, 0) for x in z) > 1:
            lo = tau
        else:
            hi = tau
    return [max(x - tau, 0) for x in z]


def test_sparsemax_matches_its_definition():
    z = [0.9, 0.7, -0.2]
    got = sparsemax(torch.tensor(z, dtype=torch.float64)).tolist()
    assert got == pytest.approx([0.6, 0.4, 0.0], abs=1e-12)  # τ = (0.9 + 0.7 − 1) / 2 = 0.3, by hand
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        z = (torch.randn(12, generator=g, dtype=torch.float64) * 0.5).tolist()
        assert sparsemax(torch.tensor(z, dtype=torch.float64)).tolist() == pytest.approx(
            reference_sparsemax(z), abs=1e-9
        )


def test_focus_weights_are_sparsemax_of_fasttext_cosines(bos_case, tmp_path):
    # Fixed 2-D "fastText" vectors: the new token ก (258) at angle 0; overlapping source tokens at cosines 0.9, 0.7 and
    # −0.2 (bytes "a", "b", "c"); à¸ģà¸ (259) has no vector and falls back to Random; 260 sits on top of "c".
    def at(cos: float, scale: float = 1.0) -> list[float]:
        return [scale * cos, scale * math.sqrt(1 - cos * cos)]

    vectors = {"a": at(0.9, 2.0), "b": at(0.7), "c": at(-0.2, 3.0), "à¸ģ": [5.0, 0.0], "ģà¸": at(-0.5)}
    vectors = {k: torch.tensor(v, dtype=torch.float64).numpy() for k, v in vectors.items()}
    resources = {"fasttext_vectors": vectors, "corpus": ["unused"]}
    report = initialize(bos_case["src"], bos_case["tgt_tok"], tmp_path / "out", "FOCUS", 3, 1, resources)
    emb, head = rows(load(tmp_path / "out")[0])
    a, b, c = ord("a"), ord("b"), ord("c")
    for src, got in ((bos_case["emb"], emb), (bos_case["head"], head)):
        assert close(got[258], 0.6 * src[a].double() + 0.4 * src[b].double())
        # 260 at angle acos(−0.5): cosines with a, b, c from the angles, then sparsemax by its definition.
        angle = {k: math.acos(x) for k, x in (("a", 0.9), ("b", 0.7), ("c", -0.2), ("new", -0.5))}
        w = reference_sparsemax([math.cos(angle[k] - angle["new"]) for k in "abc"])
        assert sum(x > 0 for x in w) == 2  # a genuinely sparse case: "a" gets weight 0
        assert close(got[260], w[0] * src[a].double() + w[1] * src[b].double() + w[2] * src[c].double())
        assert not close(got[259], mean(src, [256, 129, 256]))
    by_id = {r["id"]: r for r in report["tokens"]}
    assert by_id[258]["support"] == 2 and by_id[259]["fallback"] == "no_fasttext_vector"
    assert report["method_stats"]["focus"]["overlapping_tokens"] == 3


@pytest.mark.slow  # trains fastText
@needs_fasttext
def test_focus_with_real_fasttext_on_smollm2(tiny_llama_dir, smollm2_tokenizer_dir, tmp_path):
    lines = [t for _, t in l10n_pairs("th")]
    tgt_dir = expand_tokenizer(
        smollm2_tokenizer_dir, tmp_path / "tgt", thai_expansion_merges(smollm2_tokenizer_dir, lines, 20)
    )
    resources = {"corpus": lines[:800], "fasttext_options": {"dim": 16, "epoch": 2, "min_count": 3}}
    src_emb = rows(load(tiny_llama_dir)[0])[0].clone()
    reports = [initialize(tiny_llama_dir, tgt_dir, tmp_path / f"o{i}", "FOCUS", 42, 1, resources) for i in range(2)]
    got = [rows(load(tmp_path / f"o{i}")[0])[0] for i in range(2)]
    assert torch.equal(got[0], got[1])  # one fastText thread and a seed: reproducible
    stats = reports[0]["method_stats"]["focus"]
    assert stats["overlapping_tokens"] > 50
    for rec in reports[0]["tokens"]:
        if rec["fallback"] is None:
            # A convex combination: the listed top weights are positive and at most 1; the row lies in the hull.
            assert rec["support"] >= 1 and all(0 < w <= 1 for _, w in rec["top"])
            if rec["support"] == len(rec["top"]):
                expected = sum(w * src_emb[i].double() for i, w in rec["top"])
                assert torch.allclose(got[0][rec["id"]].double(), expected, atol=1e-3)
    assert sum(r["fallback"] is None for r in reports[0]["tokens"]) >= 10


# --------------------------------------------------------------------------------------------------------------------
# Every method on both tokenizer families: SmolLM2's byte-level BPE and a SentencePiece-style byte-fallback BPE.
# --------------------------------------------------------------------------------------------------------------------

METHODS = ["Random", "Mean", "Merge", "Align", pytest.param("FOCUS", marks=needs_fasttext), "EEVE"]
FT_SMALL = {"dim": 8, "epoch": 1, "min_count": 1}


@pytest.fixture(scope="module")
def smol_setup(tiny_llama_dir, smollm2_tokenizer_dir, tmp_path_factory) -> dict:
    from transformers import AutoTokenizer

    tgt_dir = expand_tokenizer(smollm2_tokenizer_dir, tmp_path_factory.mktemp("smol_methods") / "tgt", SMOL_MERGES)
    model, src_tok = load(tiny_llama_dir)
    return {"model": model, "src_tok": src_tok, "tgt_tok": AutoTokenizer.from_pretrained(tgt_dir)}


@pytest.mark.parametrize("method", METHODS)
def test_each_method_on_smollm2_tokenizer(method, smol_setup):
    import copy

    corpus = ["กา กา ก", " กาก", "ก"] * 5
    src_model, src_tok = copy.deepcopy(smol_setup["model"]), smol_setup["src_tok"]
    src_emb = rows(src_model)[0].clone()
    report = initialize_model(
        src_model, src_tok, smol_setup["tgt_tok"], method, 0, 8, {"corpus": corpus, "fasttext_options": FT_SMALL}
    )
    emb = rows(src_model)[0]
    assert emb.shape[0] == 49160 and torch.equal(emb[:49152], src_emb) and torch.isfinite(emb).all()
    vocab = src_tok.get_vocab()
    mean_rows = {49152: ["à¸", "ģ"], 49153: ["à¸", "ģ", "à¸²"]}
    if method in ("Mean", "EEVE", "Align"):
        # Appended merges: T_s tiles each new token's span exactly as its own BPE spelling, so Align = Mean here.
        for new_id, spelling in mean_rows.items():
            assert close(emb[new_id], mean(src_emb, [vocab[p] for p in spelling]))
    if method == "Merge":
        e = {p: src_emb[vocab[p]].double() for p in ("à¸", "ģ", "à¸²")}
        assert close(emb[49153], ((e["à¸"] + e["ģ"]) / 2 + e["à¸²"]) / 2)
    assert report["method"] == method and len(report["tokens"]) == 4


@pytest.mark.parametrize("method", METHODS)
def test_each_method_on_sentencepiece_style(method, tmp_path):
    src_dir, tgt_dir = sp_priority_case(tmp_path)
    emb, head = hand_rows(266, 4, 2, 23), hand_rows(266, 4, 3, 19)
    model = tiny_model(src_dir, tmp_path / "src_model", emb, head)
    corpus = ["abcd", "bcd bcd", "bcd", "cd"] * 3
    report = initialize(
        model, tgt_dir, tmp_path / "out", method, 0, 1, {"corpus": corpus, "fasttext_options": FT_SMALL}
    )
    got_emb, got_head = rows(load(tmp_path / "out")[0])
    assert torch.equal(got_emb[:266], emb) and torch.equal(got_head[:266], head)
    assert got_emb.shape[0] == 268 and not report["tied"] and not report["byte_level"]
    if method == "Align":
        # cd is seen 3 times as itself, (c, d); bcd as (c, d) 3 times and (bc, d) 9 times.
        assert close(got_emb[266], mean(emb, [262, 263]))
        assert close(got_emb[267], 0.25 * mean(emb, [262, 263]) + 0.75 * mean(emb, [265, 263]))
    if method == "EEVE":
        assert torch.equal(got_head[267], head[265])  # bcd's source BPE spelling is bc | d: first subword bc
    if method == "Merge":
        assert close(got_emb[267], (emb[261].double() + mean(emb, [262, 263])) / 2)
