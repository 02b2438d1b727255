"""Vocabulary replacement (paper 002 §8.3, Table 11): the replacement tokenizer, the initialization of every row, and
LAPT + evaluation of a replaced model, on both tokenizer families."""

from __future__ import annotations

import json
import re

import pytest
import torch
from conftest import load, model_state, rows, sentencepiece_source
from tokenizers import Tokenizer
from transformers import AutoTokenizer

from workflow_scripts.initialize.replace import initialize_replacement, initialize_replacement_model, plan_rows
from workflow_scripts.pieces import BYTE_TO_UNICODE
from workflow_scripts.vocab.replace import replacement_report, save_replacement, train_replacement_tokenizer

SIZE_BYTE_LEVEL = 1000
SIZE_SP = 600
UNSEEN = "ꙮ 🦜 ÆØ"  # characters D lacks: byte fallback / byte symbols must still spell them


@pytest.fixture(scope="module")
def byte_level_replacement(tmp_path_factory, smollm2_tokenizer_dir, thai_lines) -> tuple:
    out = tmp_path_factory.mktemp("replace_bl") / "tokenizer"
    tok, mapping, text = train_replacement_tokenizer(thai_lines, smollm2_tokenizer_dir, SIZE_BYTE_LEVEL)
    save_replacement(smollm2_tokenizer_dir, text, mapping, out)
    return out, tok, mapping


@pytest.fixture(scope="module")
def sp_replacement(tmp_path_factory, thai_lines) -> tuple:
    src = sentencepiece_source(tmp_path_factory.mktemp("sp_src") / "tokenizer")
    out = tmp_path_factory.mktemp("replace_sp") / "tokenizer"
    tok, mapping, text = train_replacement_tokenizer(thai_lines, src, SIZE_SP)
    save_replacement(src, text, mapping, out)
    return src, out, tok, mapping


# ------------------------------------------------------------------------------------------------- 1. the tokenizer


def test_byte_level_replacement_size_roundtrip_specials(byte_level_replacement, smollm2_tokenizer_dir, thai_lines):
    out, tok, mapping = byte_level_replacement
    hf = AutoTokenizer.from_pretrained(out)
    src = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    assert len(hf) == SIZE_BYTE_LEVEL == tok.get_vocab_size(with_added_tokens=True)
    assert sorted(hf.get_vocab().values()) == list(range(SIZE_BYTE_LEVEL))
    vocab = hf.get_vocab()
    assert all(c in vocab for c in BYTE_TO_UNICODE.values())  # the 256 byte symbols
    for line in [*thai_lines[:200], UNSEEN, "Hello, world! 123"]:
        assert hf.decode(hf.encode(line, add_special_tokens=False)) == line
    # Special tokens: the same strings, one id each, recorded in the mapping (SmolLM2's are 0..16 in both).
    src_special = {t.content: i for i, t in src.added_tokens_decoder.items() if t.special}
    tgt_special = {t.content: i for i, t in hf.added_tokens_decoder.items() if t.special}
    assert tgt_special == {m["content"]: m["target_id"] for m in mapping["special_tokens"]}
    assert set(tgt_special) == set(src_special) and len(tgt_special) == 17
    assert {m["content"]: m["source_id"] for m in mapping["special_tokens"]} == src_special
    assert hf.eos_token == src.eos_token and hf.convert_tokens_to_ids(hf.eos_token) == tgt_special[hf.eos_token]
    # The chat template still works and its markers are single special ids.
    msgs = [{"role": "user", "content": thai_lines[0]}]
    text = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text == src.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = hf.encode(text, add_special_tokens=False)
    assert ids.count(tgt_special["<|im_start|>"]) == 3 and ids.count(tgt_special["<|im_end|>"]) == 2
    assert hf.decode(ids) == text
    # Thai gets much shorter than under SmolLM2's English-centric vocabulary.
    report = replacement_report(
        Tokenizer.from_file(str(smollm2_tokenizer_dir / "tokenizer.json")),
        tok,
        mapping,
        thai_lines[:100],
        thai_lines[:100],
    )
    assert report["roundtrip_failures_in_D"] == 0
    assert report["tokens_per_sentence_target"] < 0.5 * report["tokens_per_sentence_source"]


