"""The findings page (workflow_scripts/findings/): its numbers checked by hand on a synthetic pilot (relative bits per
character, the crossing of Source's level, the power-law extrapolation), the opening bullets and the sentences after
them, the initializations' ranking over seeds with its intervals, sections without data left out, and the page of a
default run (a subset of a finished default run's results.csv)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from workflow_scripts.findings import glance, numbers, paragraph, plots, titles
from workflow_scripts.findings.__main__ import main
from workflow_scripts.plan import paths
from workflow_scripts.tables import COLUMNS

FIXTURES = Path(__file__).parent / "fixtures"
LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"
TF = "@teacher_forced.greedy.b1"
# per language: cell -> (k, final bits per character, tokens per held-out sentence, paired speed-up, bound, chrF)
PILOT = {
    "th": {
        "Source": (None, 4.0, 80.0, None, None, 5.0),
        "CPT-only": (None, 3.0, 80.0, 0.98, 1.0, 6.0),
        "Random": (100, 3.30, 40.0, 1.95, 2.0, 4.0),
        "Mean": (100, 3.10, 40.0, 1.90, 2.0, 4.5),
        "Merge": (100, 3.20, 40.0, 1.92, 2.0, 4.2),
        "Align": (100, 3.06, 40.0, 1.96, 2.0, 4.8),
        "FOCUS": (100, 3.15, 40.0, 1.93, 2.0, 4.6),
        "Mean@50": (50, 3.05, 50.0, 1.50, 1.6, 4.9),
        "Mean@500": (500, 3.40, 30.0, 2.50, 2.7, 3.9),
    },
    "si": {
        "Source": (None, 6.0, 100.0, None, None, 4.0),
        "CPT-only": (None, 5.0, 100.0, 0.97, 1.0, 5.0),
        "Random": (100, 6.0, 30.0, 2.55, 3.0, 2.0),
        "Mean": (100, 5.5, 30.0, 2.90, 3.0, 3.0),
        "Align": (100, 5.6, 30.0, 2.95, 3.0, 2.5),
    },
}
STEPS = [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]


def _power(a: float, b: float, c: float, start: float) -> list[float]:
    return [start] + [a + b * t ** (-c) for t in STEPS[1:]]


# learning curves: bits per character at STEPS (Thai: by hand; Sinhala: exact power laws and a rising curve)
CURVES = {
    "th": {
        "CPT-only": [4.0, 3.6, 3.3, 3.1, 3.0, 3.0, 3.0, 3.0, 3.0],
        "Mean": [6.0, 4.5, 3.5, 3.2, 3.1, 3.1, 3.1, 3.1, 3.1],  # Source's 4.0 crossed at 1000 + 0.5 / 1.0 · 1000
        "Random": [9.0, 7.0, 5.0, 4.0, 3.5, 3.4, 3.3, 3.3, 3.3],  # ... at 3000: 2.0x the tokens of Mean
        "Align": [5.5, 4.6, 4.2, 4.1, 3.5, 3.2, 3.1, 3.06, 3.06],
    },
    "si": {
        "Mean": _power(5.0, 40.0, 0.5, 9.0),  # 1.05 × 5.0 = 5.25 reached at (0.25 / 40)^(-2) = 25,600 tokens
        "Align": _power(5.4, 10.0, 1.0, 8.0),  # levels off at 5.4, above 5.25: no estimate
        "Random": [7.0, 6.05, 6.1, 6.2, 6.3, 6.4, 6.5, 6.6, 6.7],  # rises, never reaches Source: no estimate
    },
}


def _cell(lang: str, name: str) -> dict:
    k = PILOT[lang][name][0]
    label = name.split("@")[0]
    if label == "Source":
        return {"method": "Source", "label": "Source"}
    train = {"procedure": "2x2LS", "objective": "clm", "seq_len": 128}
    if label == "CPT-only":
        return {"method": "CPT-only.2x2LS.clm.L128", "label": "CPT-only", **train}
    return {"method": f"{label}.k{k}.2x2LS.clm.L128", "label": label, "init": label, "k": k, "vocab": "expand", **train}


def results_frame(pilot: dict = PILOT) -> pd.DataFrame:
    """results.csv rows of the synthetic pilot: bits per character, tokens per sentence, chrF, paired speed-up."""
    rows = []
    for lang, cells in pilot.items():
        for name, (_, bpc, tokens, paired, bound, chrf) in cells.items():
            base = {"model": "smollm2", "language": lang, "posthoc": "none", **_cell(lang, name)}
            rows += [
                {**base, "task": "ppl", "metric": "bits_per_char", "value": bpc},
                {**base, "task": "ppl", "metric": "tokens_per_sentence", "value": tokens},
                {**base, "task": "ppl", "metric": "sentences", "value": 50},
                {**base, "task": "mt", "metric": "chrF", "value": chrf, "seed": 42},
            ]
            if paired is not None:
                speed = {**base, "task": "mt", "seed": 42}
                rows += [
                    {
                        **speed,
                        "metric": f"paired_speedup{TF}",
                        "value": paired,
                        "min": paired - 0.1,
                        "max": paired + 0.1,
                    },
                    {**speed, "metric": f"token_ratio_bound{TF}", "value": bound},
                ]
    return pd.DataFrame(rows, columns=COLUMNS)


def write_run(root: Path, frame: pd.DataFrame, curves: dict = CURVES) -> Path:
    """results.csv under root/tables and each curve at its cell's curve path."""
    (root / "tables").mkdir(parents=True)
    frame.to_csv(root / "tables" / "results.csv", index=False)
    for lang, cells in curves.items():
        for name, bpc in cells.items():
            path = Path(paths.curve("smollm2", lang, _cell(lang, name)["method"], str(root)))
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = "".join(f"{i}\t{t}\t{b}\t50\n" for i, (t, b) in enumerate(zip(STEPS, bpc, strict=True)))
            path.write_text("step\ttokens\tbits_per_char\tn_sentences\n" + rows, encoding="utf-8")
    return root / "tables" / "results.csv"


