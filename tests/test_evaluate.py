"""mt generation and chrF and held-out perplexity on the tiny random Llama (mechanics only)."""

from __future__ import annotations

import json
import math

import pytest
import sacrebleu
import torch

from workflow_scripts import evaluate
from workflow_scripts.evaluate import generate, load_model, mt_prompt

NEWLINE = 198  # SmolLM2's "\n" token

PAIRS = [
    ("Open the file.", "เปิดแฟ้ม"),
    ("Save the document as a new file.", "บันทึกเอกสารเป็นแฟ้มใหม่"),
    ("The selected cells are protected.", "เซลล์ที่เลือกถูกป้องกัน"),
    ("Insert a new row above the current one.", "แทรกแถวใหม่ด้านบนแถวปัจจุบัน"),
]


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    torch.set_num_threads(1)
    return load_model(tiny_llama_dir)


def force_tokens(model, scripts: list[list[int]]):
    """Make the model emit ``scripts[row][step]`` at each generation step (the last entry repeats); returns the hooks.

    A forward pre-hook on the model sees the prompt (more than one input position) and resets the step counter; a hook
    on the LM head overwrites the last position's logits.
    """
    state = {"step": 0, "calls": 0}

    def pre(module, args, kwargs):
        if kwargs["input_ids"].shape[1] > 1:
            state["step"] = 0

    def post(module, args, out):
        step = state["step"]
        state["step"] += 1
        state["calls"] += 1
        out = out.clone()
        for row in range(out.shape[0]):  # beam search has batch x beams rows: a single script applies to all
            script = scripts[row % len(scripts)]
            out[row, -1, :] = -1e4
            out[row, -1, script[min(step, len(script) - 1)]] = 1e4
        return out

    hooks = [model.register_forward_pre_hook(pre, with_kwargs=True), model.lm_head.register_forward_hook(post)]
    return hooks, state


def test_prompt_template():
    assert (
        mt_prompt("Open the file.", "th")
        == "Translate the following sentence from English to Thai.\nEnglish: Open the file.\nThai:"
    )
    with pytest.raises(ValueError, match="known codes"):
        mt_prompt("x", "xx")


def test_newline_mask_marks_newline_tokens(tiny):
    model, tok = tiny
    mask = evaluate.newline_token_mask(tok, model.get_output_embeddings().weight.shape[0])
    hello = tok(" Hello", add_special_tokens=False).input_ids[0]
    assert mask[NEWLINE] and mask[tok.convert_tokens_to_ids("ĊĊ")]  # "\n" and "\n\n"
    assert not mask[hello]


def test_generation_stops_at_first_newline_per_row(tiny):
    model, tok = tiny
    hello, world, more = (tok(w, add_special_tokens=False).input_ids[0] for w in (" Hello", " world", " more"))
    scripts = [[hello, world, NEWLINE, more], [world, more, hello, world, more, NEWLINE, hello]]
    hooks, state = force_tokens(model, scripts)
    try:
        out = generate(model, tok, ["Short prompt.", "A somewhat longer prompt than the first one."], max_new_tokens=20)
    finally:
        for h in hooks:
            h.remove()
    assert [g.text for g in out] == ["Hello world", "world more Hello world more"]
    assert [g.new_tokens for g in out] == [3, 6]  # up to and including the newline token
    assert state["calls"] == 6  # generation ended once both rows had a newline, not at max_new_tokens
    assert [g.prompt_tokens for g in out] == [
        len(tok(p).input_ids) for p in ["Short prompt.", "A somewhat longer prompt than the first one."]
    ]


def test_stop_length_ignores_newlines(tiny):
    model, tok = tiny
    hooks, _ = force_tokens(model, [[NEWLINE]])
    try:
        (out,) = generate(model, tok, ["Prompt."], max_new_tokens=5, stop="length")
    finally:
        for h in hooks:
            h.remove()
    assert out.new_tokens == 5 and out.raw_text == "\n" * 5 and out.text == ""


def test_paper_decoding_is_seeded_and_stops_at_newline(tiny):
    model, tok = tiny
    pairs = PAIRS[:2]
    runs = [
        evaluate.evaluate_mt(model, tok, pairs, "th", max_new_tokens=6, decoding="paper", seed=s) for s in (1, 1, 2)
    ]
    texts = [[p[2] for p in r["predictions"]] for r in runs]
    assert texts[0] == texts[1] and texts[0] != texts[2]
    assert runs[0]["details"]["decoding_parameters"]["num_beams"] == 5
    hello = tok(" Hello", add_special_tokens=False).input_ids[0]
    hooks, _ = force_tokens(model, [[hello, hello, NEWLINE, hello]])
    try:
        out = generate(model, tok, [mt_prompt(en, "th") for en, _ in pairs], max_new_tokens=10, decoding="paper")
    finally:
        for h in hooks:
            h.remove()
    assert [(g.text, g.new_tokens) for g in out] == [("Hello Hello", 3)] * 2


def test_greedy_batch_equals_single(tiny):
    model, tok = tiny
    prompts = [mt_prompt(en, "th") for en, _ in PAIRS]
    batched = generate(model, tok, prompts, max_new_tokens=12)
    single = [generate(model, tok, [p], max_new_tokens=12)[0] for p in prompts]
    assert [g.raw_text for g in batched] == [g.raw_text for g in single]
    assert [g.new_tokens for g in batched] == [g.new_tokens for g in single]