def test_sentencepiece_replacement_keeps_byte_fallback_and_specials(sp_replacement, thai_lines):
    _, out, tok, mapping = sp_replacement
    hf = AutoTokenizer.from_pretrained(out)
    assert len(hf) == SIZE_SP
    vocab = hf.get_vocab()
    assert all(f"<0x{b:02X}>" in vocab for b in range(256))
    assert mapping["byte_fallback_pieces"] == 256
    # <unk>, <s>, </s> exist with their meaning (the source's specials come first, in source order).
    assert (hf.unk_token, hf.bos_token, hf.eos_token) == ("<unk>", "<s>", "</s>")
    assert [vocab["<unk>"], vocab["<s>"], vocab["</s>"]] == [0, 1, 2]
    assert tok.model.byte_fallback and tok.model.unk_token == "<unk>"
    for line in [*thai_lines[:200], UNSEEN]:
        assert hf.decode(hf.encode(line, add_special_tokens=False)) == line
    # An unseen character is spelled by byte-fallback pieces, never <unk>.
    enc = tok.encode("ꙮ", add_special_tokens=False)
    assert vocab["<unk>"] not in enc.ids and {t for t in enc.tokens if t.startswith("<0x")} == {
        "<0xEA>",
        "<0x99>",
        "<0xAE>",
    }
    assert mapping["special_ids_changed"] == 0 and mapping["family"] == "sentencepiece_bpe"


def test_too_small_size_is_refused(smollm2_tokenizer_dir, thai_lines):
    with pytest.raises(ValueError, match="replace_vocab_size=200 leaves no room"):
        train_replacement_tokenizer(thai_lines, smollm2_tokenizer_dir, 200)


def test_replace_on_a_small_corpus_names_replace_vocab_size(smollm2_tokenizer_dir, thai_lines):
    """Checked when the tokenizer is trained, as the aux vocabulary is: planning cannot know how far BPE gets."""
    small = thai_lines[:40]
    with pytest.raises(ValueError, match=r"^tokenizer\.replace_vocab_size: corpus too small") as err:
        train_replacement_tokenizer(small, smollm2_tokenizer_dir, 32_000)
    assert "aux" not in str(err.value)
    most = int(re.search(r"replace_vocab_size <= (\d+)", str(err.value)).group(1))
    assert train_replacement_tokenizer(small, smollm2_tokenizer_dir, most)[0].get_vocab_size() == most


# ---------------------------------------------------------------------------------------------- 2. initialization


def _spelling_mean(src_bpe, src_emb: torch.Tensor, piece: str) -> torch.Tensor:
    """Mean of the source rows of the source BPE's spelling; for the byte symbols SmolLM2 lacks (bytes that never occur
    in UTF-8, e.g. 0xF9), which nothing spells, the mean of all source rows."""
    ids = [t.id for t in src_bpe.tokenize(piece)]
    return (src_emb[ids] if ids else src_emb).to(torch.float64).mean(0)  # all rows without indexing each one


