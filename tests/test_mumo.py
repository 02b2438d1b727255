"""MuMo (workflow_scripts/mumo): V_mono and FMM by hand, Multi-init, verification, decoding against the base model,
the saved folder, head-only training. Tiny random models; both tokenizer families where tokenization matters."""

from __future__ import annotations

import pytest
import torch
from conftest import sentencepiece_source
from transformers import AutoModelForCausalLM, AutoTokenizer

from workflow_scripts.mumo.decode import DecodeSettings, MuMoGenerator, mumo_generate
from workflow_scripts.mumo.head import MuMo, load_mumo, new_head, save_mumo
from workflow_scripts.mumo.train import HeadHparams, _batch, build_examples, mumo_loss, train_head
from workflow_scripts.mumo.vocab import (
    SourceSpeller,
    VMono,
    build_v_mono,
    fmm_segment,
    target_words,
    training_example,
)

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)

THAI_WORDS = ["สวัสดี", "สวัส", " ครับ", "ภาษา", "ไทย"]


@pytest.fixture(scope="module")
def smol(smollm2_tokenizer_dir):
    return AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    return AutoTokenizer.from_pretrained(sentencepiece_source(tmp_path_factory.mktemp("sp") / "tok"))


@pytest.fixture(scope="module")
def base(tiny_llama_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_llama_dir).eval()


def _mumo(base, tok, words, init="Multi", seed=0) -> MuMo:
    v_mono = build_v_mono(words, SourceSpeller(tok))
    return MuMo(base, new_head(base, v_mono, init, seed), v_mono, {"init": init}).eval()


def test_speller_byte_level_is_the_source_encoding(smol):
    speller = SourceSpeller(smol)
    assert (speller.lead, speller.lead_space, speller.mid_space) == ("", "Ġ", "Ġ")
    for text in ["สวัสดี", " ครับ", "hello world"]:
        assert speller.ids(text) == smol.encode(text, add_special_tokens=False)


def test_speller_sentencepiece_drops_the_start_of_text_marker(sp):
    speller = SourceSpeller(sp)
    assert speller.lead == "▁"
    # At a text start "กา" gets the dummy prefix (▁ก is one piece); inside text it does not.
    assert sp.convert_ids_to_tokens(speller.ids("กา", initial=True)) == ["▁ก", "า"]
    assert sp.convert_ids_to_tokens(speller.ids("กา")) == ["ก", "า"]
    assert sp.convert_ids_to_tokens(speller.ids(" กา")) == ["▁ก", "า"]
    assert sp.convert_ids_to_tokens(speller.ids("ข")) == ["<0xE0>", "<0xB8>", "<0x82>"]  # byte fallback


@pytest.mark.parametrize("family", ["byte_level", "sentencepiece"])
def test_fmm_longest_match_wins_and_unknown_falls_back(family, smol, sp):
    tok = smol if family == "byte_level" else sp
    speller = SourceSpeller(tok)
    v_mono = build_v_mono(["กา", "กาม", "มา", "x"], speller)
    assert "x" not in v_mono.words  # one source token: already in V_s
    units = fmm_segment("กามากา ok", v_mono, speller)
    assert [(u.text, u.word) for u in units] == [("กาม", 1), ("า", None), ("กา", 0), (" ok", None)]
    assert units[1].source_ids == tuple(speller.ids("า", initial=False))
    assert units[3].source_ids == tuple(speller.ids(" ok"))
    assert [(u.text, u.word) for u in fmm_segment("มากา", v_mono, speller)] == [("มา", 2), ("กา", 0)]
    first = fmm_segment("ok กา", v_mono, speller)[0]
    assert first.source_ids == tuple(speller.ids("ok ", initial=True))


def test_training_example_labels_words_at_their_first_token():
    v_mono = VMono(("AB",), ((5, 6),))
    units = [
        *fmm_segment("xAB", v_mono, _FakeSpeller()),
    ]
    ids, labels = training_example(units, n_multi=100, bos_id=1)
    assert ids == [1, ord("x"), 5, 6]
    assert labels == [ord("x"), 100, -100, -100]


