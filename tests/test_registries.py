"""One list per concept: the registries (initialize.INIT_METHODS, lapt.PROCEDURES / OBJECTIVES, the evaluation tasks
of workflow_scripts/tasks/) are the truth; the schema, the config check, the GPU estimate, the rules, the costs and
the names must agree with them (init, procedure and tasks: the schema admits the registries' names at validation, it
lists none of its own)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO
from workflow_scripts import initialize, lapt, procedure_stages
from workflow_scripts.gpu import estimate as gpu_estimate
from workflow_scripts.lapt.hparams import WEIGHTS_DTYPES, weights_dtype_on
from workflow_scripts.lapt.procedures import adds_lora
from workflow_scripts.plan import grid, steps
from workflow_scripts.plan.checks import IMPLEMENTED
from workflow_scripts.plan.checks.schema import registered, with_registries

SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))


def schema_values(field: str, schema: dict = SCHEMA) -> list[str] | None:
    """The values the schema admits for a method field (its single-value branch) or for evaluation.tasks; None where
    it admits any string."""
    if field == "tasks":
        return schema["properties"]["evaluation"]["properties"]["tasks"]["items"].get("enum")
    single, many = schema["$defs"]["method"]["properties"][field]["oneOf"]
    assert many["items"].get("enum") == single.get("enum"), f"{field}: the list form admits other values"
    return single.get("enum")


def test_schema_admits_exactly_what_is_implemented():
    for field in ("vocab", "objective", "posthoc"):
        assert set(schema_values(field)) == IMPLEMENTED[field], field
    # init, procedure and tasks are strings in the schema file; the names come from the registries, at validation
    for field in ("init", "procedure", "tasks"):
        assert schema_values(field) is None, f"{field}: a list of names in the schema would be a second registry"
        assert set(schema_values(field, with_registries(SCHEMA))) == IMPLEMENTED[field], field


def test_registries_are_what_the_config_check_accepts():
    assert IMPLEMENTED["init"] == {"none", *initialize.INIT_METHODS}
    assert IMPLEMENTED["procedure"] == {"none", grid.MUMO, *lapt.PROCEDURES}
    assert IMPLEMENTED["objective"] == set(lapt.OBJECTIVES)
    assert IMPLEMENTED["tasks"] == set(steps.TASKS)
    # The registry lists the methods in their declared order (the paper's), which reports and the schema message follow.
    specs = list(initialize.METHOD_SPECS.values())
    assert [s.order for s in specs] == sorted(s.order for s in specs)
    assert registered("init") == ["none", *initialize.INIT_METHODS]
    assert initialize.CORPUS_METHODS == [s.name for s in specs if s.needs_corpus]


def test_training_and_the_gpu_estimate_read_one_stage_table():
    """lapt builds its procedures from the stage table the estimate sizes (the estimate reads no lapt module: lapt
    imports it); the GPU weights dtype must agree."""
    assert tuple(procedure_stages.STAGES) == tuple(lapt.PROCEDURES)
    for name, procedure in lapt.PROCEDURES.items():
        assert [s.name for s in procedure_stages.STAGES[name]] == [s.name for s in procedure.stages], name
        for eeve_layers in ("full", "LoRA"):
            stages = procedure_stages.stages_of(name, eeve_layers)
            assert [s.name for s in stages] == [s.name for s in procedure.stages], name
            assert procedure_stages.adds_lora(name, eeve_layers) == adds_lora(name, {"eeve_layers": eeve_layers})
    for configured in WEIGHTS_DTYPES:
        assert gpu_estimate.weights_dtype_on_gpu(configured) == weights_dtype_on(configured, "cuda")


def test_every_task_has_a_rule_rendered_from_its_spec():
    """rules/evaluate.smk renders one rule per registered task (its name and docstring from the spec) and names no
    task itself: a new task needs no rule of its own."""
    from workflow_scripts import tasks

    listed = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-rules"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    for spec in tasks.TASKS.values():
        assert f"{spec.rule} ({spec.doc})" in listed, spec.name
    # the only rules written out: the per-cell job, and BLEURT's second metric of summarization's predictions
    rules = (REPO / "rules" / "evaluate.smk").read_text(encoding="utf-8")
    assert re.findall(r"^(?:use )?rule (\w+)", rules, flags=re.M) == ["score_bleurt", "evaluate_cell"]


def test_each_task_is_one_module_whose_facts_every_list_reads():
    """workflow_scripts/tasks/: the steps, the job costs, the GPU rules, the names, the results.md columns, the model
    cards' task types and MuMo's tasks are read from the task modules, in their declared order."""
    from workflow_scripts import tables, tasks
    from workflow_scripts.paper import names
    from workflow_scripts.plan import resources
    from workflow_scripts.publish import card

    specs = list(tasks.TASKS.values())
    assert [s.order for s in specs] == sorted(s.order for s in specs) and tuple(tasks.TASKS) == steps.TASKS
    # one module per task, its English retention check (``<task>_en``) beside it
    assert sorted(
        p.stem
        for p in (REPO / "workflow_scripts" / "tasks").glob("*.py")
        if p.stem not in ("__init__", "__main__", "base")
    ) == sorted({name.removesuffix("_en") for name in tasks.TASKS})
    for s in specs:
        cost = resources.SIZE_RESOURCES[s.rule]
        assert (cost.base, cost.per_billion, cost.test) == s.cost and s.rule in resources.GPU_RULES, s.name
        assert names.STEP_NAMES[s.rule] == s.rule_words and names.TASK_NAMES.get(s.name) == s.words, s.name
        assert card.TASK_TYPES[s.name] == s.card_type and (s.name in grid.MUMO_TASKS) == s.mumo, s.name
        assert [c[0] for c in tables.MARKDOWN_COLUMNS if c[1] == s.name] == [c.heading for c in s.columns], s.name
    assert steps.CELL_STEPS == ("ppl", "mt", "mc", "speed")  # cheapest first
    assert set(tasks.CHOICE_TASKS) == {"mc", "gmmlu", "mc_en", "gmmlu_en"} and tasks.TASKS["mc"].label is None
    # a misspelt task is refused at validation with the registered names
    schema = with_registries(SCHEMA)
    assert schema["properties"]["evaluation"]["properties"]["tasks"]["items"]["enum"] == list(tasks.TASKS)


def test_each_corpus_kind_is_one_module_whose_facts_every_list_reads():
    """workflow_scripts/corpora/: the schema's enum, the wildcards, the job costs, the cost table's words and the
    labels come from the kind modules; the readers name no kind (a new kind is one module: tests/test_new_corpus.py)."""
    from workflow_scripts import corpora, labels
    from workflow_scripts.paper import names
    from workflow_scripts.plan import resources

    specs = list(corpora.CORPORA.values())
    assert [s.order for s in specs] == sorted(s.order for s in specs)
    assert sorted(p.stem for p in (REPO / "workflow_scripts" / "corpora").glob("*.py")) == sorted(
        [*corpora.CORPORA, "__init__", "text_file"]
    )

    def kind(schema: dict) -> dict:
        return schema["properties"]["languages"]["additionalProperties"]["properties"]["corpus"]["properties"]["kind"]

    assert kind(with_registries(SCHEMA))["enum"] == list(corpora.CORPORA)
    assert "enum" not in kind(SCHEMA), "a list of kinds in the schema would be a second registry"
    for s in specs:
        assert s.rule in resources.SIZE_RESOURCES and s.name in corpora.made_by(s.rule), s.name
        assert all(resources.SIZE_RESOURCES[rule].base == cost for rule, cost in s.costs.items()), s.name
        assert all(names.STEP_NAMES[step] == words for step, words in s.steps.items()), s.name
        config = {"languages": {"xx": {"corpus": {"kind": s.name, "path": "a/file.txt"}}}}
        assert labels.corpus_label(config, "xx") == s.label.format(file="file.txt"), s.name
    readers = [
        "rules/common.smk",
        "workflow_scripts/plan/checks/inputs.py",
        "workflow_scripts/plan/checks/notes.py",
        "workflow_scripts/labels.py",
        "workflow_scripts/plan/paths.py",
        "workflow_scripts/plan/resources.py",
        "workflow_scripts/paper/names.py",
        "workflow_scripts/paper/costs.py",
        "workflow_scripts/publish/plan.py",
        "tools/preflight/__init__.py",
    ]
    for reader in readers:
        text = (REPO / reader).read_text(encoding="utf-8").lower()
        assert not re.search(r"\b(orchid|cc100|cc-100)\b", text), f"{reader} names a corpus kind"


def test_each_mt_kind_is_one_module_whose_facts_every_list_reads():
    """workflow_scripts/mt_sources/: the schema's enum, the wildcard, the job costs, the cost table's words, the labels
    and the licences come from the kind modules; the readers name no kind (a new kind is one module and, for a new kind
    of job, its rule: tests/test_new_mt_kind.py)."""
    from workflow_scripts import labels, mt_sources
    from workflow_scripts.paper import names
    from workflow_scripts.plan import resources
    from workflow_scripts.publish.plan import data_licences

    specs = list(mt_sources.MT_SOURCES.values())
    assert [s.order for s in specs] == sorted(s.order for s in specs)
    assert sorted(p.stem for p in (REPO / "workflow_scripts" / "mt_sources").glob("*.py")) == sorted(
        [*mt_sources.MT_SOURCES, "__init__", "pairs_file"]
    )

    def kind(schema: dict) -> dict:
        return schema["properties"]["languages"]["additionalProperties"]["properties"]["mt"]["properties"]["kind"]

    assert kind(with_registries(SCHEMA))["enum"] == list(mt_sources.MT_SOURCES) == ["l10n", "flores", "tsv", "jsonl"]
    assert "enum" not in kind(SCHEMA), "a list of kinds in the schema would be a second registry"
    rules = "".join(p.read_text(encoding="utf-8") for p in (REPO / "rules").glob("*.smk"))
    for s in specs:
        assert f"rule {s.rule}:" in rules and s.name in mt_sources.made_by(s.rule), s.name
        assert all(resources.SIZE_RESOURCES[rule].base == cost for rule, cost in s.costs.items()), s.name
        assert all(names.STEP_NAMES[step] == words for step, words in s.steps.items()), s.name
        config = {"languages": {"xx": {"corpus": {"kind": "l10n"}, "mt": {"kind": s.name, "path": "a/pairs.tsv"}}}}
        assert labels.mt_label(config, "xx") == s.label.format(file="pairs.tsv"), s.name
        assert data_licences("l10n", s.name)[1] == s.licence, s.name
    readers = [
        "rules/common.smk",
        "workflow_scripts/plan/checks/inputs.py",
        "workflow_scripts/plan/checks/notes.py",
        "workflow_scripts/plan/build.py",
        "workflow_scripts/labels.py",
        "workflow_scripts/plan/paths.py",
        "workflow_scripts/plan/resources.py",
        "workflow_scripts/paper/names.py",
        "workflow_scripts/paper/costs.py",
        "workflow_scripts/publish/plan.py",
        "tools/preflight/__init__.py",
    ]
    for reader in readers:
        text = (REPO / reader).read_text(encoding="utf-8").lower()
        assert not re.search(r"[\"'](flores|tsv|jsonl)[\"']|\b(flores_mt|own_mt)\b", text), f"{reader} names an MT kind"


def test_an_unregistered_kind_is_named_with_the_registered_ones():
    from workflow_scripts import corpora, mt_sources
    from workflow_scripts.publish.plan import data_licences

    assert data_licences("l10n", "flores") == (corpora.spec("l10n").licence, mt_sources.spec("flores").licence)
    with pytest.raises(KeyError, match="unknown MT test-set kind 'ted'") as e:
        data_licences("l10n", "ted")
    assert "workflow_scripts/mt_sources/" in str(e.value) and all(k in str(e.value) for k in mt_sources.MT_SOURCES)
    with pytest.raises(KeyError, match="unknown corpus kind 'wiki'") as e:
        corpora.spec("wiki")
    assert "workflow_scripts/corpora/" in str(e.value) and all(k in str(e.value) for k in corpora.CORPORA)


def test_the_schema_keeps_only_kind_and_label_of_a_data_block_and_each_kind_brings_its_keys():
    from dataclasses import replace

    from workflow_scripts import corpora, mt_sources
    from workflow_scripts.plan.checks.schema import _with_kinds

    def block(schema: dict, name: str) -> dict:
        return schema["properties"]["languages"]["additionalProperties"]["properties"][name]["properties"]

    for name, table in (("corpus", corpora.CORPORA), ("mt", mt_sources.MT_SOURCES)):
        assert set(block(SCHEMA, name)) == {"kind", "label"}, name
        merged = block(with_registries(SCHEMA), name)
        declared = {key for spec in table.values() for key in spec.keys}
        assert set(merged) == {"kind", "label", *declared}, name
    corpus = block(with_registries(SCHEMA), "corpus")
    assert corpus["path"]["description"].endswith("Read by kinds cc100 and text.")
    assert corpus["deb"]["description"] == "The .deb file. Read by kind l10n."
    assert block(with_registries(SCHEMA), "mt")["path"]["minLength"] == 1

    # two kinds declaring one key differently: an error naming both, not the first one's rules silently
    odd = dict(corpora.CORPORA)
    odd["text"] = replace(odd["text"], keys={"path": {"type": "integer"}})
    with pytest.raises(ValueError, match="corpus kinds 'cc100' and 'text' declare the key 'path' differently"):
        _with_kinds(SCHEMA, "corpus", odd, "")
