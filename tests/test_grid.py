"""The grid: method expansion, path slugs, and configuration errors that name the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import REPO
from workflow_scripts.plan.checks import check_config, schema_errors
from workflow_scripts.plan.grid import (
    ConfigError,
    expand_grid,
    expand_methods,
    slug_regex,
    with_adapted,
)

SCHEMA = REPO / "schemas" / "config.schema.yaml"


def load(name: str) -> dict:
    return yaml.safe_load((REPO / name).read_text())


def test_expand_methods_product_labels_and_slugs():
    methods = expand_methods(
        [{"init": "none", "procedure": "none"}, {"init": "none"}, {"init": ["Random", "Mean"], "k": [50, 100]}],
        {"procedure": "2x2LS", "seq_len": 512, "objective": "clm"},
    )
    assert [m.slug for m in methods] == [
        "Source",
        "CPT-only.2x2LS.clm.L512",
        "Random.k50.2x2LS.clm.L512",
        "Random.k100.2x2LS.clm.L512",
        "Mean.k50.2x2LS.clm.L512",
        "Mean.k100.2x2LS.clm.L512",
    ]
    assert [m.label for m in methods[:3]] == ["Source", "CPT-only", "Random"]
    source = methods[0]
    assert (source.k, source.objective, source.seq_len, source.hparams) == (None, None, None, ())
    cell = methods[5].cell("smollm2", "th", 4000)
    assert cell == {
        "model": "smollm2",
        "language": "th",
        "method": "Mean.k100.2x2LS.clm.L512",
        "label": "Mean",
        "init": "Mean",
        "vocab": "expand",
        "procedure": "2x2LS",
        "objective": "clm",
        "seq_len": 512,
        "k": 100,
        "aux_vocab_size": 4000,
        "posthoc": "none",
    }


def test_initialized_but_untrained_method_has_its_own_slug():
    (m,) = expand_methods([{"init": "Mean", "procedure": "none", "k": 100}])
    assert m.slug == "Mean.k100.notrain" and m.expands and not m.trains


def test_duplicate_methods_collapse_but_conflicting_hparams_fail():
    assert len(expand_methods([{"init": "Mean"}, {"init": "Mean"}])) == 1
    with pytest.raises(ConfigError, match="twice with different hparams"):
        expand_methods(
            [
                {"init": "Mean", "procedure": "2x2LS", "hparams": {"lr": 1e-4}},
                {"init": "Mean", "procedure": "2x2LS", "hparams": {"lr": 1e-3}},
            ]
        )


def test_slug_regex_matches_exactly_the_configured_slugs():
    import re

    methods = expand_methods([{"init": "none", "procedure": "none"}, {"init": "Mean", "procedure": "2x2LS"}])
    pattern = re.compile(f"^({slug_regex(methods)})$")
    assert pattern.match("Source") and pattern.match("Mean.k100.2x2LS.clm.L2048")
    assert not pattern.match("Mean.k100.2x2LS.clm.L204") and not pattern.match("Mean")


@pytest.mark.parametrize("name", ["config.yaml", "configs/test.yaml", "configs/paper.yaml"])
def test_shipped_configs_are_valid(name):
    config = load(name)
    assert schema_errors(config, SCHEMA) == []
    # the paper grid downloads CC-100, so it needs no local files; the others name committed files
    methods = check_config(config, REPO)
    assert methods


def test_paper_config_covers_the_papers_models_and_languages():
    config = load("configs/paper.yaml")
    assert {spec["path"] for spec in config["models"].values()} == {
        "meta-llama/Llama-2-7b-hf",
        "meta-llama/Meta-Llama-3-8B",
        "google/gemma-2-9b",
    }
    assert set(config["languages"]) == {"ar", "my", "de", "el", "hi", "ja", "si", "sw", "te", "th"}


BAD = [
    # any ISO 639 code is a language (docs/your-study.md); a name that is not a code is refused
    (lambda c: c["languages"].update(Khmer=c["languages"]["th"]), "languages.Khmer: 'Khmer' does not match"),
    (lambda c: c["methods"].append({"init": "Meen"}), "methods[3].init: 'Meen' is not one of"),
    (lambda c: c["methods"].append({"init": "Mean", "foo": 1}), "methods[3]: Additional properties"),
    (lambda c: c["methods"].append({"init": "Mean", "k": 0}), "methods[3].k: 0 is less than the minimum of 1"),
    (lambda c: c["evaluation"].update(tasks=["mt", "bleu"]), "evaluation.tasks[1]: 'bleu' is not one of"),
    (lambda c: c["models"]["tiny"].update(layers=3), "models.tiny: Additional properties are not allowed ('layers'"),
    (lambda c: c.setdefault("training", {}).update(lrr=1), "training: Unevaluated properties are not allowed ('lrr'"),
    (lambda c: c.setdefault("training", {}).update(curve_points=-1), "training.curve_points: -1 is less than"),
    # the curve is the training block's alone: no hparams layer of a cell takes it
    (lambda c: c["methods"][1].update(hparams={"curve_points": 3}), "methods[1].hparams: Unevaluated properties"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD)
def test_schema_errors_name_the_key(mutate, message):
    config = copy.deepcopy(load("configs/test.yaml"))
    mutate(config)
    errors = schema_errors(config, SCHEMA)
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_curve_points_is_no_cell_hparam():
    # A cell's hparams (its LAPT job's --hparams and checkpoint fingerprint) are the same with and without the curve.
    from workflow_scripts.plan.grid import cell_hparams, curve_points

    config = copy.deepcopy(load("configs/test.yaml"))
    assert not schema_errors(config, SCHEMA) and curve_points(config) == 0
    methods = expand_methods(config["methods"], config.get("method_defaults", {}))
    trained = methods[1]  # CPT-only: entry 1
    assert trained.trains
    before = cell_hparams(config, "tiny", trained, 1)
    config.setdefault("training", {})["curve_points"] = 5
    assert not schema_errors(config, SCHEMA) and curve_points(config) == 5
    assert cell_hparams(config, "tiny", trained, 1) == before and "curve_points" not in before


SEMANTIC = [
    (
        lambda c: c["models"].update(loc={"kind": "local", "path": "no/such/folder"}),
        "models.loc.path: local model folder",
    ),
    (lambda c: c["models"].update(hub={"kind": "hub"}), "models.hub.path is required for kind 'hub'"),
    (lambda c: c["languages"]["th"]["corpus"].update(deb="missing.deb"), "languages.th.corpus.deb: file 'missing.deb'"),
    (
        lambda c: c["languages"]["th"].update(corpus={"kind": "cc100"}),
        "languages.th.corpus: give exactly one of path and url",
    ),
    (
        lambda c: c["methods"].append({"init": "Mean", "posthoc": "elchat"}),
        "models.tiny.chat: method Mean.k50.2x2LS.clm.L64.elchat (ElChat, Table 10) needs the model's instruction-tuned",
    ),
    (
        lambda c: c["methods"].append({"init": "none", "procedure": "none", "posthoc": "elchat"}),
        "methods[3].posthoc: a post-hoc method needs an adapted model (an init or a procedure)",
    ),
    (
        lambda c: c["models"]["tiny"].update(chat={"kind": "local", "path": "no/such/chat"}),
        "models.tiny.chat.path: local model folder 'no/such/chat' does not exist",
    ),
    (
        lambda c: c["models"]["tiny"].update(chat={"kind": "hub"}),
        "models.tiny.chat.path is required for kind 'hub'",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), SEMANTIC)
def test_semantic_errors_name_the_key(mutate, message):
    config = copy.deepcopy(load("configs/test.yaml"))
    mutate(config)
    assert schema_errors(config, SCHEMA) == []
    config.setdefault("evaluation", {}).setdefault("tasks", ["mt"])
    with pytest.raises(ConfigError) as info:
        check_config(config, REPO)
    assert message in str(info.value)


def test_expand_grid_restricts_entries_to_named_models_and_languages():
    config = {
        "models": {"a": {}, "b": {}},
        "languages": {"th": {}, "si": {}, "my": {}},
        "method_defaults": {"procedure": "2x2LS", "seq_len": 512},
        "methods": [
            {"init": "none", "procedure": "none"},
            {"init": "Mean", "models": ["b"], "languages": ["si", "my"]},
            {"init": "Mean", "models": ["b"], "languages": ["my"]},  # overlaps the previous entry: one cell each
        ],
    }
    cells = [(model, lang, m.slug) for model, lang, m in expand_grid(config)]
    assert cells == [
        ("a", "th", "Source"),
        ("a", "si", "Source"),
        ("a", "my", "Source"),
        ("b", "th", "Source"),
        ("b", "si", "Source"),
        ("b", "my", "Source"),
        ("b", "si", "Mean.k100.2x2LS.clm.L512"),
        ("b", "my", "Mean.k100.2x2LS.clm.L512"),
    ]
    config["methods"][1]["models"] = ["c"]
    with pytest.raises(ConfigError, match=r"methods\[1\]\.models: \['c'\] not configured"):
        expand_grid(config)


def test_paper_grid_scopes_tables_to_their_models_and_languages():
    cells = expand_grid(load("configs/paper.yaml"))
    llama3 = {(lang, m.slug) for model, lang, m in cells if model == "llama3"}
    assert {lang for lang, _ in llama3} == {"my", "si", "te"}
    assert ("si", "Mean.k100.2x2LS.mtp.L512") in llama3 and ("si", "Mean.k100.LoRA.clm.L2048") not in llama3
    llama2 = {(lang, m.slug) for model, lang, m in cells if model == "llama2"}
    assert {lang for lang, _ in llama2} == {"ar", "my", "de", "el", "hi", "ja", "si", "sw", "te", "th"}
    assert ("de", "CPT-only.LoRA.clm.L2048") in llama2


def test_elchat_cells_start_from_their_adapted_cell():
    [m] = expand_methods(
        [{"init": "Align", "procedure": "2x2LS", "objective": "mtp", "seq_len": 512, "posthoc": "elchat"}]
    )
    assert m.slug == "Align.k100.2x2LS.mtp.L512.elchat" and m.label == "Align"
    assert m.adapted.slug == "Align.k100.2x2LS.mtp.L512" and m.adapted.posthoc == "none"
    # the cell carries every method field, posthoc and vocab included (the tables read them, not the slug)
    assert m.cell("gemma2", "si", 50000)["posthoc"] == "elchat"
    assert m.adapted.cell("gemma2", "si", 50000)["posthoc"] == "none"
    assert m.cell("gemma2", "si", 50000)["vocab"] == "expand"
    # the adapted cell is added as a dependency when the config does not list it, once when it does
    assert [x.slug for x in with_adapted([m])] == [m.slug, m.adapted.slug]
    assert [x.slug for x in with_adapted([m.adapted, m])] == [m.adapted.slug, m.slug]
    # Table 10: Gemma-2's Align cells on my, si, te, merged into its instruction-tuned sibling
    config = load("configs/paper.yaml")
    elchat = {(model, lang, x.slug) for model, lang, x in expand_grid(config) if x.posthoc == "elchat"}
    assert elchat == {("gemma2", lang, m.slug) for lang in ("my", "si", "te")}
    assert config["models"]["gemma2"]["chat"] == {"kind": "hub", "path": "google/gemma-2-9b-it"}
    assert load("config.yaml")["models"]["smollm2"]["chat"] == "source"


def test_conda_environment_pins_the_same_packages_as_requirements():
    env = yaml.safe_load((REPO / "envs" / "workflow.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    lines = (REPO / "requirements.txt").read_text().splitlines()
    assert pip == [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_schema_is_parsed_once_and_afresh_when_its_file_changes(tmp_path):
    import os

    from workflow_scripts.plan.checks.schema import load_schema

    path = tmp_path / "config.schema.yaml"
    path.write_text(SCHEMA.read_text(encoding="utf-8"), encoding="utf-8")
    first = load_schema(path)
    assert load_schema(path) is first and load_schema(str(path)) is first
    path.write_text(SCHEMA.read_text(encoding="utf-8") + "x-edited: true\n", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new version, whatever the clock's resolution
    again = load_schema(path)
    assert again is not first and again["x-edited"] is True and "x-edited" not in first


@pytest.mark.parametrize("name", ["config.yaml", "configs/test.yaml", "configs/pilot.yaml", "configs/paper.yaml"])
def test_defaults_are_filled_as_snakemakes_validate_fills_them(name, tmp_path):
    """Planning fills the schema's defaults itself from the parsed schema; the result is Snakemake's own
    ``validate(set_default=True)`` on the same config and the same schema (the file with the registries' names and
    keys), and a filled default is a copy, never the schema's object."""
    import copy

    from snakemake.utils import validate

    from workflow_scripts.plan.checks.schema import fill_defaults, load_schema, with_registries

    config = yaml.safe_load((REPO / name).read_text(encoding="utf-8"))
    config.pop("evaluation", None)  # most defaults live under evaluation: filled from nothing
    theirs = copy.deepcopy(config)
    registered = tmp_path / "config.schema.yaml"
    registered.write_text(yaml.safe_dump(with_registries(load_schema(SCHEMA))), encoding="utf-8")
    validate(theirs, schema=str(registered), set_default=True)
    fill_defaults(config, SCHEMA)
    assert config == theirs and config != yaml.safe_load((REPO / name).read_text(encoding="utf-8"))
    schema = load_schema(SCHEMA)
    config["evaluation"]["tasks"].append("changed")
    assert "changed" not in schema["properties"]["evaluation"]["properties"]["tasks"]["default"]


