"""Initialization of new rows (workflow_scripts/initialize/): expected rows are built here from the definitions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from tests.conftest import (
    SMOL_MERGES,
    expand_tokenizer,
    hand_rows,
    l10n_pairs,
    load,
    rows,
    save_tokenizer,
    sentencepiece_source,
    thai_expansion_merges,
    tiny_model,
    u,
)
from workflow_scripts.initialize import (
    INIT_METHODS,
    InitContext,
    find_new_tokens,
    initialize,
    initialize_model,
    main,
    map_decode_encode,
    map_full_tokenizer_on_piece,
    source_subwords,
)

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------------------------------
# Builders: tokenizers, expansions, tiny models.
# --------------------------------------------------------------------------------------------------------------------


def byte_level_source(out_dir: Path) -> Path:
    """Byte-level BPE: id = byte value for the 256 bytes, then "à¸" (E0 B8), "ï¿" (EF BF), "ï¿½" (U+FFFD)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {u(bytes([b])): b for b in range(256)}
    vocab.update({"à¸": 256, "ï¿": 257, "ï¿½": 258})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("à", "¸"), ("ï", "¿"), ("ï¿", "½")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return save_tokenizer(tok, out_dir)


def mean(matrix: torch.Tensor, ids: list[int]) -> torch.Tensor:
    return torch.stack([matrix[i] for i in ids]).double().mean(0).float()


# --------------------------------------------------------------------------------------------------------------------
# Byte-level BPE with partial-UTF-8 tokens: the mapping, and the two wrong ones.
# --------------------------------------------------------------------------------------------------------------------

# New tokens: " " + first two bytes of ก (partial), ก (E0 B8 81, whole), ก + first two bytes of the next Thai char.
BYTE_MERGES = [("Ġ", "à¸"), ("à¸", "ģ"), ("à¸ģ", "à¸")]
# Source ids spelling each of them, by hand: Ġ is byte 0x20 (id 32), "à¸" id 256, ģ is byte 0x81 (id 129).
BYTE_EXPECTED = {259: [32, 256], 260: [256, 129], 261: [256, 129, 256]}


