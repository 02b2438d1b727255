"""ROUGE-L as paper 002 computed it (§6.6: text split into mT5 SentencePiece pieces, then rouge_scorer), next to the
script-aware fallback: hand counts on a Thai and a Sinhala pair, the metric names, and tables that never put the two
segmentations in one column."""

from __future__ import annotations

import io
import pickle

import pandas as pd
import pytest

from workflow_scripts import tables
from workflow_scripts.harness import metrics
from workflow_scripts.paper.cells import fill, rouge_metric
from workflow_scripts.paper.specs import TABLES_BY_NAME
from workflow_scripts.sum_assets import hub_asset_problems

# A character model whose multi-character pieces are fixed (user-defined symbols are always whole pieces), so the
# hand counts do not depend on what the trainer learns; word-initial Sinhala pieces carry "▁" as mT5's do.
SYMBOLS = ["แมว", "กิน", "ปลา", "ข้าว", "▁මම", "▁ගෙදර", "▁යනවා", "▁පාසල්"]
LINES = ["แมวกินปลา", "แมวกินข้าว", "หมากินปลาทู", "මම ගෙදර යනවා.", "මම පාසල් යනවා", "ඔහු ගෙදර යනවා"]


@pytest.fixture(scope="module")
def spiece(tmp_path_factory):
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 5),
        model_writer=model,
        model_type="char",
        user_defined_symbols=SYMBOLS,
        character_coverage=1.0,
        minloglevel=2,
    )
    path = tmp_path_factory.mktemp("mt5") / "spiece.model"
    path.write_bytes(model.getvalue())
    return path


def f1(lcs: int, n_pred: int, n_ref: int) -> float:
    p, r = lcs / n_pred, lcs / n_ref
    return 100 * 2 * p * r / (p + r)


def test_thai_pair_on_pieces_and_on_grapheme_clusters(spiece):
    tok = metrics.rouge_tokenizer("mt5", spiece)
    pred, ref = "แมวกินปลาทู", "แมวกินปลา"
    assert tok.tokenize(pred) == ["▁", "แมว", "กิน", "ปลา", "ท", "ู"]
    assert tok.tokenize(ref) == ["▁", "แมว", "กิน", "ปลา"]
    # pieces: LCS 4 of 6 and 4 -> F 0.8
    assert metrics.rouge_l(pred, ref, tok) == pytest.approx(f1(4, 6, 4)) == pytest.approx(80.0)
    # grapheme clusters: แ ม ว กิ น ป ล า ทู (9) against 8, LCS 8 -> F 16/17
    assert metrics.segment(pred) == ["แ", "ม", "ว", "กิ", "น", "ป", "ล", "า", "ทู"]
    assert metrics.rouge_l(pred, ref) == pytest.approx(f1(8, 9, 8)) == pytest.approx(1600 / 17)


def test_sinhala_pair_on_pieces_and_on_words(spiece):
    tok = metrics.rouge_tokenizer("mt5", spiece)
    pred, ref = "මම ගෙදර යනවා.", "මම පාසල් යනවා"
    assert tok.tokenize(pred) == ["▁මම", "▁ගෙදර", "▁යනවා", "."]
    assert tok.tokenize(ref) == ["▁මම", "▁පාසල්", "▁යනවා"]
    # pieces keep the full stop: LCS 2 of 4 and 3 -> F 4/7
    assert metrics.rouge_l(pred, ref, tok) == pytest.approx(f1(2, 4, 3)) == pytest.approx(400 / 7)
    # words drop it: LCS 2 of 3 and 3 -> F 2/3
    assert metrics.rouge_l(pred, ref, metrics.rouge_tokenizer("script")) == pytest.approx(200 / 3)


def test_piece_tokenizer_pickles_and_bad_settings_name_the_key(spiece, tmp_path):
    tok = metrics.rouge_tokenizer("mt5", spiece)
    tok.tokenize("แมว")  # loaded: the processor itself is not pickled, it reloads on use
    again = pickle.loads(pickle.dumps(tok))
    assert again.tokenize("แมวกินปลา") == tok.tokenize("แมวกินปลา")
    with pytest.raises(FileNotFoundError, match=r"evaluation\.sum\.mt5_spiece"):
        metrics.rouge_tokenizer("mt5", tmp_path / "missing.model")
    with pytest.raises(ValueError, match=r"evaluation\.sum\.mt5_spiece"):
        metrics.rouge_tokenizer("mt5", None)
    with pytest.raises(ValueError, match=r"evaluation\.sum\.rouge_tokenizer"):
        metrics.rouge_tokenizer("words")
    assert metrics.ROUGE_METRICS == {"mt5": "rougeL_mt5", "script": "rougeL_script"}


