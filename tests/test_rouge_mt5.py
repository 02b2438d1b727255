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
from workflow_scripts.plan.checks import rouge_route_problems
from workflow_scripts.sum_assets import hub_asset_problems

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)

# A character model whose multi-character pieces are fixed (user-defined symbols are always whole pieces), so the
# hand counts do not depend on what the trainer learns; word-initial Sinhala and German pieces carry "▁" as mT5's do.
GERMAN = ["▁Die", "▁Regierung", "▁plant", "▁höhere", "▁Steuern", "▁für", "▁Familien", "▁hat", "▁beschlossen"]
SYMBOLS = ["แมว", "กิน", "ปลา", "ข้าว", "▁මම", "▁ගෙදර", "▁යනවා", "▁පාසල්", *GERMAN]
DE_PRED, DE_REF = "Die Regierung plant höhere Steuern für Familien.", "Die Regierung hat höhere Steuern beschlossen."
LINES = ["แมวกินปลา", "แมวกินข้าว", "หมากินปลาทู", "මම ගෙදර යනවා.", "මම පාසල් යනවා", "ඔහු ගෙදර යනවා", DE_PRED, DE_REF]


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


def reference_code_rouge_l(prediction: str, reference: str, spiece) -> float:
    """The reference code's ROUGE-L, written out: mT5 pieces joined by spaces, rouge-score's own tokenizer, stemmer."""
    from rouge_score import rouge_scorer

    pieces = metrics.PieceTokenizer(spiece)
    joined_ref, joined_pred = " ".join(pieces.tokenize(reference)), " ".join(pieces.tokenize(prediction))
    return (
        100 * rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(joined_ref, joined_pred)["rougeL"].fmeasure
    )


def test_reference_route_german_pair_against_the_pieces_route(spiece):
    # the worked pair of docs/evaluation.md ("The reference code's ROUGE-L")
    pieces = metrics.rouge_tokenizer("mt5", spiece)
    assert pieces.tokenize(DE_PRED) == [*GERMAN[:7], "."]
    assert pieces.tokenize(DE_REF) == [*GERMAN[:2], "▁hat", "▁höhere", "▁Steuern", "▁beschlossen", "."]
    # pieces: LCS ▁Die ▁Regierung ▁höhere ▁Steuern . = 5 of 8 and 7 -> F 2/3
    assert metrics.rouge_l(DE_PRED, DE_REF, pieces) == pytest.approx(f1(5, 8, 7)) == pytest.approx(200 / 3)
    # reference code: "▁", "ö", "ü" and "." become spaces, so höhere -> h here and für -> f r; stemming changes no
    # match; LCS die regierung h here steuern = 5 of 9 and 7 -> F 5/8
    reference = metrics.rouge_tokenizer("reference", spiece)
    assert reference.tokenize(DE_PRED) == ["die", "regierung", "plant", "h", "here", "steuern", "f", "r", "familien"]
    assert reference.tokenize(DE_REF) == ["die", "regierung", "hat", "h", "here", "steuern", "beschlossen"]
    assert metrics.rouge_l(DE_PRED, DE_REF, reference) == pytest.approx(f1(5, 9, 7)) == pytest.approx(62.5)
    assert metrics.rouge_l(DE_PRED, DE_REF, reference) == pytest.approx(reference_code_rouge_l(DE_PRED, DE_REF, spiece))
    # script-aware words: LCS 4 of 7 and 6 -> F 8/13
    assert metrics.rouge_l(DE_PRED, DE_REF) == pytest.approx(f1(4, 7, 6)) == pytest.approx(800 / 13)


def test_reference_route_scores_thai_zero(spiece):
    reference = metrics.rouge_tokenizer("reference", spiece)
    pred, ref = "แมวกินปลาทู", "แมวกินปลา"  # 80.0 on pieces, 94.1 on grapheme clusters (above)
    assert reference.tokenize(pred) == reference.tokenize(ref) == []
    assert metrics.rouge_l(pred, ref, reference) == 0.0 == reference_code_rouge_l(pred, ref, spiece)
    # only ASCII digits survive: "cat rice 2024" against "dog mackerel 2024" share nothing but the year and score 100;
    # on pieces ▁ แมว ข้าว ▁ 2024 / ▁ ห ม า ปลา ท ู ▁ 2024: LCS ▁ ▁ 2024 = 3 of 5 and 9 -> F 3/7
    assert metrics.rouge_l("แมวข้าว 2024", "หมาปลาทู 2024", reference) == pytest.approx(100.0)
    pieces = metrics.rouge_tokenizer("mt5", spiece)
    assert (
        metrics.rouge_l("แมวข้าว 2024", "หมาปลาทู 2024", pieces) == pytest.approx(f1(3, 5, 9)) == pytest.approx(300 / 7)
    )
    again = pickle.loads(pickle.dumps(reference))
    assert again.tokenize(DE_PRED) == reference.tokenize(DE_PRED)