@pytest.fixture(scope="module")
def byte_case(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("byte_case")
    src_tok = byte_level_source(root / "src_tok")
    tgt_tok = expand_tokenizer(src_tok, root / "tgt_tok", BYTE_MERGES)
    emb, head = hand_rows(259, 6, 3, 29), hand_rows(259, 6, 5, 31) - 7
    src = tiny_model(src_tok, root / "src_model", emb, head)
    return {"root": root, "src": src, "tgt_tok": tgt_tok, "emb": emb, "head": head}


def test_byte_level_expansion_is_a_real_bpe(byte_case):
    from transformers import AutoTokenizer

    tgt = AutoTokenizer.from_pretrained(byte_case["tgt_tok"])
    text = " กก"  # bytes 20 | E0 B8 81 | E0 B8 81: "Ġà¸" then "ģ" then "à¸ģ"
    assert tgt.encode(text, add_special_tokens=False) == [259, 129, 260]
    assert tgt.decode(tgt.encode(text, add_special_tokens=False)) == text


def test_mean_byte_level_uses_exactly_the_byte_tokens_rows(byte_case, tmp_path):
    out = tmp_path / "tgt_model"
    report = initialize(byte_case["src"], byte_case["tgt_tok"], out, "Mean", seed=0)
    model, tok = load(out)
    emb, head = rows(model)
    assert len(tok) == 262 and model.config.vocab_size == 262 and not report["tied"]
    for new_id, ids in BYTE_EXPECTED.items():
        assert torch.allclose(emb[new_id], mean(byte_case["emb"], ids), atol=1e-6)
        assert torch.allclose(head[new_id], mean(byte_case["head"], ids), atol=1e-6)
        assert not torch.allclose(emb[new_id], byte_case["emb"][258], atol=1e-3)
    # Source rows are bit-identical.
    assert torch.equal(emb[:259], byte_case["emb"]) and torch.equal(head[:259], byte_case["head"])
    by_id = {r["id"]: r for r in report["tokens"]}
    assert {i: by_id[i]["source_ids"] for i in BYTE_EXPECTED} == BYTE_EXPECTED
    assert [by_id[i]["partial_utf8"] for i in (259, 260, 261)] == [True, False, True]
    assert by_id[260]["text"] == "ก" and by_id[259]["text"] == " \\xe0\\xb8"
    assert report["fallbacks"] == {"input": {}, "output": {}}
    assert report["mapping_diagnostics"]["bpe_model_mapping_uses_replacement_char"] == []


def test_the_two_wrong_mappings_give_other_rows(byte_case):
    from transformers import AutoTokenizer

    src = AutoTokenizer.from_pretrained(byte_case["src"])
    tgt = AutoTokenizer.from_pretrained(byte_case["tgt_tok"])
    tokens = {t.id: t for t in find_new_tokens(src, tgt)}
    bpe = src.backend_tokenizer.model
    assert {i: source_subwords(bpe, t.piece)[0] for i, t in tokens.items()} == BYTE_EXPECTED
    # (2) decode → encode: " " + E0 B8 decodes to " \ufffd", which encodes to Ġ + the U+FFFD token (258).
    assert map_decode_encode(src, tgt, tokens[259]) == [32, 258]
    assert map_decode_encode(src, tgt, tokens[261]) == [256, 129, 258]
    # (1) full tokenizer on the printed piece "Ġà¸": its characters are UTF-8 encoded again, C4 A0 | C3 A0 | C2 B8.
    assert map_full_tokenizer_on_piece(src, tokens[259]) == [0xC4, 0xA0, 0xC3, 0xA0, 0xC2, 0xB8]
    emb = byte_case["emb"]
    right = mean(emb, BYTE_EXPECTED[259])
    for wrong in (mean(emb, [32, 258]), mean(emb, [0xC4, 0xA0, 0xC3, 0xA0, 0xC2, 0xB8])):
        assert (wrong - right).abs().max() > 0.5


def test_cli_writes_model_and_report(byte_case, tmp_path):
    out, rep, log = tmp_path / "m", tmp_path / "r.json", tmp_path / "init.log"
    args = ["--source-model", str(byte_case["src"]), "--target-tokenizer", str(byte_case["tgt_tok"])]
    main([*args, "--method", "Mean", "--seed", "1", "--out", str(out), "--report", str(rep), "--threads", "1"])
    main([*args, "--method", "Mean", "--seed", "1", "--out", str(out), "--report", str(rep), "--log", str(log)])
    report = json.loads(rep.read_text(encoding="utf-8"))
    assert report["method"] == "Mean" and report["vocab"]["new"] == 3 and log.read_text()
    stats = report["stats"]["input"]
    new_norm = float(torch.stack([mean(byte_case["emb"], ids) for ids in BYTE_EXPECTED.values()]).norm(dim=1).mean())
    assert stats["mean_l2_norm_new"] == pytest.approx(new_norm, rel=1e-5)
    assert stats["mean_l2_norm_source"] == pytest.approx(float(byte_case["emb"].norm(dim=1).mean()), rel=1e-5)
    assert set(report["stats"]) == {"input", "output"} and (out / "tokenizer.json").is_file()
    # discovery registers every method of methods/ (derived from the files, so a new method needs no edit here)
    declared = {
        m
        for f in (REPO / "workflow_scripts" / "initialize" / "methods").glob("[!_]*.py")
        for m in re.findall(r'@register_method\(\s*"([^"]+)"', f.read_text(encoding="utf-8"))
    }
    assert set(INIT_METHODS) == declared and {"Random", "Mean", "Merge", "Align", "FOCUS", "EEVE"} <= declared


# --------------------------------------------------------------------------------------------------------------------
# SentencePiece-style BPE (byte fallback, "▁").
# --------------------------------------------------------------------------------------------------------------------


def test_mean_sentencepiece_style(tmp_path):
    from transformers import AutoTokenizer

    src_tok = sentencepiece_source(tmp_path / "src_tok")
    # New: ข (264; not in V_s at all), ▁กา (265), ขา (266).
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า"), ("ข", "า")], pieces=["ข"])
    tgt = AutoTokenizer.from_pretrained(tgt_tok)
    assert tgt.encode("กา ขา", add_special_tokens=False) == [265, 259, 266]
    emb = hand_rows(264, 4, 2, 23)
    src = tiny_model(src_tok, tmp_path / "src_model", emb, None)
    report = initialize(src, tgt_tok, tmp_path / "out", "Mean", seed=0)
    model, _ = load(tmp_path / "out")
    got, _ = rows(model)
    kho = [3 + 0xE0, 3 + 0xB8, 3 + 0x82]  # ข = U+0E02 = E0 B8 82, through byte fallback
    expected = {264: kho, 265: [263, 261], 266: [*kho, 261]}
    for new_id, ids in expected.items():
        assert torch.allclose(got[new_id], mean(emb, ids), atol=1e-6)
    assert {r["id"]: r["source_ids"] for r in report["tokens"]} == expected
    assert [r["text"] for r in report["tokens"]] == ["ข", " กา", "ขา"]
    assert torch.equal(got[:264], emb) and report["tied"] and not report["byte_level"]


def test_mean_fallbacks_are_counted(tmp_path):
    # Without byte fallback, ข (not in V_s) maps to <unk> only: the row falls back to the mean of all source rows.
    src_tok = sentencepiece_source(tmp_path / "src_tok", byte_fallback=False)
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า"), ("ข", "า")], pieces=["ข"])
    emb = hand_rows(264, 4, 2, 23)
    src = tiny_model(src_tok, tmp_path / "src_model", emb, None)
    report = initialize(src, tgt_tok, tmp_path / "out", "Mean", seed=0)
    got = rows(load(tmp_path / "out")[0])[0]
    assert torch.allclose(got[264], emb.double().mean(0).float(), atol=1e-6)  # ข: nothing maps
    assert torch.allclose(got[265], mean(emb, [263, 261]), atol=1e-6)  # ▁กา: as with byte fallback
    assert torch.allclose(got[266], emb[261], atol=1e-6)  # ขา: the unknown ข is left out, า remains
    assert [r["fallback"] for r in report["tokens"]] == ["no_subwords", None, "unk_dropped"]
    assert report["fallbacks"] == {"input": {"no_subwords": 1, "unk_dropped": 1}}


def test_head_bias_follows_the_same_rule(byte_case):
    from transformers import AutoTokenizer

    model, src = load(byte_case["src"])
    bias = torch.arange(259, dtype=torch.float32) / 10
    head = torch.nn.Linear(6, 259, bias=True)
    with torch.no_grad():
        head.weight.copy_(byte_case["head"])
        head.bias.copy_(bias)
    model.set_output_embeddings(head)
    tgt = AutoTokenizer.from_pretrained(byte_case["tgt_tok"])
    initialize_model(model, src, tgt, "Mean", seed=0)
    new_head = model.get_output_embeddings()
    for new_id, ids in BYTE_EXPECTED.items():
        assert new_head.bias[new_id].item() == pytest.approx(sum(bias[i].item() for i in ids) / len(ids), abs=1e-6)
        assert torch.allclose(new_head.weight[new_id], mean(byte_case["head"], ids), atol=1e-6)
    assert torch.equal(new_head.bias[:259], bias)


def test_rejects_targets_that_are_not_expansions(byte_case, tmp_path):
    from transformers import AutoTokenizer

    src = AutoTokenizer.from_pretrained(byte_case["src"])
    tgt = AutoTokenizer.from_pretrained(byte_case["tgt_tok"])
    with pytest.raises(ValueError, match="does not keep the source vocabulary"):
        find_new_tokens(tgt, src)
    tgt.add_tokens(["กข"])  # an added token: matched before BPE, reachable by no merge
    with pytest.raises(ValueError, match="added tokens"):
        find_new_tokens(src, tgt)


def test_mapping_ignores_bpe_dropout(byte_case):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    spec = json.loads((byte_case["src"] / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["dropout"] = 0.9
    src = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)))
    tgt = AutoTokenizer.from_pretrained(byte_case["tgt_tok"])
    tokens = find_new_tokens(src, tgt)
    # With dropout the raw model splits "à¸" back into bytes at random; the context's mapping must not.
    raw = {tuple(t.id for t in src.backend_tokenizer.model.tokenize("à¸ģà¸")) for _ in range(50)}
    assert len(raw) > 1
    ctx = InitContext(src, tgt, list(range(259)), tokens, seed=0, tied=False)
    assert {t.id: ctx.subwords(t)[0] for t in tokens} == BYTE_EXPECTED