def test_real_mt5_spiece_when_the_cache_has_it():
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache("google/mt5-small", "spiece.model")
    if not isinstance(path, str):
        pytest.skip("mT5's spiece.model is not in the hub cache (no PyPI package ships it)")
    tok = metrics.rouge_tokenizer("mt5", path)
    pieces = tok.tokenize("แมวกินปลา")
    assert "".join(pieces).replace("▁", "") == "แมวกินปลา" and metrics.rouge_l("แมวกินปลา", "แมวกินปลา", tok) == 100


def test_config_checks_name_the_key(tmp_path):
    assert hub_asset_problems({"rouge_tokenizer": "mt5", "mt5_spiece": "google/mt5-small"}) == []
    assert hub_asset_problems({"rouge_tokenizer": "script", "mt5_spiece": "no such file"}) == []
    (problem,) = hub_asset_problems({"rouge_tokenizer": "mt5", "mt5_spiece": str(tmp_path / "x" / "y" / "z.model")})
    assert problem.startswith("evaluation.sum.mt5_spiece:")


def row(method, metric, value, model="smollm2", run=0):
    label = "Source" if method == "source" else "Mean"
    return {"model": model, "language": "si", "method": method, "label": label, "task": "sum", "metric": metric,
            "value": value, "run": run, "procedure": "2x2LS" if label != "Source" else None,
            "objective": "mtp" if label != "Source" else None, "seq_len": 512 if label != "Source" else None,
            "k": 100 if label != "Source" else None, "init": None if label == "Source" else "Mean"}  # fmt: skip


def test_paper_tables_show_one_segmentation_and_say_which():
    table1 = TABLES_BY_NAME["table1"]
    script_only = pd.DataFrame([row("source", "rougeL_script", 20.0), row("Mean.k100", "rougeL_script", 25.0)])
    assert rouge_metric(script_only) == "rougeL_script"
    filled = fill(table1, script_only)
    assert filled.cell("llama2", "Source", "si", "sum").text == "20"
    assert [c.metric for c in filled.spec.columns if c.task == "sum"] == ["rougeL_script"]
    assert any("script-aware segmentation" in n for n in filled.notes)
    # with mT5 results anywhere, every table shows mT5 only: the script value of Source does not fill its entry
    mixed = pd.concat([script_only, pd.DataFrame([row("Mean.k100", "rougeL_mt5", 30.0)])], ignore_index=True)
    filled = fill(table1, mixed)
    assert [c.metric for c in filled.spec.columns if c.task == "sum"] == ["rougeL_mt5"]
    assert filled.cell("llama2", "Source", "si", "sum").text == "–"
    assert filled.cell("llama2", "Mean", "si", "sum").text == "30"
    assert any("mT5 SentencePiece pieces" in n and "rougeL_script) exist too" in n for n in filled.notes)


def test_results_markdown_keeps_each_segmentation_in_its_own_column(tmp_path):
    import json

    paths = []
    for i, (method, metric) in enumerate([("source", "rougeL_mt5"), ("Mean.k100", "rougeL_script"),
                                          ("Align.k100", "rougeL")]):  # fmt: skip
        cell = {"model": "m", "language": "si", "method": method, "label": method.split(".")[0].title()}
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps({"cell": cell, "records": [{"task": "sum", "metric": metric, "value": 10.0 + i}]}))
        paths.append(path)
    frame, md = tables.build_tables(paths)
    # a result written before the split (plain rougeL) was the script-aware segmentation
    assert set(frame["metric"]) == {"rougeL_mt5", "rougeL_script"}
    header = next(line for line in md.splitlines() if line.startswith("| Language")).split(" | ")
    mt5, script = header.index("sum ROUGE-L (mT5)"), header.index("sum ROUGE-L (script)")
    rows = {line.split(" | ")[1]: line.split(" | ") for line in md.splitlines() if line.startswith("| si |")}
    assert (rows["Source"][mt5], rows["Source"][script]) == ("10.0", "–")
    assert (rows["Mean"][mt5], rows["Mean"][script]) == ("–", "11.0")
    assert (rows["Align"][mt5], rows["Align"][script]) == ("–", "12.0")


@pytest.mark.slow
def test_lighteval_metric_is_named_by_its_segmentation(spiece):
    from workflow_scripts.harness import lighteval_metrics

    (metric,) = lighteval_metrics.rouge_metrics("mt5", str(spiece))
    assert metric.metric_name == "rougeL_mt5"
    lighteval_metrics.set_rouge_tokenizer("script")
    assert lighteval_metrics.rouge_metrics()[0].metric_name == "rougeL_script"
    with pytest.raises(FileNotFoundError):
        lighteval_metrics.set_rouge_tokenizer("mt5", str(spiece) + ".missing")
    lighteval_metrics.set_rouge_tokenizer("mt5", str(spiece))
    try:
        (metric,) = lighteval_metrics.rouge_metrics()
        assert metric.metric_name == "rougeL_mt5"
        pickle.dumps(metric)  # LightEval pickles its metrics
    finally:
        lighteval_metrics.set_rouge_tokenizer("script")