def test_reference_route_is_refused_for_a_language_not_in_latin_script(tmp_path):
    def config(tokenizer, languages, tasks=("sum",)):
        return {
            "evaluation": {"tasks": list(tasks), "sum": {"rouge_tokenizer": tokenizer}},
            "languages": {lang: {} for lang in languages},
        }

    assert rouge_route_problems(config("reference", ["de", "sw"])) == []
    assert rouge_route_problems(config("mt5", ["th", "si"])) == []
    assert rouge_route_problems(config("reference", ["th"], tasks=("mt",))) == []  # no sum: nothing scored
    problems = rouge_route_problems(config("reference", ["de", "th", "si"]))
    assert len(problems) == 2
    assert all(p.startswith("evaluation.sum.rouge_tokenizer: reference") for p in problems)
    assert "language 'th', written in Thai script" in problems[0] and "language 'si'" in problems[1]
    assert hub_asset_problems({"rouge_tokenizer": "reference", "mt5_spiece": "google/mt5-small"}) == []
    (problem,) = hub_asset_problems({"rouge_tokenizer": "reference", "mt5_spiece": str(tmp_path / "x" / "z.model")})
    assert problem.startswith("evaluation.sum.mt5_spiece:")


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
    with pytest.raises(ValueError, match=r"evaluation\.sum\.mt5_spiece"):
        metrics.rouge_tokenizer("reference", None)
    assert metrics.ROUGE_METRICS == {"mt5": "rougeL_mt5", "script": "rougeL_script", "reference": "rougeL_reference"}


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
    return {
        "model": model,
        "language": "si",
        "method": method,
        "label": label,
        "task": "sum",
        "metric": metric,
        "value": value,
        "run": run,
        "procedure": "2x2LS" if label != "Source" else None,
        "objective": "mtp" if label != "Source" else None,
        "seq_len": 512 if label != "Source" else None,
        "k": 100 if label != "Source" else None,
        "init": None if label == "Source" else "Mean",
    }


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
    assert any("mT5 SentencePiece pieces" in n and "Script-aware ROUGE-L results exist too" in n for n in filled.notes)


def test_results_markdown_keeps_each_segmentation_in_its_own_column(tmp_path):
    import json

    paths = []
    for i, (method, metric) in enumerate([("source", "rougeL_mt5"), ("Mean.k100", "rougeL_script")]):
        cell = {"model": "m", "language": "si", "method": method, "label": method.split(".")[0].title()}
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps({"cell": cell, "records": [{"task": "sum", "metric": metric, "value": 10.0 + i}]}))
        paths.append(path)
    frame, md = tables.build_tables(paths)
    assert set(frame["metric"]) == {"rougeL_mt5", "rougeL_script"}
    header = [
        h.strip("| ") for h in next(line for line in md.splitlines() if line.startswith("| Language")).split(" | ")
    ]
    mt5 = header.index("summarization ROUGE-L (mT5 pieces)")
    script = header.index("summarization ROUGE-L (script-aware)")
    rows = {
        line.split(" | ")[1]: [c.strip("| ") for c in line.split(" | ")]
        for line in md.splitlines()
        if line.startswith("| Sinhala |")
    }
    assert (rows["Source"][mt5], rows["Source"][script]) == ("10.0", "–")
    assert (rows["Mean"][mt5], rows["Mean"][script]) == ("–", "11.0")


def test_results_markdown_shows_the_reference_route_in_a_column_of_its_own(tmp_path):
    import json

    cell = {"model": "m", "language": "de", "method": "source", "label": "Source"}
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps({"cell": cell, "records": [{"task": "sum", "metric": "rougeL_reference", "value": 62.5}]})
    )
    _, md = tables.build_tables([path])
    header = [
        h.strip("| ") for h in next(line for line in md.splitlines() if line.startswith("| Language")).split(" | ")
    ]
    (row,) = [[c.strip("| ") for c in line.split(" | ")] for line in md.splitlines() if line.startswith("| German |")]
    assert row[header.index("summarization ROUGE-L (reference code)")] == "62.5"
    # only the columns some result fills: no empty mT5 or script-aware column
    assert not any(h.startswith("summarization ROUGE-L (mT5") or "script-aware" in h for h in header)


@pytest.mark.slow
def test_lighteval_metric_is_named_by_its_segmentation(spiece):
    from workflow_scripts.harness import lighteval_metrics

    (metric,) = lighteval_metrics.rouge_metrics("mt5", str(spiece))
    assert metric.metric_name == "rougeL_mt5"
    (metric,) = lighteval_metrics.rouge_metrics("reference", str(spiece))
    assert metric.metric_name == "rougeL_reference"
    pickle.dumps(metric)
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