def test_mt_chrf_is_mean_sentence_chrf(tiny):
    model, tok = tiny
    # Row 0 reproduces its reference exactly, row 1 half of it, rows 2-3 an unrelated English word.
    half = PAIRS[1][1][: len(PAIRS[1][1]) // 2]
    wanted = [PAIRS[0][1], half, "Hello", "Hello"]
    scripts = [[*tok(" " + w, add_special_tokens=False).input_ids, NEWLINE] for w in wanted]
    hooks, _ = force_tokens(model, scripts)
    try:
        result = evaluate.evaluate_mt(model, tok, PAIRS, "th", max_new_tokens=40, batch_size=4)
    finally:
        for h in hooks:
            h.remove()
    assert [p[2] for p in result["predictions"]] == wanted
    expected = [sacrebleu.sentence_chrf(h, [r]).score for h, (_, r) in zip(wanted, PAIRS, strict=True)]
    assert expected[0] == pytest.approx(100.0) and 0 < expected[1] < 100
    values = {r["metric"]: r["value"] for r in result["records"]}
    assert values["chrF"] == pytest.approx(sum(expected) / 4)
    corpus = sacrebleu.corpus_chrf(wanted, [[r for _, r in PAIRS]]).score
    assert values["chrF_corpus"] == pytest.approx(corpus)
    assert values["chrF_corpus"] != pytest.approx(values["chrF"])
    assert result["details"]["empty_hypotheses"] == 0


def test_ppl_prefix_token(tiny):
    _, tok = tiny
    (ids,) = evaluate.tokenize_for_ppl(tok, ["สวัสดี"])
    # SmolLM2's tokenizer adds no BOS: its BOS is prepended as context, so every text token is predicted.
    assert ids == [tok.bos_token_id, *tok("สวัสดี").input_ids]


def test_ppl_batched_equals_unbatched(tiny):
    model, tok = tiny
    sentences = [th for _, th in PAIRS] + ["A", "ข้อความสั้น ๆ"]
    ids = evaluate.tokenize_for_ppl(tok, sentences)
    batched = evaluate.sentence_nll(model, ids, batch_size=3)
    single = evaluate.sentence_nll(model, ids, batch_size=1)
    assert batched == pytest.approx(single, rel=1e-5, abs=1e-5)
    # Hand check on a 2-token sequence: NLL of the second token given the first.
    a, b = ids[4][:2]
    with torch.inference_mode():
        logp = torch.log_softmax(model(torch.tensor([[a]])).logits[0, -1].float(), dim=-1)
    assert evaluate.sentence_nll(model, [[a, b]])[0] == pytest.approx(-logp[b].item(), rel=1e-5)


def test_ppl_records(tiny):
    model, tok = tiny
    sentences = [th for _, th in PAIRS]
    result = evaluate.evaluate_ppl(model, tok, sentences, batch_size=2)
    v = {r["metric"]: r["value"] for r in result["records"]}
    ids = evaluate.tokenize_for_ppl(tok, sentences)
    total = sum(evaluate.sentence_nll(model, ids, batch_size=1))
    tokens = sum(len(x) - 1 for x in ids)
    chars = sum(len(s) for s in sentences)
    assert v["nll_per_char"] == pytest.approx(total / chars, rel=1e-5)
    assert v["bits_per_char"] == pytest.approx(v["nll_per_char"] / math.log(2))
    assert v["perplexity"] == pytest.approx(math.exp(total / tokens), rel=1e-5)
    assert v["tokens_per_sentence"] == tokens / 4
    # A random 49K-vocabulary model is close to uniform: perplexity in the tens of thousands.
    assert 1e3 < v["perplexity"] < 1e6


def test_clis(tiny_llama_dir, tmp_path):
    pairs = tmp_path / "mt.tsv"
    pairs.write_text("".join(f"{en}\t{th}\n" for en, th in PAIRS), encoding="utf-8")
    text = tmp_path / "heldout.txt"
    text.write_text("".join(f"{th}\n" for _, th in PAIRS), encoding="utf-8")
    cell = {"model": "tiny", "language": "th", "method": "source", "label": "Source"}
    common = ["--model", str(tiny_llama_dir), "--n", "3", "--cell", json.dumps(cell), "--threads", "1"]
    evaluate.main(["mt", *common, "--pairs", str(pairs), "--lang", "th", "--max-new-tokens", "4", "--batch-size", "2",
                   "--out", str(tmp_path / "mt.json"), "--predictions", str(tmp_path / "preds.tsv"),
                   "--data-label", "stand-in"])  # fmt: skip
    evaluate.main(["ppl", *common, "--text", str(text), "--out", str(tmp_path / "ppl.json")])
    mt = json.loads((tmp_path / "mt.json").read_text())
    assert mt["cell"] == cell and mt["details"]["data_label"] == "stand-in" and mt["details"]["n"] == 3
    assert [r["metric"] for r in mt["records"]] == ["chrF", "chrF_corpus"]
    preds = (tmp_path / "preds.tsv").read_text(encoding="utf-8").splitlines()
    assert preds[0] == "source\treference\thypothesis" and len(preds) == 4
    assert preds[1].split("\t")[:2] == list(PAIRS[0])
    ppl = json.loads((tmp_path / "ppl.json").read_text())
    assert [r["metric"] for r in ppl["records"]] == [
        "perplexity",
        "nll_per_char",
        "bits_per_char",
        "tokens_per_sentence",
    ]


def test_read_pairs_rejects_malformed(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("one\ttwo\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:2"):
        evaluate.read_pairs(bad)
    assert evaluate.read_pairs(bad, n=1) == [("one", "two")]