class _FakeSpeller:
    def ids(self, span: str, initial: bool = False) -> list[int]:
        return [ord(c) for c in span]


def test_target_words_filters_script_and_bytes(tmp_path, smol):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "ก": 1, "า": 2, "a": 3, "กา": 4, "Ġกา": 5, "aก": 6, "à¸": 7}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    from conftest import u

    vocab = {"<unk>": 0, u("ก".encode()): 1, u("า".encode()): 2, "a": 3, u("กา".encode()): 4}
    vocab |= {u(" กา".encode()): 5, u("aก".encode()): 6, u("ก".encode()[:2]): 7}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.save(str(tmp_path / "tokenizer.json"))
    assert target_words(tmp_path, "th") == ["ก", "า", "กา", " กา"]  # "a", "aก" off-script, partial UTF-8 dropped


def test_multi_init_is_the_mean_of_source_head_rows(untied_llama_dir, smol):
    model = AutoModelForCausalLM.from_pretrained(untied_llama_dir)
    mumo = _mumo(model, smol, THAI_WORDS)
    lm_head = model.lm_head.weight.detach()
    for j, ids in enumerate(mumo.v_mono.spellings):
        expected = sum(lm_head[i] for i in ids) / len(ids)
        torch.testing.assert_close(mumo.head.out.weight[j], expected)
    ids = mumo.v_mono.spellings[0]
    assert len(ids) > 1 and ids == tuple(smol.encode(mumo.v_mono.words[0], add_special_tokens=False))
    # FFN starts as identity: head logits are the rows applied to h, like the source head's.
    h = torch.randn(3, lm_head.shape[1])
    torch.testing.assert_close(mumo.head(h), h @ mumo.head.out.weight.T)
    random = _mumo(model, smol, THAI_WORDS, init="Random")
    assert not torch.allclose(random.head.out.weight, mumo.head.out.weight)


def _sigma(base, context: list[int], cand: list[int]) -> float:
    """Eq. 5 by a full forward pass without cache: mean log p_multi of the candidate's source tokens."""
    with torch.no_grad():
        logits = base(torch.tensor([context + cand])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return float(sum(logp[len(context) - 1 + j, t] for j, t in enumerate(cand)) / len(cand))


def test_verification_picks_the_highest_length_normalized_logprob(base, smol):
    mumo = _mumo(base, smol, THAI_WORDS)
    with torch.no_grad():  # make every word a top-10 candidate: large head logits
        mumo.head.out.weight.mul_(0).add_(torch.randn_like(mumo.head.out.weight) * 50)
    context = smol.encode("ภาษาไทย", add_special_tokens=False)
    with torch.no_grad():
        h, _ = mumo.hidden(torch.tensor([context]))
        base_logits, head_logits = mumo.logits(h[:, -1])
    cands = torch.topk(torch.cat([base_logits, head_logits], -1)[0], 10).indices.tolist()
    assert any(c >= mumo.n_multi for c in cands) and any(c < mumo.n_multi for c in cands)
    sigmas = {c: _sigma(base, context, mumo.source_ids(c)) for c in cands}
    best = max(sigmas, key=sigmas.get)
    out = mumo_generate(mumo, context, DecodeSettings(k=10), max_new_tokens=1)
    assert out.steps[0] == best
    # The emitted word's cached state continues correctly: the second step equals a fresh run on the longer context.
    two = mumo_generate(mumo, context, DecodeSettings(k=10), max_new_tokens=20)
    fresh = mumo_generate(mumo, context + mumo.source_ids(two.steps[0]), DecodeSettings(k=10), max_new_tokens=1)
    assert two.steps[1] == fresh.steps[0]


@pytest.mark.parametrize("settings", [DecodeSettings(k=1, verify=False), DecodeSettings(k=10, verify=True)])
def test_empty_v_mono_equals_base_greedy(base, smol, settings):
    mumo = _mumo(base, smol, [])
    assert len(mumo.v_mono) == 0
    prompt = smol.encode("Translate: hello world", add_special_tokens=False)
    expected = base.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False, eos_token_id=None)
    out = mumo_generate(mumo, prompt, settings, max_new_tokens=12)
    assert out.source_ids == expected[0, len(prompt) :].tolist()
    assert len(out.steps) == 12