# --------------------------------------------------------------------------------------------------------------------
# Random.
# --------------------------------------------------------------------------------------------------------------------


def test_a_method_that_draws_nothing_gives_the_same_rows_under_every_seed(tmp_path):
    """MethodSpec.draws is what the grid's seeds rely on: a method registered without it is initialized once and
    shared by the training seeds of its cells (grid.init_seed_suffix), so its rows must not depend on the seed."""
    from workflow_scripts.initialize import METHOD_SPECS

    src_tok = byte_level_source(tmp_path / "src_tok")
    chars = [u(bytes([b])) for b in range(256)]
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [(a, b) for a in chars[60:70] for b in chars[60:70]])
    g = torch.Generator().manual_seed(0)
    src = tiny_model(
        src_tok, tmp_path / "src_model", torch.randn(259, 6, generator=g), torch.randn(259, 6, generator=g)
    )
    corpus = ["".join(chars[60 + (i * j) % 10] for j in range(12)) for i in range(40)]
    non_drawing = [name for name, spec in METHOD_SPECS.items() if not spec.draws and not spec.needs_model]
    assert {"Mean", "Merge", "Align", "OMP"} <= set(non_drawing)
    for name in non_drawing:
        got = []
        for seed in (7, 8):
            initialize(src, tgt_tok, tmp_path / f"{name}.{seed}", name, seed=seed, resources={"corpus": corpus})
            got.append(rows(load(tmp_path / f"{name}.{seed}")[0]))
        # to float32 rounding: OMP's least squares are not bit-reproducible from run to run (about 1e-7 apart, the
        # same seed or not)
        assert all(torch.allclose(a, b, rtol=0, atol=1e-6) for a, b in zip(*got, strict=True)), name


