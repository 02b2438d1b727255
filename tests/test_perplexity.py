"""Held-out perplexity on the tiny random Llama (mechanics only)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from workflow_scripts import perplexity
from workflow_scripts.inference import load_model

THAI = ["เปิดแฟ้ม", "บันทึกเอกสารเป็นแฟ้มใหม่", "เซลล์ที่เลือกถูกป้องกัน", "แทรกแถวใหม่ด้านบนแถวปัจจุบัน"]


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    torch.set_num_threads(1)
    return load_model(tiny_llama_dir)


def test_ppl_prefix_token(tiny):
    _, tok = tiny
    (ids,) = perplexity.tokenize_for_ppl(tok, ["สวัสดี"])
    # SmolLM2's tokenizer adds no BOS: its BOS is prepended as context, so every text token is predicted.
    assert ids == [tok.bos_token_id, *tok("สวัสดี").input_ids]


def test_ppl_batched_equals_unbatched(tiny):
    model, tok = tiny
    sentences = [*THAI, "A", "ข้อความสั้น ๆ"]
    ids = perplexity.tokenize_for_ppl(tok, sentences)
    batched = perplexity.sentence_nll(model, ids, batch_size=3)
    single = perplexity.sentence_nll(model, ids, batch_size=1)
    assert batched == pytest.approx(single, rel=1e-5, abs=1e-5)
    # Hand check on a 2-token sequence: NLL of the second token given the first.
    a, b = ids[4][:2]
    with torch.inference_mode():
        logp = torch.log_softmax(model(torch.tensor([[a]])).logits[0, -1].float(), dim=-1)
    assert perplexity.sentence_nll(model, [[a, b]])[0] == pytest.approx(-logp[b].item(), rel=1e-5)


def test_ppl_records(tiny):
    model, tok = tiny
    sentences = list(THAI)
    result = perplexity.evaluate_ppl(model, tok, sentences, batch_size=2)
    v = {r["metric"]: r["value"] for r in result["records"]}
    ids = perplexity.tokenize_for_ppl(tok, sentences)
    total = sum(perplexity.sentence_nll(model, ids, batch_size=1))
    tokens = sum(len(x) - 1 for x in ids)
    chars = sum(len(s) for s in sentences)
    assert v["nll_per_char"] == pytest.approx(total / chars, rel=1e-5)
    assert v["bits_per_char"] == pytest.approx(v["nll_per_char"] / math.log(2))
    assert v["perplexity"] == pytest.approx(math.exp(total / tokens), rel=1e-5)
    assert v["tokens_per_sentence"] == tokens / 4
    # per sentence, in the text's order: what the tables' paired bootstrap resamples (workflow_scripts/intervals.py)
    details = result["details"]
    assert details["chars"] == [len(s) for s in sentences] and len(details["nll_nats"]) == len(sentences)
    assert sum(details["nll_nats"]) == pytest.approx(details["total_nll_nats"])
    # A random 49K-vocabulary model is close to uniform: perplexity in the tens of thousands.
    assert 1e3 < v["perplexity"] < 1e6


def test_cli(tiny_llama_dir, tmp_path):
    text = tmp_path / "heldout.txt"
    text.write_text("".join(f"{th}\n" for th in THAI), encoding="utf-8")
    cell = {"model": "tiny", "language": "th", "method": "source", "label": "Source"}
    common = ["--model", str(tiny_llama_dir), "--n", "3", "--cell", json.dumps(cell), "--threads", "1"]
    perplexity.main([*common, "--text", str(text), "--out", str(tmp_path / "ppl.json"), "--data-label", "stand-in"])
    ppl = json.loads((tmp_path / "ppl.json").read_text())
    assert ppl["cell"] == cell and ppl["details"]["data_label"] == "stand-in" and ppl["details"]["n"] == 3
    assert (ppl["details"]["n_requested"], ppl["details"]["n_used"]) == (3, 3)
    assert [r["metric"] for r in ppl["records"]] == [
        "perplexity",
        "nll_per_char",
        "bits_per_char",
        "tokens_per_sentence",
    ]


def test_cli_records_n_requested_and_used_when_the_text_holds_fewer(tiny_llama_dir, tmp_path, capsys):
    text = tmp_path / "heldout.txt"
    text.write_text("".join(f"{th}\n" for th in THAI), encoding="utf-8")  # 4 sentences
    perplexity.main(
        [
            "--model",
            str(tiny_llama_dir),
            "--n",
            "10",
            "--cell",
            "{}",
            "--threads",
            "1",
            "--text",
            str(text),
            "--out",
            str(tmp_path / "ppl.json"),
        ]
    )
    details = json.loads((tmp_path / "ppl.json").read_text())["details"]
    assert (details["n"], details["n_requested"], details["n_used"]) == (4, 10, 4)
    assert f"WARNING ppl: evaluation.ppl.n asks for 10 items, {text} holds 4: 4 used" in capsys.readouterr().err