@pytest.mark.parametrize("tied", [True, False])
def test_mean_rows_copy_shared_and_average_spelling(
    byte_level_replacement, tiny_llama_dir, untied_llama_dir, smollm2_tokenizer_dir, tmp_path, tied
):
    out_tok = byte_level_replacement[0]
    src_dir = tiny_llama_dir if tied else untied_llama_dir
    src_model, src_tok = load(src_dir)
    src_in, src_out = rows(src_model)
    tgt_tok = AutoTokenizer.from_pretrained(out_tok)
    report = initialize_replacement(src_dir, out_tok, tmp_path / "m", "Mean", seed=3)
    model, saved_tok = load(tmp_path / "m")
    assert len(saved_tok) == SIZE_BYTE_LEVEL and model.config.vocab_size == SIZE_BYTE_LEVEL
    new_in, new_out = rows(model)
    assert new_in.shape == (SIZE_BYTE_LEVEL, 64) and (new_in.data_ptr() == new_out.data_ptr()) is tied
    src_vocab, bpe = src_tok.get_vocab(), src_tok.backend_tokenizer.model
    checked_new = 0
    for piece, i in tgt_tok.get_vocab().items():
        for new, old in ((new_in, src_in), (new_out, src_out)):
            if piece in src_vocab:  # specials, byte symbols, shared pieces: the source row, bit for bit
                assert torch.equal(new[i], old[src_vocab[piece]]), piece
            else:
                torch.testing.assert_close(new[i].to(torch.float64), _spelling_mean(bpe, old, piece), rtol=0, atol=1e-6)
                checked_new += 1
    assert report["vocab"]["new"] == checked_new // 2 > 300
    assert report["copied_rows"]["special"] == 17
    assert (
        report["copied_rows"]["special"] + report["copied_rows"]["shared_with_source"] + report["vocab"]["new"]
        == SIZE_BYTE_LEVEL
    )
    # A hand case: "ก" (U+0E01, bytes e0 b8 81) is two SmolLM2 pieces; its row is their mean.
    piece = "".join(BYTE_TO_UNICODE[b] for b in "ก".encode())
    parts = [t.value for t in bpe.tokenize(piece)]
    assert "".join(parts) == piece and len(parts) >= 2
    if piece not in src_vocab:
        want = torch.stack([src_in[src_vocab[p]] for p in parts]).to(torch.float64).mean(0)
        torch.testing.assert_close(new_in[tgt_tok.get_vocab()[piece]].to(torch.float64), want, rtol=0, atol=1e-6)
    assert report["config_ids"]["config.eos_token_id"] == [src_tok.eos_token_id, tgt_tok.eos_token_id]