def test_random_matches_source_statistics_and_is_seeded(tmp_path):
    src_tok = byte_level_source(tmp_path / "src_tok")
    chars = [u(bytes([b])) for b in range(256)]
    merges = [(a, b) for a in chars[:50] for b in chars[:50]][:2000]  # 2000 new two-byte tokens, ids 259..2258
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", merges)
    g = torch.Generator().manual_seed(0)
    d = 6
    # Non-normal source columns with unlike means and spreads: exponential and uniform.
    emb = 3.0 * torch.arange(d) - 5 + 0.3 * (torch.arange(d) + 1) * torch.empty(259, d).exponential_(generator=g)
    head = -2.0 * torch.arange(d) + (torch.arange(d) + 1) * torch.rand(259, d, generator=g)
    src = tiny_model(src_tok, tmp_path / "src_model", emb, head)

    outs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        report = initialize(src, tgt_tok, tmp_path / name, "Random", seed=seed)
        outs[name] = rows(load(tmp_path / name)[0])
    assert report["fallbacks"] == {"input": {}, "output": {}}
    k = 2000
    for role, source in ((0, emb), (1, head)):
        new = outs["a"][role][259:].double()
        mu, sigma = source.double().mean(0), source.double().std(0, correction=0)
        # Sample mean within 5 standard errors σ/√k, sample std within 5 of its standard error σ/√(2k).
        assert ((new.mean(0) - mu).abs() <= 5 * sigma / k**0.5).all()
        assert ((new.std(0) - sigma).abs() <= 5 * sigma / (2 * k) ** 0.5).all()
        assert torch.equal(outs["a"][role][:259], source)
        assert torch.equal(outs["a"][role], outs["b"][role])
        assert not torch.equal(outs["a"][role][259:], outs["c"][role][259:])
    # Input and output rows are separate draws, not one normal sample rescaled.
    z_in = (outs["a"][0][259:].double() - emb.double().mean(0)) / emb.double().std(0, correction=0)
    z_out = (outs["a"][1][259:].double() - head.double().mean(0)) / head.double().std(0, correction=0)
    assert (z_in - z_out).abs().max() > 1