def test_seed_is_a_grid_dimension_whose_config_seed_keeps_its_slug():
    methods = expand_methods(
        [{"init": "none", "procedure": "none", "seed": [42, 43]}, {"init": "Random", "seed": [42, 43, 44]}],
        {"procedure": "2x2LS", "seq_len": 128},
        base_seed=42,
    )
    assert [m.slug for m in methods] == [
        "Source",  # Source draws nothing: one cell whatever the seeds
        "Random.k100.2x2LS.clm.L128",
        "Random.k100.2x2LS.clm.L128.s43",
        "Random.k100.2x2LS.clm.L128.s44",
    ]
    assert {m.label for m in methods[1:]} == {"Random"} and [m.train_seed(42) for m in methods[1:]] == [42, 43, 44]
    assert methods[3].unseeded == methods[1] and "train_seed" not in methods[1].cell("m", "th", 8000)
    assert methods[3].cell("m", "th", 8000)["train_seed"] == 44
    # method_defaults may carry the seeds; the config's seed is read from the config
    config = {
        "seed": 43,
        "models": {"m": {}},
        "languages": {"th": {}},
        "method_defaults": {"seed": [42, 43]},
        "methods": [{"init": "Mean", "procedure": "2x2LS"}],
    }
    assert [m.slug for _, _, m in expand_grid(config)] == ["Mean.k100.2x2LS.clm.L2048.s42", "Mean.k100.2x2LS.clm.L2048"]
    with pytest.raises(ConfigError, match="MuMo cells run with the top-level seed only"):
        expand_methods([{"init": "none", "procedure": "MuMo", "seed": [42, 43]}], base_seed=42)