def test_k1_without_verification_equals_base_greedy_even_with_words(base, smol):
    mumo = _mumo(base, smol, THAI_WORDS)
    n = len(mumo.v_mono)
    mumo.head.forward = lambda h: torch.full((*h.shape[:-1], n), -1e4)  # words never win the argmax
    prompt = smol.encode("ภาษา", add_special_tokens=False)
    expected = base.generate(torch.tensor([prompt]), max_new_tokens=10, do_sample=False, eos_token_id=None)
    out = mumo_generate(mumo, prompt, DecodeSettings(k=1, verify=False), max_new_tokens=10)
    assert out.source_ids == expected[0, len(prompt) :].tolist()


def test_decoded_text_is_the_fed_back_source_ids(base, smol):
    mumo = _mumo(base, smol, THAI_WORDS)
    with torch.no_grad():
        mumo.head.out.weight.mul_(0).add_(torch.randn_like(mumo.head.out.weight) * 50)
    gen = MuMoGenerator(mumo, smol, DecodeSettings(k=10, verify=False))
    prompt = torch.tensor([[smol.pad_token_id or 0] * 2 + smol.encode("ภาษา", add_special_tokens=False)])
    mask = torch.tensor([[0, 0] + [1] * (prompt.shape[1] - 2)])
    seqs = gen.generate(prompt, attention_mask=mask, max_new_tokens=16).sequences
    out = gen.outputs[-1]
    assert any(s >= mumo.n_multi for s in out.steps)  # words were emitted
    fed = [t for s in out.steps for t in mumo.source_ids(s)][:16]
    assert seqs[0, prompt.shape[1] :].tolist() == fed
    assert smol.decode(seqs[0, prompt.shape[1] :]) == "".join(smol.decode(mumo.source_ids(s)) for s in out.steps)


@pytest.mark.parametrize("sample", [False, True])
def test_save_reload_gives_identical_outputs(base, smol, tiny_llama_dir, tmp_path, sample):
    mumo = _mumo(base, smol, THAI_WORDS)
    with torch.no_grad():
        mumo.head.gate.weight.normal_()
        mumo.head.down.weight.normal_()
    save_mumo(mumo, tmp_path / "mumo", tiny_llama_dir)
    again, tok = load_mumo(tmp_path / "mumo", device="cpu")
    assert again.v_mono == mumo.v_mono and tok.vocab_size == smol.vocab_size
    prompt = smol.encode("ภาษาไทย", add_special_tokens=False)
    settings = DecodeSettings(sample=sample, seed=3)
    a = mumo_generate(mumo, prompt, settings, max_new_tokens=12)
    b = mumo_generate(again, prompt, settings, max_new_tokens=12)
    assert a.steps == b.steps and a.source_ids == b.source_ids


def test_training_moves_only_the_head_and_lowers_the_loss(tiny_llama_dir, smol, thai_lines):
    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    mumo = _mumo(model, smol, ["การ", "ที่", "เปลี่ยน", "บันทึก", "ข้อความ", " คุณ", "แปลง"])
    examples, stats = build_examples(mumo, smol, thai_lines[:40], seq_len=64)
    assert stats["fmm_words"] > 0 and stats["examples"] == 40
    ids, labels = _batch(examples, "cpu")
    labels[labels < mumo.n_multi] = -100  # the loss on the words' positions: what the head can change
    with torch.no_grad():
        start = mumo_loss(mumo, ids, labels).item()
    curve = train_head(mumo, examples, HeadHparams(max_steps=12, batch_size=8, lr=1e-2, warmup_steps=2))
    assert len(curve) == 12 and curve[1]["lr"] == pytest.approx(1e-2)  # warmup 2 steps, then linear decay
    with torch.no_grad():
        assert mumo_loss(mumo, ids, labels).item() < start - 0.5
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


