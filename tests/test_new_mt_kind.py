"""A new MT test-set kind is one module in workflow_scripts/mt_sources/ and, for a new kind of job, its rule
(docs/extending.md, "An MT test-set kind"): the toy kind ``ted`` (tests/fixtures/ted_mt.py, its rule
tests/fixtures/ted_mt.smk), dropped into a copy of the workflow, is admitted by the schema with its own key, plans the
job its spec names (writing ``data/<lang>/ted/mt.tsv``, read by the mt evaluation), and its label, licence, cost and
words reach the readers; a misspelt kind or a bad value of its key is refused before any job."""

from __future__ import annotations

import json
import re

import yaml

from tests.conftest import REPO
from tests.test_new_task import run, workflow_copy

TOY = REPO / "tests" / "fixtures" / "ted_mt.py"
TOY_RULE = REPO / "tests" / "fixtures" / "ted_mt.smk"

READERS = """
import json
from workflow_scripts.plan.checks.schema import load_schema, with_registries
from workflow_scripts.mt_sources import MT_SOURCES
from workflow_scripts.labels import mt_label
from workflow_scripts.paper.costs import parse_benchmark_name
from workflow_scripts.paper.names import step_name
from workflow_scripts.publish.plan import data_licences
from workflow_scripts.plan.resources import SIZE_RESOURCES

config = {"languages": {"th": {"corpus": {"kind": "l10n"}, "mt": {"kind": "ted", "path": "talks/th.tsv"}}}}
schema = with_registries(load_schema("schemas/config.schema.yaml"))
mt = schema["properties"]["languages"]["additionalProperties"]["properties"]["mt"]
print(json.dumps({
    "kinds": list(MT_SOURCES),
    "enum": mt["properties"]["kind"]["enum"],
    "release": "release" in mt["properties"],
    "label": mt_label(config, "th"),
    "licence": data_licences("l10n", "ted")[1],
    "words": step_name("ted_mt"),
    "row": parse_benchmark_name("ted_mt", "th")[2],
    "cost": "ted_mt" in SIZE_RESOURCES,
}))
"""


def test_a_new_mt_kind_is_one_module_and_its_rule(tmp_path):
    wf = workflow_copy(tmp_path / "wf")
    (wf / "workflow_scripts" / "mt_sources" / "ted.py").write_text(TOY.read_text(encoding="utf-8"), encoding="utf-8")
    with (wf / "rules" / "data.smk").open("a", encoding="utf-8") as rules:
        rules.write(TOY_RULE.read_text(encoding="utf-8"))
    (wf / "th.tsv").write_text("".join(f"Talk line {i}\tภาษาไทย บรรทัด {i}\n" for i in range(100)), encoding="utf-8")
    config = yaml.safe_load((wf / "config.yaml").read_text(encoding="utf-8"))
    config["languages"]["th"]["mt"] = {"kind": "ted", "path": "th.tsv", "release": "2020"}
    (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    plan = run(["-m", "snakemake", "-n", "-p", "--configfile", "study.yaml"], wf)
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = plan.stdout.split("\n\n")
    ted = [j for j in jobs if re.search(r"^(local)?rule ted_mt:", j, flags=re.M)]
    assert len(ted) == 1 and "results/study/data/th/ted/mt.tsv" in ted[0] and "--input th.tsv" in ted[0]
    assert "--label 'TED talks (th.tsv)'" in ted[0]
    readers_of_mt = [j for j in jobs if "results/study/data/th/ted/mt.tsv" in j and "ted_mt" not in j]
    assert readers_of_mt  # the mt evaluation reads the new kind's pairs

    readers = run(["-c", READERS], wf)
    assert readers.returncode == 0, readers.stderr[-3000:]
    facts = json.loads(readers.stdout)
    assert facts["kinds"] == facts["enum"] == ["l10n", "flores", "tsv", "jsonl", "ted"] and facts["release"]
    assert facts["label"] == "TED talks (th.tsv)" and facts["licence"] == "cc-by-nc-nd-4.0"
    assert facts["words"] == "data: TED pairs" and facts["row"] == "(shared) data: ted_mt"
    assert facts["cost"]

    wrong = {"kind": {"kind": "tedd", "path": "th.tsv"}, "release": {"kind": "ted", "path": "th.tsv", "release": "20"}}
    for key, mt in wrong.items():
        config["languages"]["th"]["mt"] = mt
        (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        refused = run(["-m", "snakemake", "-n", "--configfile", "study.yaml"], wf)
        out = refused.stderr + refused.stdout
        line = next((x for x in out.splitlines() if f"languages.th.mt.{key}:" in x), "")
        assert refused.returncode != 0 and line, out[-3000:]
        assert key != "kind" or "'jsonl', 'ted']" in line, line  # the registered kinds, the new one among them