@pytest.fixture
def pilot(tmp_path) -> Path:
    """A synthetic pilot's results.csv, learning curves and findings page."""
    csv = write_run(tmp_path / "pilot", results_frame())
    main(["--results", str(csv), "--out", str(tmp_path / "pilot" / "findings"), "--data-label", LABEL])
    return tmp_path / "pilot" / "findings"


def _panels() -> dict[str, numbers.Panel]:
    frame = results_frame()
    curves = {
        ("smollm2", lang, _cell(lang, n)["method"]): pd.DataFrame(
            {"step": range(len(STEPS)), "tokens": STEPS, "bits_per_char": bpc, "n_sentences": 50}
        )
        for lang, cells in CURVES.items()
        for n, bpc in cells.items()
    }
    return {p.language: p for p in numbers.panels(frame, curves)}


def _row(panel: numbers.Panel, name: str) -> dict:
    return next(r for r in panel.rows if r["name"] == name)


def test_relative_bits_per_character_and_names():
    thai = _panels()["th"]
    assert numbers.relative(_row(thai, "Align")["bpc"][1], thai.source["bpc"]) == pytest.approx(-23.5)
    assert numbers.relative(3.06, 3.0) == pytest.approx(2.0)
    # Mean runs at three numbers of new tokens on Thai: those off the main one (100) say which
    assert {"Mean, 50 new tokens", "Mean", "Mean, 500 new tokens", "Align"} <= {r["name"] for r in thai.rows}
    assert thai.main_k() == 100 and thai.cpt()["name"] == "CPT-only"


def test_crossing_is_interpolated_between_the_points_around_it():
    assert numbers.crossing([0, 1000, 2000], [7.0, 6.5, 5.5], 6.0) == pytest.approx(1500)
    assert numbers.crossing([0, 1000], [5.0, 4.0], 6.0) == 0  # starts at or below the level
    assert numbers.crossing([0, 1000], [7.0, 6.5], 6.0) is None
    thai = _panels()["th"]
    assert _row(thai, "Mean")["reach"] == pytest.approx(1500)
    assert _row(thai, "Random")["reach"] == pytest.approx(3000)