# ---------------------------------------------------------------------------------------------------------------------
# The grid, the evaluation job and the speed job
# ---------------------------------------------------------------------------------------------------------------------


def test_grid_method_slugs_tasks_and_config_errors():
    import copy

    import yaml

    from tests.conftest import REPO
    from workflow_scripts.plan.checks import check_config, schema_errors
    from workflow_scripts.plan.grid import ConfigError, expand_methods, tasks_of

    entries = [{"procedure": "MuMo", "posthoc": ["none", "noverify"]}, {"procedure": "MuMo", "init": "Random"}]
    methods = expand_methods(entries, {"procedure": "2x2LS"})
    assert [(m.slug, m.label, m.objective, m.seq_len, m.k, m.expands) for m in methods] == [
        ("MuMo", "MuMo", None, None, None, False),
        ("MuMo.noverify", "MuMo w/o verification", None, None, None, False),
        ("MuMo.Random", "MuMo (Random-init)", None, None, None, False),
    ]
    assert tasks_of(methods[0], ["mt", "ppl", "speed", "mc", "sum"]) == ["mt", "speed", "sum"]
    base = yaml.safe_load((REPO / "configs" / "test.yaml").read_text())
    for entry, message in [
        ({"init": "Mean", "procedure": "MuMo"}, "MuMo keeps the source vocabulary and model; its init is its head's"),
        ({"init": "none", "posthoc": "noverify"}, "is MuMo's decoding ablation"),
    ]:
        config = copy.deepcopy(base)
        config["methods"].append(entry)
        assert schema_errors(config, REPO / "schemas" / "config.schema.yaml") == []
        with pytest.raises(ConfigError, match=message):
            check_config(config, REPO)


@pytest.fixture(scope="module")
def mumo_dir(base, smol, tiny_llama_dir, tmp_path_factory):
    mumo = _mumo(base, smol, THAI_WORDS)
    with torch.no_grad():
        mumo.head.out.weight.mul_(0).add_(torch.randn_like(mumo.head.out.weight) * 50)
    out = tmp_path_factory.mktemp("mumo") / "head"
    save_mumo(mumo, out, tiny_llama_dir)
    return out


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory, thai_lines):
    from conftest import l10n_pairs

    path = tmp_path_factory.mktemp("pairs") / "mt.tsv"
    path.write_text("".join(f"{en}\t{th}\n" for en, th in l10n_pairs("th")[:3]), encoding="utf-8")
    return path


@pytest.mark.parametrize("verify", [True, False])
def test_teacher_forced_steps_continue_the_forced_text(base, smol, verify):
    """Each forced step does a decoding step's work, then continues with the reference's unit: after all of them
    the hidden state is that of a plain forward pass over prompt + reference, one step per FMM unit."""
    from workflow_scripts.mumo.decode import _choose
    from workflow_scripts.speed.mumo import MuMoDecoder

    mumo = _mumo(base, smol, THAI_WORDS)
    with torch.no_grad():  # words among the top 10, so verification batches several candidates
        mumo.head.out.weight.mul_(0).add_(torch.randn_like(mumo.head.out.weight) * 50)
    decoder = MuMoDecoder(mumo, smol, DecodeSettings(k=10, verify=verify))
    prompt = smol.encode("Translate: hello", add_special_tokens=False)
    target = smol.encode(" สวัสดี ครับ ภาษาไทย!", add_special_tokens=False)
    units = decoder.units(target)
    words = [mumo.v_mono.words[u - mumo.n_multi] for u in units if u >= mumo.n_multi]
    assert words == [w for w in ["สวัสดี", " ครับ", "ภาษา", "ไทย"] if w in mumo.v_mono.words]  # longest match
    assert len(words) >= 3
    assert decoder.own_tokens(target) == len(units) < len(target)
    fed = [t for u in units for t in mumo.source_ids(u)]
    assert smol.decode(fed) == smol.decode(target)
    with torch.no_grad():
        h, cache = mumo.hidden(torch.tensor([prompt]), use_cache=True)
        h_last, generator = h[:, -1], torch.Generator().manual_seed(0)
        for u in units:
            choice, h_last, cache, _ = _choose(mumo, h_last, cache, decoder.settings, generator, forced=u)
            assert choice == u
        plain, _ = mumo.hidden(torch.tensor([prompt + fed]))
    torch.testing.assert_close(h_last, plain[:, -1], atol=1e-4, rtol=1e-4)
    forced = decoder.teacher_force(prompt, target)
    assert forced.steps == len(units) and forced.seconds > 0 and 0 <= forced.matches <= len(units)