def test_other_seeds_can_be_evaluated_on_bits_per_character_alone():
    """evaluation.other_seeds: ppl: a seed other than the config's is evaluated on ppl only, with a curve of step 0
    alone; the config seed's cell keeps every task and the whole curve; all (the default) changes nothing."""
    from workflow_scripts.plan.grid import cell_curve_points, tasks_of

    base, other = expand_methods([{"init": "Mean", "procedure": "2x2LS", "seed": [42, 43]}], base_seed=42)
    tasks = ["mt", "ppl", "speed"]
    ppl = {"evaluation": {"other_seeds": "ppl"}, "training": {"curve_points": 6}}
    every = {"evaluation": {"other_seeds": "all"}, "training": {"curve_points": 6}}
    assert tasks_of(other, tasks, ppl) == ["ppl"] and tasks_of(base, tasks, ppl) == tasks
    assert tasks_of(other, tasks, every) == tasks == tasks_of(other, tasks)
    assert (cell_curve_points(ppl, other), cell_curve_points(ppl, base), cell_curve_points(every, other)) == (1, 6, 6)
    assert cell_curve_points({**ppl, "training": {}}, other) == 0  # no curve configured: none


def test_a_seeds_initialized_model_has_its_own_folder():
    from workflow_scripts.plan.paths import Layout

    (base, other) = expand_methods([{"init": "Random", "procedure": "2x2LS", "seed": [42, 43]}], base_seed=42)
    layout = Layout({"languages": {"th": {"aux_vocab_size": 8000}}}, {}, "results/r", "downloads")
    assert layout.init_dir("m", "th", base) == "results/r/m/th/init/Random.aux8000.k100"
    assert layout.init_dir("m", "th", other) == "results/r/m/th/init/Random.aux8000.k100.s43"
    # an initialization that draws nothing (Mean, Merge, Align, OMP) is initialized once, shared by every seed
    (mean, mean_other) = expand_methods([{"init": "Mean", "procedure": "2x2LS", "seed": [42, 43]}], base_seed=42)
    assert (
        layout.init_dir("m", "th", mean_other)
        == layout.init_dir("m", "th", mean)
        == "results/r/m/th/init/Mean.aux8000.k100"
    )
    from workflow_scripts.initialize import METHOD_SPECS

    assert {name for name, spec in METHOD_SPECS.items() if spec.draws} == {"Random", "FOCUS", "TokenDistillation"}