def test_power_law_fit_recovers_the_tokens_of_an_exact_curve():
    fit = numbers.fit_power_law(STEPS, CURVES["si"]["Mean"])
    assert (fit.a, fit.b, fit.c) == pytest.approx((5.0, 40.0, 0.5), rel=1e-4)
    assert fit.tokens_for(5.25) == pytest.approx(25_600, rel=1e-3)
    big = [t * 1e6 for t in STEPS]  # token counts of a real run: the fit works in units of its first point
    curve = [9.0] + [2.0 + 3e5 * t ** (-0.7) for t in big[1:]]
    assert numbers.fit_power_law(big, curve).tokens_for(2.5) == pytest.approx((0.5 / 3e5) ** (-1 / 0.7), rel=1e-3)
    assert numbers.fit_power_law(STEPS, CURVES["si"]["Random"]).decreasing() is False
    assert numbers.fit_power_law(STEPS, CURVES["si"]["Align"]).tokens_for(5.25) is None  # levels off above it
    assert numbers.fit_power_law(STEPS[:4], CURVES["si"]["Mean"][:4]) is None  # three points: too few


def test_sentences_follow_the_numbers():
    panels = _panels()
    thai, sinhala = panels["th"], panels["si"]
    against_cpt = glance.quality_part(thai, False, "CPT-only")
    assert against_cpt == (
        "Thai: best Align 3.060 against 3.000, 2.0% above, within 5%; of 5 initializations no intervals recorded"
    )
    source = glance.quality_part(sinhala, False, "Source")
    assert source.startswith("Sinhala: best Mean 5.500 against 6.000, 8.3% below")
    assert glance.speed_part(thai, False) == (
        "Thai: 1.90x–1.96x over 5 initializations at 100 new tokens (bound "
        "2.00x; 40.0 tokens a held-out sentence against 80.0)"
    )
    assert glance.ranking_part(thai, False) == (
        "Thai: Align, Mean, FOCUS, Merge, Random by the point values (no intervals recorded)"
    )
    order = paragraph.order_sentence(thai, False)
    assert "before training (step 0) the initializations order Align (5.500) < Mean (6.000) < Random (9.000)" in order
    assert "a spread of 3.500; after training Align (3.060) <" in order and "training narrows the gap" in order
    reach = paragraph.reach_sentence(thai, False)
    assert reach == (
        "On Thai, Mean reaches Source's bits per character after 1.5K training tokens; Random after 3K "
        "(2.0x the tokens of Mean); Align after 3.2K (2.1x the tokens of Mean)."
    )
    assert "; Random does not reach it within the 8K it trained." in paragraph.reach_sentence(sinhala, False)
    rose = _row(thai, "Random")
    rose["bpc"] = (rose["bpc"][0], thai.source["bpc"] + 0.5)  # came down to Source's level, then rose above it
    assert "; Random after 3K (2.0x the tokens of Mean) but ends above it (" in paragraph.reach_sentence(thai, False)
    rose["bpc"] = (rose["bpc"][0], thai.source["bpc"])  # at the level itself: reached, not above
    assert "; Random after 3K (2.0x the tokens of Mean);" in paragraph.reach_sentence(thai, False)
    _row(thai, "Mean")["reach"] = 0  # below Source's level already at step 0 (the initialized model)
    assert paragraph.reach_sentence(thai, False) == (
        "On Thai, Mean is below Source's bits per character before training; Random reaches it after 3K training "
        "tokens; Align after 3.2K (1.1x the tokens of Random)."
    )
    # Thai's best is within 5% of CPT-only: nothing to extrapolate; Sinhala's is 10% above
    assert glance.extrapolation_rows(thai) == []
    assert glance.extrapolation_rows(sinhala) == [
        ["Mean", "5.250", "8K", "about 25.6K (3.2x)"],  # 1.05 x 5.0 reached at (0.25 / 40)^(-2) = 25,600 tokens
        ["Align", "5.250", "8K", "levels off at 5.400"],
        ["Random", "5.250", "8K", "no estimate: the fitted curve does not decrease"],
    ]
    assert glance.extrapolation_table(list(panels.values()), False)[2] == (
        "| Sinhala | Mean | 5.250 | 8K | about 25.6K (3.2x) |"
    )
    (k_line,) = paragraph.k_sentences(thai, False)
    assert k_line == (
        "On Thai, Mean with 500 new tokens instead of 50: paired speed-up 1.50x → 2.50x (+1.00x); final bits per "
        "character 3.050 → 3.400 (+11.5%); tokens per held-out sentence 50.0 → 30.0 (-40.0%)."
    )
    bound = paragraph.bound_sentence(list(panels.values()), False)
    assert bound == "1 of 10 expanded cells reaches less than 0.9 of their bound: Random on Sinhala (0.85)."