# --------------------------------------------------------------------------------------------------------------------
# SmolLM2's real tokenizer: tied / untied models, padding, and a Thai expansion.
# --------------------------------------------------------------------------------------------------------------------

# Hand-picked new tokens over SmolLM2's vocabulary, with their source spellings written out by hand:
# ก (E0 B8 81), กา (ก + "à¸²" = า), a partial byte run 81 E0 B8, and " " + E0 B8 (partial).
SMOL_SPELLING = [["à¸", "ģ"], ["à¸", "ģ", "à¸²"], ["ģ", "à¸"], ["Ġ", "à¸"]]


@pytest.fixture(scope="module")
def smol_expansion(smollm2_tokenizer_dir, tmp_path_factory) -> Path:
    return expand_tokenizer(smollm2_tokenizer_dir, tmp_path_factory.mktemp("smol") / "tgt", SMOL_MERGES)


@pytest.fixture(scope="module")
def smol_tok(tiny_llama_dir):
    """The tiny Llama's tokenizer, loaded once (the tests only read and save it)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_llama_dir)


def smol_model(folder: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder)


def check_mean_rows(new: torch.Tensor, source: torch.Tensor, vocab: dict[str, int]) -> None:
    for k, spelling in enumerate(SMOL_SPELLING):
        assert torch.allclose(new[49152 + k], mean(source, [vocab[p] for p in spelling]), atol=1e-6)


def test_tied_model_stays_tied(tiny_llama_dir, smol_expansion, smol_tok, tmp_path):
    src_emb = rows(smol_model(tiny_llama_dir))[0].clone()
    report = initialize(tiny_llama_dir, smol_expansion, tmp_path / "out", "Mean", seed=0)
    model, tok = load(tmp_path / "out")
    emb, head = rows(model)
    assert report["tied"] and model.config.tie_word_embeddings and emb.data_ptr() == head.data_ptr()
    assert len(tok) == model.config.vocab_size == 49156 and emb.shape == (49156, 64)
    assert torch.equal(emb[:49152], src_emb)
    check_mean_rows(emb, src_emb, smol_tok.get_vocab())
    assert tok.encode(" กา", add_special_tokens=False) == [216, 49153]  # Ġ | à¸ģà¸²: ranks follow merge order


def test_untied_model_initializes_both_matrices(tiny_llama_dir, smol_expansion, smol_tok, tmp_path):
    from transformers import LlamaForCausalLM

    tied = smol_model(tiny_llama_dir)
    cfg = tied.config
    cfg.tie_word_embeddings = False
    untied = LlamaForCausalLM(cfg)
    untied.load_state_dict(tied.state_dict(), strict=False)
    with torch.no_grad():
        untied.lm_head.weight.copy_(torch.randn(49152, 64, generator=torch.Generator().manual_seed(3)) * 0.5 + 1)
    untied.save_pretrained(tmp_path / "src")
    smol_tok.save_pretrained(tmp_path / "src")
    src_emb, src_head = (m.clone() for m in rows(smol_model(tmp_path / "src")))
    assert not torch.equal(src_emb, src_head)

    report = initialize(tmp_path / "src", smol_expansion, tmp_path / "out", "Mean", seed=0)
    model, _ = load(tmp_path / "out")
    emb, head = rows(model)
    assert not report["tied"] and emb.data_ptr() != head.data_ptr()
    assert torch.equal(emb[:49152], src_emb) and torch.equal(head[:49152], src_head)
    vocab = smol_tok.get_vocab()
    check_mean_rows(emb, src_emb, vocab)
    check_mean_rows(head, src_head, vocab)
    stats = report["stats"]
    assert stats["output"]["mean_l2_norm_source"] == pytest.approx(float(src_head.norm(dim=1).mean()), rel=1e-5)
    assert stats["input"]["mean_l2_norm_source"] == pytest.approx(float(src_emb.norm(dim=1).mean()), rel=1e-5)


def test_padding_rows_are_source_mean_and_never_generated(tiny_llama_dir, smol_expansion, tmp_path):
    from transformers import GenerationConfig

    src_emb = rows(smol_model(tiny_llama_dir))[0].clone()
    report = initialize(tiny_llama_dir, smol_expansion, tmp_path / "out", "Mean", seed=0, pad_to_multiple_of=256)
    model, tok = load(tmp_path / "out")
    padding = list(range(49156, 49408))  # 49156 target ids rounded up to 193 × 256
    assert len(tok) == 49156 and model.config.vocab_size == 49408 and report["vocab"]["padding_ids"] == padding
    saved = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert saved["suppress_tokens"] == padding and not saved.get("_from_model_config")
    emb = rows(model)[0]
    assert torch.allclose(emb[padding], src_emb.double().mean(0).float().expand(len(padding), -1), atol=1e-6)
    assert torch.equal(emb[:49152], src_emb)

    # Make the padding rows win every argmax otherwise: ±1000 along each of the 64 axes (rows 0..127 of the padding).
    with torch.no_grad():
        for j in range(64):
            emb[padding[2 * j]] = 0
            emb[padding[2 * j]][j] = 1000.0
            emb[padding[2 * j + 1]] = 0
            emb[padding[2 * j + 1]][j] = -1000.0
    prompt = tok("Hello world", return_tensors="pt")
    # suppress_tokens=None would be filled in from the model's generation_config; [] really turns it off.
    plain = GenerationConfig(max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0, suppress_tokens=[])
    unsuppressed = model.generate(**prompt, generation_config=plain)[0, prompt.input_ids.shape[1] :]
    assert set(unsuppressed.tolist()) <= set(padding)
    suppressed = model.generate(**prompt, max_new_tokens=8, do_sample=False)[0, prompt.input_ids.shape[1] :]
    assert len(suppressed) > 0 and not set(suppressed.tolist()) & set(padding)


def test_thai_expansion_decode_encode_vs_bpe_model(smollm2_tokenizer_dir, tmp_path):
    from transformers import AutoTokenizer

    pairs = l10n_pairs("th")
    thai = [t for _, t in pairs]
    merges = thai_expansion_merges(smollm2_tokenizer_dir, thai, 60)
    tgt_dir = expand_tokenizer(smollm2_tokenizer_dir, tmp_path / "tgt", merges)
    src = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    tgt = AutoTokenizer.from_pretrained(tgt_dir)
    # The expansion is a real BPE: Thai text uses new ids, round-trips, and English is tokenized as before.
    sample = " ".join(thai[:50])
    assert max(tgt.encode(sample, add_special_tokens=False)) >= 49152
    assert tgt.decode(tgt.encode(sample, add_special_tokens=False)) == sample
    english = " ".join(e for e, _ in pairs[:50])
    assert tgt.encode(english, add_special_tokens=False) == src.encode(english, add_special_tokens=False)

    tokens = find_new_tokens(src, tgt)
    assert len(tokens) == 60
    bpe = src.backend_tokenizer.model
    fffd = src.get_vocab()["ï¿½"]
    vocab_inv = {i: p for p, i in src.get_vocab().items()}
    differ = []
    for t in tokens:
        ids, fallback = source_subwords(bpe, t.piece)
        assert fallback is None and "".join(vocab_inv[i] for i in ids) == t.piece and fffd not in ids
        if map_decode_encode(src, tgt, t) != ids:
            differ.append(t)
    partial = [t for t in tokens if t.partial_utf8]
    print(f"Thai expansion: {len(differ)} of {len(tokens)} differ under decode→encode; {len(partial)} partial UTF-8")
    assert any(t.partial_utf8 for t in differ)
    assert all(fffd in map_decode_encode(src, tgt, t) for t in differ if t.partial_utf8)
    assert all(not t.partial_utf8 for t in tokens if t not in differ)
