"""The model card of each adapted cell (workflow_scripts/publish/card.py, rule model_card): huggingface_hub parses it,
its model-index holds the cell's numbers exactly as results.csv has them, and its limitations follow the numbers."""

from __future__ import annotations

import csv

import pytest
import yaml
from huggingface_hub import ModelCard

from tests.conftest import expected_counts, planned_jobs, snakemake, tiny_config
from tests.publish_fixtures import BOUND, PAIRED, fake_run
from workflow_scripts.plan import paths
from workflow_scripts.plan.grid import expand_grid
from workflow_scripts.publish import card as card_module


def metrics(card: ModelCard) -> dict[str, float]:
    return {r.metric_type: r.metric_value for r in card.data.eval_results}


def csv_values(table, model: str, lang: str, method: str) -> dict[str, float]:
    with open(table, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if (r["model"], r["language"], r["method"]) == (model, lang, method)]
    return {r["metric"]: float(r["value"]) for r in rows}


def spec_for(method, kind: str = "lapt", **changes) -> dict:
    """The spec rules/publish.smk gives the card job, for the tiny model on Thai."""
    spec = {
        "cell": method.cell("tiny", "th", 1000),
        "kind": kind,
        "hparams": {"lr": 0.001, "max_steps": 6, "seed": 42},
        "seed": 42,
        "base": {"key": "tiny", "kind": "hub", "path": "org/tiny", "base_model": "org/tiny", "license": "mit"},
        "language": {"code": "th", "name": "Thai"},
        "data": {
            "corpus": {"kind": "orchid", "label": "ORCHID", "licence": "cc-by-nc-sa-3.0"},
            "mt": {
                "kind": "flores",
                "label": "FLORES-200",
                "licence": "cc-by-sa-4.0",
                "hub_id": "openlanguagedata/flores_plus",
            },
        },
        "data_label": "ORCHID for adaptation and held-out text; MT: FLORES-200",
        "aux_tokenizer": "<run>/tiny/th/tokenizer/aux1000/tokenizer.json",
        "chat": None,
        "run": "default",
        "config_files": ["config.yaml"],
        "config_fingerprint": "0" * 64,
        "repo_id": None,
    }
    return spec | changes


@pytest.fixture
def table(tmp_path):
    """results.csv of configs/test.yaml's grid plus ElChat and MuMo cells."""
    methods = [
        {"init": "none", "procedure": "none"},
        {"init": "none"},
        {"init": "Mean"},
        {"init": "Mean", "posthoc": "elchat"},
        {"init": "none", "procedure": "MuMo"},
    ]
    _, run, cells = fake_run(tmp_path, methods=methods)
    return run / "tables" / "results.csv", {m.slug: m for _, _, m in cells}


def test_card_holds_the_cells_numbers_exactly_and_says_where_quality_is_not_held(table, tmp_path):
    results, methods = table
    mean = methods["Mean.k50.2x2LS.clm.L64"]
    out = tmp_path / "card" / "README.md"
    text = card_module.write_card(results, spec_for(mean), None, out, copy_into=tmp_path / "model")
    assert (tmp_path / "model" / "README.md").read_text() == text == out.read_text()
    card = ModelCard.load(out)
    expected = csv_values(results, "tiny", "th", mean.slug)
    assert metrics(card) == expected  # every metric of the cell, bit for bit
    assert {PAIRED, BOUND, "bits_per_char", "chrF"} <= set(expected)
    data = card.data
    assert (data.base_model, data.license, data.library_name, data.language) == (
        "org/tiny",
        "mit",
        "transformers",
        ["th"],
    )
    assert data.datasets == ["openlanguagedata/flores_plus"] and "Mean" in data.tags and "2x2LS" in data.tags
    source_bpc = csv_values(results, "tiny", "th", "Source")["bits_per_char"]
    assert expected["bits_per_char"] > source_bpc  # the fixture's Mean is worse than Source
    assert "Quality not held vs Source" in text
    assert "no commercial use" in text  # ORCHID's licence
    for setting in ("| k (new tokens) | 50 |", "| learning rate | 0.001 |", "| seed | 42 |", "| objective | clm |"):
        assert setting in text
    assert f"sha256:{'0' * 64}" in text and "Auxiliary tokenizer" in text


def test_quality_held_is_no_limitation(table, tmp_path):
    results, methods = table
    cpt = methods["CPT-only.2x2LS.clm.L64"]  # bits per character below Source's in the fixture
    text = card_module.write_card(results, spec_for(cpt), None, tmp_path / "README.md")
    assert "Quality not held" not in text and "## Limitations" in text