def test_pilot_page_has_every_section(pilot, monkeypatch):
    written = sorted(p.name for p in pilot.iterdir())
    assert {"quality_speed.png", "learning_curves.png", "k_tradeoff.pdf", "findings.md", "findings.html"} <= set(
        written
    )
    md = (pilot / "findings.md").read_text(encoding="utf-8")
    assert "Not in this run" not in md and md.count("These numbers hold for this run") == 1
    assert md.index("## At a glance") < md.index("## More from the numbers") < md.index("## What it would take")
    glance_lines = md.split("## At a glance")[1].split("##")[0].strip().splitlines()
    assert [line.split(".**")[0] for line in glance_lines] == [
        "- **Faster than Source (paired teacher-forced speed-up)",
        "- **Quality against Source (held-out bits per character)",
        "- **Against CPT-only (the same training without new tokens)",
        "- **Initializations ranked (final bits per character; ≈ within noise, < outside it)",
        "- **The number of new tokens",
        "- **Scope",
    ]
    assert "| Sinhala | Align | 5.250 | 8K | levels off at 5.400 |" in md
    assert "### Thai: the initializations ranked" in md
    assert "| Align | 5.500 | 3.060 | +2.0% | 1.96x [1.86–2.06] | 2.00x | 0.98 | 3.2K | 4.8 |" in md
    assert "| Random | 7.000 | 6.000 | +20.0% |" in md and "| not reached | 2.0 |" in md
    assert "SmolLM2-135M standing in for the paper's 7–9B models" in md and "one training run (one seed)" in md


def test_figures_draw_what_the_numbers_say(monkeypatch):
    from workflow_scripts.paper import figures

    kept = []
    monkeypatch.setattr(figures, "save", lambda fig, stem: kept.append(fig) or [Path(f"{stem}.png")])
    panels = list(_panels().values())
    plots.quality_speed(panels, "q")
    plots.learning_curves(panels, "l")
    plots.k_tradeoff(panels, "k")
    quality, curves, ks = kept
    thai = quality.axes[0]
    assert thai.get_title() == "Thai" and thai.get_xlim()[0] == 0
    legend = [t.get_text() for t in quality.axes[-1].get_legend().get_texts()]  # one legend, beside the panels
    assert {"Align", "Mean, 50 new tokens", "CPT-only", "Source (0%, 1x)"} <= set(legend)
    assert any(text.startswith("bound") for text in legend)
    assert [t.get_text() for t in ks.axes[0].get_xticklabels()] == ["50", "100", "500"]
    assert ks.axes[0].get_xscale() == "linear" and len(ks.axes) == 3
    labels = {line.get_label() for line in curves.axes[0].lines}
    assert {"CPT-only", "Align", "Source"} <= labels


def test_default_run_page(tmp_path):
    """A finished default run (Source, CPT-only, Mean at one k; no curves): the quality figure, the tables and the
    paragraph; the learning curves and the k figure are not written and are listed instead."""
    root = tmp_path / "default"
    (root / "tables").mkdir(parents=True)
    csv = root / "tables" / "results.csv"
    csv.write_text((FIXTURES / "default_results.csv").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "tables" / "results.md").write_text(
        f"# Results\n\n> Data: {LABEL}. The embedded default's numbers are not comparable to the paper's.\n",
        encoding="utf-8",
    )
    main(["--results", str(csv), "--out", str(root / "findings")])
    written = {p.name for p in (root / "findings").iterdir()}
    assert written == {"findings.md", "findings.html", "quality_speed.png", "quality_speed.pdf"}
    md = (root / "findings" / "findings.md").read_text(encoding="utf-8")
    assert f"> Data: {LABEL}." in md
    assert ("Thai: Mean 6.928 against 5.019, 38.0% above, not within 5%;") in md
    assert "- Not in this run: learning curves" in md and "the number of new tokens (no initialization run" in md
    assert "cannot be extrapolated (Thai, Sinhala): set training.curve_points to 5 or more" in md
    assert "## What it would take" not in md and "initializations ranked" not in md
    assert "## Learning curves" not in md and "at step 0" not in md
    assert "| Mean | 6.928 | +38.0% | 1.91x [1.78–2.23] | 1.94x | 0.98 | 0.2 |" in md
    assert re.search(r"Every expanded cell's paired speed-up is at least 0\.98 of its bound", md)
    assert not math.isnan(pd.read_csv(csv)["value"].sum())


