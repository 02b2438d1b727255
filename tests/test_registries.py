"""One list per concept: the registries (initialize.INIT_METHODS, lapt.PROCEDURES / OBJECTIVES, steps.TASKS) are
the truth; the schema, the config check, the GPU estimate and the rules must agree with them (init and procedure: the
schema admits the registries' names at validation, it lists none of its own)."""

from __future__ import annotations

import re

import yaml

from tests.conftest import REPO
from workflow_scripts import grid, initialize, lapt, steps
from workflow_scripts.config_checks import IMPLEMENTED
from workflow_scripts.config_checks.schema import registered, with_registries
from workflow_scripts.gpu import estimate as gpu_estimate
from workflow_scripts.lapt.hparams import WEIGHTS_DTYPES, weights_dtype_on
from workflow_scripts.lapt.procedures import adds_lora

SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))


def schema_values(field: str, schema: dict = SCHEMA) -> list[str] | None:
    """The values the schema admits for a method field (its single-value branch) or for evaluation.tasks; None where
    it admits any string."""
    if field == "tasks":
        return schema["properties"]["evaluation"]["properties"]["tasks"]["items"]["enum"]
    single, many = schema["$defs"]["method"]["properties"][field]["oneOf"]
    assert many["items"].get("enum") == single.get("enum"), f"{field}: the list form admits other values"
    return single.get("enum")


def test_schema_admits_exactly_what_is_implemented():
    for field in ("vocab", "objective", "posthoc", "tasks"):
        assert set(schema_values(field)) == IMPLEMENTED[field], field
    # init and procedure are strings in the schema file; the names come from the registries, at validation
    for field in ("init", "procedure"):
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


def test_gpu_estimate_describes_every_registered_procedure():
    """The estimate reads no lapt module (lapt imports it): its stages, LoRA and GPU weights dtype must agree."""
    assert tuple(gpu_estimate.STAGES) == tuple(lapt.PROCEDURES) == gpu_estimate.PROCEDURES
    for name, procedure in lapt.PROCEDURES.items():
        assert len(gpu_estimate.STAGES[name]) == len(procedure.stages), name
        for eeve_layers in ("full", "LoRA"):
            assert gpu_estimate.adds_lora(name, eeve_layers) == adds_lora(name, {"eeve_layers": eeve_layers}), name
    for configured in WEIGHTS_DTYPES:
        assert gpu_estimate.weights_dtype_on_gpu(configured) == weights_dtype_on(configured, "cuda")


def test_every_task_has_a_rule_writing_its_result():
    rules = (REPO / "rules" / "evaluate.smk").read_text(encoding="utf-8")
    outputs = set(re.findall(r'eval_file\(name="(\w+)\.json"\)', rules))
    assert outputs - {"sum_bleurt"} == set(steps.TASKS)  # sum_bleurt: a second metric of sum's predictions