def test_elchat_and_mumo_cards_say_what_they_are(table, tmp_path):
    results, methods = table
    elchat = methods["Mean.k50.2x2LS.clm.L64.elchat"]
    text = card_module.write_card(results, spec_for(elchat, "elchat", chat='"source"'), None, tmp_path / "e.md")
    assert "ElChat" in text and "elchat" in ModelCard.load(tmp_path / "e.md").data.tags
    mumo = methods["MuMo"]
    text = card_module.write_card(results, spec_for(mumo, "mumo"), None, tmp_path / "m.md")
    card = ModelCard.load(tmp_path / "m.md")
    assert "A MuMo cell" in text and "Not a standalone transformers checkpoint" in text
    assert card.data.library_name is None
    assert metrics(card) == csv_values(results, "tiny", "th", "MuMo")


def test_a_cell_without_results_stops_with_its_name(table, tmp_path):
    results, methods = table
    spec = spec_for(methods["Mean.k50.2x2LS.clm.L64"])
    spec["cell"] = {**spec["cell"], "method": "Random.k50.2x2LS.clm.L64"}
    with pytest.raises(ValueError, match="no row of cell tiny/th/Random"):
        card_module.write_card(results, spec, None, tmp_path / "README.md")


def test_the_default_run_plans_a_card_per_adapted_cell(tmp_path):
    path = tiny_config(tmp_path, "config.yaml")
    result = snakemake(["-n", "--quiet", "rules", "--configfile", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    cells = expand_grid(yaml.safe_load(path.read_text()))
    counts = planned_jobs(result.stdout)
    assert counts["model_card"] == sum(m.slug != "Source" for _, _, m in cells) == 4
    assert "publish" not in counts  # opt-in
    expected = expected_counts(yaml.safe_load(path.read_text()))
    assert {rule: counts[rule] for rule in expected} == expected  # no other job added


@pytest.mark.slow  # a Snakemake run of the card jobs alone: 5-10 s of CPU
def test_model_card_rule_writes_every_adapted_cell_and_stays_done(tmp_path):
    methods = [
        {"init": "none", "procedure": "none"},
        {"init": "none"},
        {"init": "Mean"},
        {"init": "Mean", "procedure": "none"},
    ]
    config, run, cells = fake_run(tmp_path, methods=methods)
    targets = [
        paths.model_card(model, lang, m.slug, "results/default") for model, lang, m in cells if m.slug != "Source"
    ]
    args = [*targets, "--cores", "1", "--allowed-rules", "model_card", "--configfile", str(config)]
    result = snakemake(args, tmp_path)
    assert result.returncode == 0, result.stderr
    table = run / "tables" / "results.csv"
    for (model, lang, m), target in zip([c for c in cells if c[2].slug != "Source"], targets, strict=True):
        card = ModelCard.load(tmp_path / target)
        values = csv_values(table, model, lang, m.slug)
        assert metrics(card) == values and values["bits_per_char"] and values[PAIRED]
        owned = run / model / lang / m.slug / "model" / "README.md"
        assert owned.is_file() == m.trains  # a trained cell's own folder holds the card; the shared init folder not
        if m.trains:
            assert owned.read_text() == (tmp_path / target).read_text()
    again = snakemake(["-n", *args], tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def _ppl_rows(bpc: float, source_bpc: float, low: float | None, high: float | None) -> tuple[list[dict], list[dict]]:
    """A cell's and Source's bits-per-character rows as results.csv holds them, with the cell's difference row."""
    row = {"task": "ppl", "metric": "bits_per_char", "value": str(bpc), "seed": "", "run": "", "min": "", "max": ""}
    cell = [row]
    if low is not None:
        diff = {
            "metric": "bits_per_char_diff@Source",
            "value": str(bpc - source_bpc),
            "min": str(low),
            "max": str(high),
        }
        cell.append(row | diff)
    return cell, [row | {"value": str(source_bpc)}]


def test_quality_is_judged_by_the_interval_where_results_csv_has_one():
    spec = {"kind": "lapt", "data": {}, "data_label": "", "base": {"kind": "hub", "license": "mit"}}
    above_in_noise = _ppl_rows(5.1, 5.0, -0.05, 0.25)
    assert not [line for line in card_module.limitations(*above_in_noise, spec) if "Quality not held" in line]
    above = _ppl_rows(5.3, 5.0, 0.1, 0.5)
    worse = [line for line in card_module.limitations(*above, spec) if "Quality not held" in line]
    assert worse == [
        "Quality not held vs Source: 5.300 bits per character on the held-out text against Source's 5.000 (+0.300; "
        "lower is better; worse (95% interval [+0.100, +0.500]))."
    ]
    no_interval = _ppl_rows(5.1, 5.0, None, None)  # a table without the difference rows: the point estimates decide
    assert [line for line in card_module.limitations(*no_interval, spec) if "Quality not held" in line]