def test_every_findings_file_has_a_report_caption_and_label():
    from types import SimpleNamespace

    from jinja2 import Template

    template = Template((Path(__file__).resolve().parents[1] / "report" / "findings.rst").read_text(encoding="utf-8"))
    for name in ["findings", *titles.TITLES]:
        wildcards = SimpleNamespace(name=name)
        caption = template.render(snakemake=SimpleNamespace(wildcards=wildcards, params=SimpleNamespace(data="d")))
        assert caption.startswith("**") and "Data: d." in caption, name
    numbers_ = [titles.report_labels(SimpleNamespace(name=n))["no."] for n in ["findings", *titles.TITLES]]
    assert numbers_ == sorted(numbers_) and titles.report_labels(SimpleNamespace(name="k_tradeoff"))["what"] == (
        "The number of new tokens"
    )


def test_captions_say_when_the_curves_read_other_sentences():
    from workflow_scripts.findings.__main__ import curve_note

    panels = list(_panels().values())
    assert curve_note(panels) == ""  # 50 and 50: the same held-out sentences
    for panel in panels:
        for row in panel.curves():
            row["curve"] = row["curve"].assign(n_sentences=40)
    assert (
        curve_note(panels) == " The curves are measured on 40 held-out sentences, the final values on 50: other text."
    )


SERVED = "@llama.cpp-f16.teacher_forced.greedy.b1"


def _fidelity(agreement: float, equal: int, embd: str, blocks: str = "q4_0") -> dict:
    return {
        "token_mismatches": 0,
        "greedy_prompts": 4,
        "greedy_tokens": 16,
        "greedy_equal_prompts": equal,
        "greedy_token_agreement": agreement,
        "tensor_types": {"token_embd": embd, "output": None, "blocks": {blocks: 210}},
    }


def test_served_cells_get_their_llama_cpp_ratio_and_agreement_tables(tmp_path):
    """Fabricated serve_speed records (the llama.cpp variant of results.csv) and GGUF checks of two Thai cells: the
    table's llama.cpp column is the served speed-up over its own bound; the served section lists each type."""
    frame = results_frame()
    served = []
    for name, (paired, bound) in {"Mean": (2.4, 2.5), "Align": (1.8, 2.0)}.items():
        speed = {"model": "smollm2", "language": "th", "posthoc": "none", **_cell("th", name), "task": "mt"}
        spread = {"min": paired - 0.1, "max": paired + 0.1}
        served += [
            {**speed, "metric": f"paired_speedup{SERVED}", "value": paired, **spread},
            {**speed, "metric": f"token_ratio_bound{SERVED}", "value": bound},
        ]
    csv = write_run(tmp_path / "run", pd.concat([frame, pd.DataFrame(served, columns=COLUMNS)], ignore_index=True))
    for name, (f16, q4, q4_kept) in {"Source": (1.0, 0.5, 0.75), "Mean": (1.0, 0.25, 0.5)}.items():
        path = Path(paths.gguf_fidelity("smollm2", "th", _cell("th", name)["method"], str(tmp_path / "run")))
        path.parent.mkdir(parents=True)
        files = {
            "model.f16.gguf": _fidelity(f16, 4, "f16", "f16"),
            "model.q4_0.gguf": _fidelity(q4, 1, "q4_0"),
            "model.q4_0+emb_q8_0.gguf": _fidelity(q4_kept, 2, "q8_0"),
        }
        path.write_text(json.dumps({"lang": "th", "cell": {}, "files": files}), encoding="utf-8")
    main(["--results", str(csv), "--out", str(tmp_path / "run" / "findings"), "--data-label", LABEL])
    md = (tmp_path / "run" / "findings" / "findings.md").read_text(encoding="utf-8")
    thai = md.split("## Sinhala")[0]
    assert "| speed-up ÷ bound | llama.cpp speed-up ÷ its bound | training tokens" in thai
    assert "| Mean | 6.000 | 3.100 | +3.3% | 1.90x [1.80–2.00] | 2.00x | 0.95 | 0.96 | 1.5K | 4.5 |" in thai
    assert "| Align | 5.500 | 3.060 | +2.0% | 1.96x [1.86–2.06] | 2.00x | 0.98 | 0.90 | 3.2K | 4.8 |" in thai
    assert "| Random | 9.000 | 3.300 | +10.0% | 1.95x [1.85–2.05] | 2.00x | 0.97 | – |" in thai  # not served
    assert "llama.cpp speed-up ÷ its bound: the same paired teacher-forced speed-up measured in llama.cpp" in thai
    assert "| Method | f16 | q4_0 | q4_0+emb_q8_0 |" in thai
    assert "| Source | 1.00 (4/4) | 0.50 (1/4) | 0.75 (2/4) |" in thai
    assert "| Mean | 1.00 (4/4) | 0.25 (1/4) | 0.50 (2/4) |" in thai
    assert "q4_0+emb_q8_0: token embeddings q8_0, output tied to the embeddings, block matrices q4_0 ×210" in thai
    sinhala = md.split("## Sinhala")[1]
    assert "llama.cpp" not in sinhala and "served in llama.cpp" not in sinhala