def test_random_rows_follow_random_and_specials_are_kept(byte_level_replacement, tiny_llama_dir):
    out_tok, _, _ = byte_level_replacement
    src_model, src_tok = load(tiny_llama_dir)
    src_in = rows(src_model)[0].clone()
    tgt_tok = AutoTokenizer.from_pretrained(out_tok)
    n, copied, tokens = plan_rows(src_tok, tgt_tok, "Random")
    assert set(copied) == set(range(17))  # only the special tokens keep their rows under Random
    report = initialize_replacement_model(src_model, src_tok, tgt_tok, "Random", seed=5)
    emb = rows(src_model)[0]
    mean = src_in.to(torch.float64).mean(0)
    std = src_in.to(torch.float64).std(0, correction=0)
    z = torch.randn(len(tokens), 64, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
    ids = [t.id for t in tokens]
    torch.testing.assert_close(emb[ids].to(torch.float64), (mean + std * z).to(torch.float32).to(torch.float64))
    for i, s in copied.items():
        assert torch.equal(emb[i], src_in[s])
    assert report["rules"] == {"random": n - 17}


def test_focus_hand_vectors(sp_replacement, tmp_path):
    """FOCUS on hand fastText vectors: shared tokens copied; a new token whose vector equals one anchor's gets that
    anchor's row; one halfway between two anchors gets their mean (sparsemax weights 1/2, 1/2)."""
    from conftest import hand_rows, tiny_model

    src_dir, out_tok, _, _ = sp_replacement
    src_tok = AutoTokenizer.from_pretrained(src_dir)
    n_src = len(src_tok)
    emb = hand_rows(n_src, 8, 3, 17)
    model_dir = tiny_model(src_dir, tmp_path / "src", emb, None)
    model, src_tok = load(model_dir)
    tgt_tok = AutoTokenizer.from_pretrained(out_tok)
    tgt_vocab, src_vocab = tgt_tok.get_vocab(), src_tok.get_vocab()
    new = [p for p, _ in sorted(tgt_vocab.items(), key=lambda kv: kv[1]) if p not in src_vocab][:2]
    e = torch.eye(3, dtype=torch.float64)
    vectors = {"ก": e[0], "า": e[1], "ม": e[2], new[0]: e[0], new[1]: (e[1] + e[2]) / 2**0.5}
    resources = {"fasttext_vectors": {k: v.numpy() for k, v in vectors.items()}, "corpus": ["unused"]}
    report = initialize_replacement_model(model, src_tok, tgt_tok, "FOCUS", seed=1, resources=resources)
    w = rows(model)[0]
    for p in src_vocab:
        if p in tgt_vocab:
            assert torch.equal(w[tgt_vocab[p]], emb[src_vocab[p]])
    assert torch.equal(w[tgt_vocab[new[0]]], emb[src_vocab["ก"]])
    torch.testing.assert_close(w[tgt_vocab[new[1]]], (emb[src_vocab["า"]] + emb[src_vocab["ม"]]) / 2)
    assert report["fallbacks"]["input"]["no_fasttext_vector"] == report["vocab"]["new"] - 2
    assert report["vocab"]["rows"] == SIZE_SP


def test_expansion_only_methods_are_refused(byte_level_replacement, smollm2_tokenizer_dir):
    tok = AutoTokenizer.from_pretrained(byte_level_replacement[0])
    with pytest.raises(ValueError, match="'Align' is not defined for vocab: replace"):
        plan_rows(AutoTokenizer.from_pretrained(smollm2_tokenizer_dir), tok, "Align")


# ----------------------------------------------------------------------------------- 3. LAPT and evaluation, e2e


@pytest.mark.slow
def test_replaced_model_trains_and_evaluates(byte_level_replacement, tiny_llama_dir, thai_file, thai_lines, tmp_path):
    from workflow_scripts import lapt, perplexity

    out_tok = byte_level_replacement[0]
    report = initialize_replacement(tiny_llama_dir, out_tok, tmp_path / "init", "Mean", seed=42, pad_to_multiple_of=8)
    assert report["vocab"]["rows"] == SIZE_BYTE_LEVEL  # already a multiple of 8
    (tmp_path / "init.report.json").write_text(json.dumps(report), encoding="utf-8")
    hp = {"max_steps": 2, "batch_size": 2, "lr": 1e-3, "warmup_steps": 0}
    stats = lapt.train(
        tmp_path / "init",
        thai_file,
        tmp_path / "out",
        procedure="2x2LS",
        objective="mtp",
        seq_len=32,
        hparams=hp,
        checkpoint_dir=tmp_path / "ckpt",
    )
    assert stats["steps"] == 2
    before, after = model_state(tmp_path / "init"), model_state(tmp_path / "out")
    emb = "model.embed_tokens.weight"
    assert after[emb].shape == (SIZE_BYTE_LEVEL, 64) and not torch.equal(before[emb], after[emb])
    model, tok = load(tmp_path / "out")
    ppl = perplexity.evaluate_ppl(model, tok, thai_lines[:8], batch_size=4)
    values = {r["metric"]: r["value"] for r in ppl["records"]}
    assert 0 < values["bits_per_char"] < 20 and values["tokens_per_sentence"] > 0


# ------------------------------------------------------------------------------------------------- 4. the grid


def test_grid_accepts_replace_and_names_what_it_cannot_do():
    import copy

    import yaml
    from conftest import REPO

    from workflow_scripts.plan.checks import check_config
    from workflow_scripts.plan.grid import ConfigError, expand_grid

    paper = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text(encoding="utf-8"))
    table11 = {(model, lang, m.slug) for model, lang, m in expand_grid(paper) if m.vocab == "replace"}
    assert table11 == {
        ("gemma2", lang, f"{init}.replace.2x2LS.mtp.L512")
        for lang in ("my", "si", "te")
        for init in ("Random", "FOCUS", "Mean")
    }
    assert paper["tokenizer"]["replace_vocab_size"] == 32000
    base = yaml.safe_load((REPO / "configs" / "test.yaml").read_text(encoding="utf-8"))
    base["methods"] = [{"init": "Mean", "vocab": "replace", "k": 7}]
    base["tokenizer"]["replace_vocab_size"] = 800  # what 400 sentences of D can supply (32000 is refused)
    (m,) = check_config(copy.deepcopy(base), REPO)
    assert m.slug == "Mean.replace.2x2LS.clm.L64" and m.k is None
    assert m.cell("tiny", "th", 800)["aux_vocab_size"] == 800
    for entry, message in (
        ({"init": "Align", "vocab": "replace"}, "init 'Align' is not defined for vocab: replace"),
        ({"init": "Mean", "vocab": "replace", "procedure": "EEVE"}, "procedure EEVE trains the new rows"),
    ):
        base["methods"] = [entry]
        with pytest.raises(ConfigError, match=message):
            check_config(copy.deepcopy(base), REPO)