def _sliding_window_model(kind: str, vocab_size: int):
    """A tiny random model whose cache holds sliding-window layers of window 4: Mistral (all layers) or Gemma-2
    (alternating with full attention, and a final logit soft-capping)."""
    from transformers import Gemma2Config, Gemma2ForCausalLM, MistralConfig, MistralForCausalLM

    common = {"vocab_size": vocab_size, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
    common |= {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "sliding_window": 4}
    torch.manual_seed(0)
    if kind == "mistral":
        return MistralForCausalLM(MistralConfig(**common)).eval()
    config = Gemma2Config(**common, final_logit_softcapping=3.0, attn_implementation="eager")
    return Gemma2ForCausalLM(config).eval()


@pytest.mark.parametrize("kind", ["mistral", "gemma2"])
def test_sliding_window_caches_branch_and_continue_like_a_plain_forward(smol, kind):
    """Verification branches a cache with sliding-window layers (Mistral, Gemma-2) and continues the chosen row:
    forced through words and single tokens past the window, the state equals a plain forward pass; the source
    logits are the model's own, soft-capping included."""
    from workflow_scripts.mumo.decode import _choose

    model = _sliding_window_model(kind, len(smol))
    mumo = _mumo(model, smol, THAI_WORDS)
    with torch.no_grad():
        mumo.head.out.weight.mul_(0).add_(torch.randn_like(mumo.head.out.weight) * 50)
    prompt = smol.encode("Translate: hello", add_special_tokens=False)
    target = smol.encode(" สวัสดี ครับ ภาษาไทย!", add_special_tokens=False)
    from workflow_scripts.speed.mumo import MuMoDecoder

    units = MuMoDecoder(mumo, smol, DecodeSettings()).units(target)
    fed = [t for u in units for t in mumo.source_ids(u)]
    assert len(prompt) + len(fed) > 3 * 4  # well past the window
    with torch.no_grad():
        h, cache = mumo.hidden(torch.tensor([prompt]), use_cache=True)
        assert any(getattr(layer, "is_sliding", False) for layer in cache.layers)
        h_last, generator = h[:, -1], torch.Generator().manual_seed(0)
        for u in units:
            _, h_last, cache, _ = _choose(mumo, h_last, cache, DecodeSettings(k=10), generator, forced=u)
        plain, _ = mumo.hidden(torch.tensor([prompt + fed]))
        torch.testing.assert_close(h_last, plain[:, -1], atol=1e-4, rtol=1e-4)
        own = model(torch.tensor([prompt + fed])).logits[:, -1].float()
        torch.testing.assert_close(mumo.base_logits(h_last), own, atol=1e-4, rtol=1e-4)
        assert all(layer.keys.shape[-2] <= 3 for layer in cache.layers if getattr(layer, "is_sliding", False))
    out = mumo_generate(mumo, prompt, DecodeSettings(k=10), max_new_tokens=20)
    assert len(out.source_ids) == 20


@pytest.mark.slow  # the speed command line: 2-6 s of CPU
def test_speed_step_times_a_mumo_folder_paired_with_source(mumo_dir, tiny_llama_dir, tmp_path):
    """The speed step (python -m workflow_scripts.speed) on a MuMo folder: the same records as every method, own
    tokens = MuMo steps, the bound = source tokens ÷ MuMo steps, Source teacher-forced next to it."""
    import json

    from workflow_scripts.speed.__main__ import main

    out, pairs = tmp_path / "speed.json", tmp_path / "mt.tsv"
    pairs.write_text("Hello, Thai language.\tสวัสดี ภาษาไทย\nThai\tไทย ครับ\n", encoding="utf-8")
    args = ["--model", str(mumo_dir), "--source-tokenizer", str(tiny_llama_dir), "--pairs", str(pairs)]
    args += ["--lang", "th", "--n", "2", "--max-new-tokens", "8", "--repeats", "2", "--batch-size", "1", "--paired"]
    main([*args, "--mumo-k", "4", "--cell", '{"method": "MuMo"}', "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["cell"] == {"method": "MuMo"}
    assert result["details"]["mumo"]["k"] == 4 and result["details"]["mumo"]["verify"] is True
    rec = {(r["mode"], r["metric"]): r for r in result["records"]}
    for mode in ("generate", "teacher_forced"):
        assert len(rec[mode, "chars_per_second"]["repeats"]) == 2
    tf = {m: rec["teacher_forced", m]["value"] for m in ("total_tokens", "total_source_tokens", "model_steps")}
    assert tf["model_steps"] == tf["total_tokens"] < tf["total_source_tokens"]  # words: fewer steps than tokens
    assert rec["teacher_forced", "token_ratio_bound"]["value"] == pytest.approx(
        tf["total_source_tokens"] / tf["total_tokens"]
    )
    assert len(rec["teacher_forced", "paired_speedup"]["repeats"]) == 2


@pytest.mark.slow
def test_harness_mt_on_a_mumo_folder(mumo_dir, pairs_file, tmp_path):
    """LightEval's mt task (prompt, stop at newline, chrF) runs the MuMo decoder; log-likelihood tasks are refused."""
    import json

    from workflow_scripts.harness.__main__ import main

    for extra in ([], ["--mumo-no-verify"]):
        out = tmp_path / f"mt{len(extra)}.json"
        args = ["--task", "mt", "--lang", "th", "--model", str(mumo_dir), "--pairs", str(pairs_file), "--n", "2"]
        args += ["--max-new-tokens", "6", "--batch-size", "2", "--cell", "{}", "--out", str(out)]
        main([*args, "--predictions", str(tmp_path / "p.tsv"), *extra])
        result = json.loads(out.read_text())
        assert {r["metric"] for r in result["records"]} >= {"chrF"}, result
        assert result["details"]["n_items"] == 2
    with pytest.raises(SystemExit, match="not applicable"):
        args = ["--task", "mc", "--lang", "th", "--model", str(mumo_dir), "--data", str(tmp_path), "--cell", "{}"]
        main([*args, "--out", str(tmp_path / "mc.json")])


def test_loss_equals_cross_entropy_over_the_concatenated_logits(base, smol, thai_lines):
    mumo = _mumo(base, smol, ["การ", "ที่", "เปลี่ยน", "บันทึก", "ข้อความ"])
    examples, _ = build_examples(mumo, smol, thai_lines[:4], seq_len=32)
    ids, labels = _batch(examples, "cpu")
    with torch.no_grad():
        h, _ = mumo.hidden(ids)
        logits = torch.cat(mumo.logits(h), -1)
        expected = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        assert (labels >= mumo.n_multi).any()
        torch.testing.assert_close(mumo_loss(mumo, ids, labels), expected)


def test_nucleus_keeps_the_smallest_set_reaching_top_p():
    from workflow_scripts.mumo.decode import _nucleus

    kept = _nucleus(torch.tensor([0.2, 0.5, 0.3]), 0.7)  # 0.5 < 0.7, 0.5 + 0.3 >= 0.7: keep those two
    torch.testing.assert_close(kept, torch.tensor([0.0, 0.625, 0.375]))


def test_target_words_of_a_sentencepiece_tokenizer(tmp_path):
    folder = sentencepiece_source(tmp_path / "sp")
    # vocabulary: <unk> <s> </s>, <0x00>..<0xFF>, ▁, ก, า, ม, ▁ก: specials, byte pieces and the bare "▁" are not words
    assert target_words(folder, "th") == ["ก", "า", "ม", " ก"]


def test_sentencepiece_family_decodes_to_its_fed_back_ids(tmp_path, sp):
    from conftest import hand_rows, tiny_model

    tok_dir = sentencepiece_source(tmp_path / "tok")
    n = len(sp)
    model_dir = tiny_model(tok_dir, tmp_path / "model", hand_rows(n, 16, 3, 7) / 7, None)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    mumo = _mumo(model, sp, ["กา", "มา", " กาม"])
    assert sp.convert_ids_to_tokens(list(mumo.v_mono.spellings[0])) == ["ก", "า"]  # no start-of-text "▁"
    # " กาม" always the MuMo argmax: without verification every step emits it
    mumo.head.forward = lambda h: torch.tensor([-100.0, -100.0, 100.0]).expand(*h.shape[:-1], 3)
    prompt = sp.encode("กา", add_special_tokens=False)
    for verify in (True, False):
        out = mumo_generate(mumo, prompt, DecodeSettings(verify=verify), max_new_tokens=12)
        fed = [t for s in out.steps for t in mumo.source_ids(s)][:12]
        assert out.source_ids == fed and len(fed) == 12
    assert out.steps == [mumo.n_multi + 2] * 4  # 4 words of 3 tokens (▁ก, า, ม)
    assert sp.decode(prompt + fed) == "กา กาม กาม กาม กาม"


@pytest.mark.e2e
def test_mumo_cells_run_through_the_workflow(tmp_path):
    """MuMo, its no-verification ablation and Random-init as grid methods on the tiny model: one head per init, mt and
    speed (teacher-forced, paired with Source) for every cell, the tables rows labeled; no ppl for MuMo (mc, which
    MuMo skips the same way, is left out of the tasks: its proxy items and Source's mc would only add run time)."""
    import pandas as pd
    import yaml

    from tests.conftest import snakemake, tiny_config

    config = tiny_config(
        tmp_path,
        methods=[
            {"init": "none", "procedure": "none"},
            {"procedure": "MuMo", "posthoc": ["none", "noverify"]},
            {"procedure": "MuMo", "init": "Random"},
        ],
        mumo={"max_steps": 2, "batch_size": 4, "warmup_steps": 0, "seq_len": 32, "k": 3},
    )
    settings = yaml.safe_load(config.read_text())
    # As configs/demo-full.yaml runs MuMo: Source's ppl, mt, mc and speed in one job, MuMo cells in their own rules.
    settings["evaluation"]["one_job_per_cell"] = True
    settings["evaluation"]["tasks"] = ["mt", "ppl", "speed"]
    # The speed records checked are at batch size 1: one timed pass, no warm-up and no larger batch (4 speed jobs).
    settings["evaluation"]["speed"] |= {"batch_size": 1, "repeats": 1, "warmup": 0}
    config.write_text(yaml.safe_dump(settings))
    run = snakemake(["--cores", "2", "--configfile", str(config)], tmp_path)
    assert run.returncode == 0, run.stderr[-4000:]
    for init in ("Multi", "Random"):
        assert (tmp_path / f"results/default/tiny/th/mumo/{init}-init/head/head.safetensors").is_file()
    slugs = ("MuMo", "MuMo.noverify", "MuMo.Random")
    for slug in slugs:
        assert not (tmp_path / f"results/default/tiny/th/{slug}/eval/ppl.json").exists()
    frame = pd.read_csv(tmp_path / "results/default/tables/results.csv")
    rows = frame[frame["method"].isin(slugs)]
    assert set(rows["label"]) == {"MuMo", "MuMo w/o verification", "MuMo (Random-init)"}
    for slug in slugs:
        cell = rows[rows["method"] == slug]
        # speed records carry the task whose prompts were timed (mt); the speed-up is over Source on the same prompts
        metrics = set(zip(cell["task"], cell["metric"], strict=True))
        assert {("mt", "chrF"), ("mt", "chars_per_second"), ("mt", "speedup_chars@generate.greedy.b1")} <= metrics
        assert ("mt", "paired_speedup@teacher_forced.greedy.b1") in metrics