def test_the_ranking_says_better_or_worse_only_outside_the_interval():
    from workflow_scripts.intervals import Interval

    thai = _panels()["th"]
    _row(thai, "Align")["vs_cpt"] = Interval(0.06, -0.01, 0.13, 50)  # holds zero
    _row(thai, "Mean")["vs_cpt"] = Interval(0.4, 0.3, 0.5, 50)
    for name in ("Random", "Merge", "FOCUS"):
        _row(thai, name)["vs_cpt"] = Interval(0.4, 0.3, 0.5, 50)
    assert glance.quality_part(thai, False, "CPT-only") == (
        "Thai: best Align 3.060 against 3.000, 2.0% above, within 5%, 95% interval [-0.010, +0.130]; of 5 "
        "initializations within noise: Align; worse: Mean, FOCUS, Merge, Random"
    )
    order = paragraph.order_sentence(thai, False)
    assert (
        "Against CPT-only, in bits per character: Align within noise (95% interval [-0.010, +0.130]); Mean worse "
    ) in order


# Per-sentence NLL of the seeds ranked below: every sentence's NLL shifted by a constant number of bits per character,
# so each seed's difference to BASE is exactly its shift (checkable by hand).
SENT_CHARS = [12, 40, 7, 25, 31, 18, 9, 50]
SENT_NLL = [20.1, 55.0, 9.9, 30.2, 44.4, 21.7, 14.0, 60.3]
BASE = sum(SENT_NLL) / sum(SENT_CHARS) / math.log(2)
SEED_SHIFTS = {"Align": (0.00, 0.02, 0.04), "Mean": (0.01, 0.03, 0.05), "Random": (0.5,)}


def _seeded_run() -> tuple[pd.DataFrame, dict]:
    """Thai: Source, CPT-only, Align and Mean with three seeds (42, 43, 44), Random with one; results.csv rows and
    each cell's per-sentence NLL."""
    rows, sentences = [], {}
    for name, bpc in (("Source", 4.0), ("CPT-only", BASE - 0.1)):
        base = {"model": "smollm2", "language": "th", "posthoc": "none", **_cell("th", name)}
        rows.append({**base, "task": "ppl", "metric": "bits_per_char", "value": bpc})
        shift = bpc - BASE
        sentences[("smollm2", "th", base["method"])] = (
            [n + shift * math.log(2) * c for n, c in zip(SENT_NLL, SENT_CHARS, strict=True)],
            SENT_CHARS,
        )
    for name, shifts in SEED_SHIFTS.items():
        cell = _cell("th", name)
        cell["k"] = 100
        for seed, shift in zip((42, 43, 44)[: len(shifts)], shifts, strict=True):
            slug = cell["method"] if seed == 42 else f"{cell['method']}.s{seed}"
            extra = {"train_seed": seed} if seed != 42 else {}
            base = {"model": "smollm2", "language": "th", "posthoc": "none", **cell, "method": slug, **extra}
            rows.append({**base, "task": "ppl", "metric": "bits_per_char", "value": BASE + shift})
            sentences[("smollm2", "th", slug)] = (
                [n + shift * math.log(2) * c for n, c in zip(SENT_NLL, SENT_CHARS, strict=True)],
                SENT_CHARS,
            )
    return pd.DataFrame(rows, columns=COLUMNS), sentences