@pytest.mark.slow  # a Snakemake dry run: 2-6 s of CPU
def test_dry_run_plans_the_replace_rules(tmp_path):
    from conftest import snakemake, tiny_config

    methods = [{"init": "none", "procedure": "none"}, {"init": ["Mean", "FOCUS"], "vocab": "replace"}]
    cfg = tiny_config(tmp_path, methods=methods, tokenizer={"aux_vocab_size": 1000, "replace_vocab_size": 800})
    run = snakemake(["-n", "--configfile", str(cfg), "--quiet", "rules"], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", run.stdout + run.stderr, flags=re.M))
    assert counts["replace_tokenizer"] == "1" and counts["initialize_replace"] == "2" and counts["lapt"] == "2"
    assert "initialize" not in counts and "expand_tokenizer" not in counts


@pytest.mark.parametrize("name", [pytest.param("llama3", marks=pytest.mark.slow), "mistral"])
def test_real_family_replacement_loads_and_keeps_bos(name, tmp_path, thai_lines):
    """Mistral (SentencePiece BPE with a tokenizer.model whose options are mirrored) and Llama-3 (byte-level BPE with
    256 specials at 128000-128255): the replacement folder loads with AutoTokenizer, encodes as its tokenizer.json
    does, adds BOS (the post-processor's id rewritten) and round-trips Thai."""
    from conftest import require_tokenizer_package

    from workflow_scripts import tokenizer_assets

    require_tokenizer_package(name)
    src = tokenizer_assets.write_folder(name, tmp_path / "src")
    # Files of older hub folders that carry ids: they must follow the new ids.
    bos = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))["bos_token"]
    bos = bos if isinstance(bos, str) else bos["content"]
    src_bos = Tokenizer.from_file(str(src / "tokenizer.json")).token_to_id(bos)
    (src / "added_tokens.json").write_text(json.dumps({bos: src_bos}), encoding="utf-8")
    cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    entry = {
        "content": bos,
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }
    cfg["added_tokens_decoder"] = {str(src_bos): entry}
    (src / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    out = tmp_path / "replaced"
    tok, mapping, text = train_replacement_tokenizer(thai_lines, src, 2000)
    save_replacement(src, text, mapping, out)
    hf, src_hf = AutoTokenizer.from_pretrained(out), AutoTokenizer.from_pretrained(src)
    assert len(hf) == 2000 and sorted(hf.get_vocab().values()) == list(range(2000))
    assert hf.bos_token == src_hf.bos_token and hf.bos_token_id == hf.get_vocab()[hf.bos_token]
    n_special = 256 if name == "llama3" else 3
    assert len(mapping["special_tokens"]) == n_special and hf.bos_token_id < n_special
    new_bos = hf.get_vocab()[bos]
    assert json.loads((out / "added_tokens.json").read_text(encoding="utf-8")) == {bos: new_bos}
    saved_cfg = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert saved_cfg["added_tokens_decoder"] == {str(new_bos): entry}
    assert (src_bos, new_bos) == ((128000, 0) if name == "llama3" else (1, 1))
    for line in thai_lines[:100]:
        ids = hf.encode(line)
        assert ids == tok.encode(line).ids
        assert (ids[0] == hf.bos_token_id) == (src_hf.encode(line)[0] == src_hf.bos_token_id)
        assert hf.decode(ids, skip_special_tokens=True) == line


def test_results_table_says_replace():
    from workflow_scripts.tables import settings_text

    # from the cell's vocab field (grid.Method.cell), not from its slug
    cell = {"init": "Mean", "procedure": "2x2LS", "objective": "mtp", "seq_len": 512, "k": None}
    assert settings_text({**cell, "vocab": "replace", "aux_vocab_size": 32000}) == (
        "2x2 LS, mtp, sequence length 512; vocabulary replaced (32000 tokens)"
    )
    assert settings_text({**cell, "vocab": "expand", "k": 100, "aux_vocab_size": 50000}) == (
        "2x2 LS, mtp, sequence length 512; 100 new tokens (auxiliary vocabulary 50000)"
    )
