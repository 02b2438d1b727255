"""One list per concept: the registries (initialize.INIT_METHODS, lapt.PROCEDURES / OBJECTIVES, evaluation.TASKS) are
the truth; the schema, the config check, the GPU estimate and the rules must agree with them."""

from __future__ import annotations

import re

import yaml

from tests.conftest import REPO
from tools import gpu_estimate
from workflow_scripts import evaluation, grid, initialize, lapt

SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))


def schema_values(field: str) -> list[str]:
    """The values the schema admits for a method field (its single-value branch) or for evaluation.tasks."""
    if field == "tasks":
        return SCHEMA["properties"]["evaluation"]["properties"]["tasks"]["items"]["enum"]
    single, many = SCHEMA["$defs"]["method"]["properties"][field]["oneOf"]
    assert many["items"]["enum"] == single["enum"], f"{field}: the list form admits other values"
    return single["enum"]


def test_schema_admits_exactly_what_is_implemented_or_reserved():
    for field in ("init", "vocab", "procedure", "objective", "posthoc", "tasks"):
        implemented, reserved = grid.IMPLEMENTED[field], grid.NOT_YET.get(field, set())
        assert not implemented & reserved, f"{field}: {implemented & reserved} implemented but still in NOT_YET"
        assert set(schema_values(field)) == implemented | reserved, field


def test_registries_are_what_the_config_check_accepts():
    assert grid.IMPLEMENTED["init"] == {"none", *initialize.INIT_METHODS}
    assert grid.IMPLEMENTED["procedure"] == {"none", grid.MUMO, *lapt.PROCEDURES}
    assert grid.IMPLEMENTED["objective"] == set(lapt.OBJECTIVES)
    assert grid.IMPLEMENTED["tasks"] == set(evaluation.TASKS)
    # The registry lists the methods in the paper's (and the schema's) order, which reports follow.
    assert list(initialize.INIT_METHODS) == [v for v in schema_values("init") if v != "none"]
    assert set(initialize.CORPUS_METHODS) == {"Align", "FOCUS"}


def test_gpu_estimate_describes_every_registered_procedure():
    assert set(gpu_estimate.STAGES) == set(lapt.PROCEDURES) == set(gpu_estimate.PROCEDURES)
    for name, procedure in lapt.PROCEDURES.items():
        assert len(gpu_estimate.STAGES[name]) == len(procedure.stages), name


def test_every_task_has_a_rule_writing_its_result():
    rules = (REPO / "rules" / "evaluate.smk").read_text(encoding="utf-8")
    outputs = set(re.findall(r"/eval/(\w+)\.json", rules))
    assert outputs - {"sum_bleurt"} == set(evaluation.TASKS)  # sum_bleurt: a second metric of sum's predictions