def test_initializations_are_ranked_over_seeds_with_what_is_within_noise():
    frame, sentences = _seeded_run()
    (thai,) = numbers.panels(frame, sentences=sentences)
    ranked = glance.ranking(thai)
    assert [p.row["name"] for p in ranked] == ["Align", "Mean", "Random"]
    assert [p.row["seeds"] for p in ranked] == [3, 3, 1]
    assert ranked[0].above is None
    # Mean - Align: per resample the mean of three drawn Mean shifts minus three drawn Align shifts, in [-0.03, +0.05]:
    # the seeds' spread holds zero, whatever the sentences
    mean_vs_align = ranked[1].above
    assert mean_vs_align.diff == pytest.approx(0.01) and mean_vs_align.low < 0 < mean_vs_align.high
    assert -0.03 - 1e-9 <= mean_vs_align.low and mean_vs_align.high <= 0.05 + 1e-9
    # Random - Mean: 0.5 minus the mean of three drawn Mean shifts, in [0.45, 0.49]: outside the noise
    random_vs_mean = ranked[2].above
    assert random_vs_mean.diff == pytest.approx(0.47) and 0.45 - 1e-9 <= random_vs_mean.low
    assert random_vs_mean.high <= 0.49 + 1e-9 and random_vs_mean.excludes_zero
    assert glance.ranking_text(ranked) == "Align ≈ Mean < Random"
    assert glance.ranking_part(thai, False) == "Thai: Align ≈ Mean < Random (1–3 seeds a method)"
    table = glance.ranking_table(thai)
    assert table[2] == f"| 1 | Align | 3 | {BASE + 0.02:.3f} ± 0.020 | – | – |  |"
    assert table[3].startswith(f"| 2 | Mean | 3 | {BASE + 0.03:.3f} ± 0.020 | +0.010 | [") and table[3].endswith(
        "| within noise |"
    )
    assert table[4].startswith(f"| 3 | Random | 1 | {BASE + 0.5:.3f} | +0.470 | [+0.4")
    assert table[4].endswith("| worse |")
    # a seed without its sentences' NLL: no interval for its method, and the bullet says so where none has one
    partial = {k: v for k, v in sentences.items() if not k[2].endswith(".s43")}
    (thai,) = numbers.panels(frame, sentences=partial)
    assert [p.above for p in glance.ranking(thai)] == [None, None, None]
    assert glance.ranking_part(thai, False) == "Thai: Align, Mean, Random by the point values (no intervals recorded)"


def test_a_methods_curve_is_the_mean_over_the_seeds_that_recorded_it_whole():
    """Align's three seeds recorded whole curves: its curve is their mean at each step, with their range; Mean's seeds
    43 and 44 were evaluated on bits per character alone (step 0 only): its curve is seed 42's."""
    frame, _ = _seeded_run()
    align, mean = _cell("th", "Align")["method"], _cell("th", "Mean")["method"]

    def curve(*bpc):
        return pd.DataFrame({"step": range(len(bpc)), "tokens": STEPS[: len(bpc)], "bits_per_char": bpc})

    curves = {
        ("smollm2", "th", align): curve(9.0, 6.0, 5.0),
        ("smollm2", "th", f"{align}.s43"): curve(9.0, 6.3, 5.3),
        ("smollm2", "th", f"{align}.s44"): curve(9.0, 6.6, 5.0),
        ("smollm2", "th", mean): curve(9.0, 6.2, 5.1),
        ("smollm2", "th", f"{mean}.s43"): curve(9.0),
    }
    (thai,) = numbers.panels(frame, curves)
    row = _row(thai, "Align")
    assert row["curve_seeds"] == 3 and row["bpc0"] == 9.0
    assert row["curve"]["bits_per_char"].tolist() == pytest.approx([9.0, 6.3, 5.1])
    assert row["curve"]["bpc_min"].tolist() == [9.0, 6.0, 5.0] and row["curve"]["bpc_max"].tolist() == [9.0, 6.6, 5.3]
    row = _row(thai, "Mean")
    assert row["curve_seeds"] == 1 and row["curve"]["bits_per_char"].tolist() == [9.0, 6.2, 5.1]
    assert _row(thai, "Random")["curve"] is None
