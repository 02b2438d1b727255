"""A new corpus kind is one module in workflow_scripts/corpora/ (docs/extending.md, "A corpus kind"): the toy kind
``wiki`` (tests/fixtures/wiki_corpus.py), dropped into a copy of the workflow, is admitted by the schema with its own
key, plans the sampling job its spec names (writing ``data/<lang>/wiki/``, read by the tokenizer and training jobs),
and its label, licence, cost and words reach the readers; a misspelt kind or a bad value of its key is refused before
any job."""

from __future__ import annotations

import json
import re

import yaml

from tests.conftest import REPO
from tests.test_new_task import run, workflow_copy

TOY = REPO / "tests" / "fixtures" / "wiki_corpus.py"
TH_DEB = "resources/l10n/libreoffice-l10n-th_4_7.4.7-1+deb12u14_all.deb"

READERS = """
import json
from workflow_scripts.plan.checks.schema import load_schema, with_registries
from workflow_scripts.corpora import CORPORA
from workflow_scripts.labels import corpus_label
from workflow_scripts.paper.costs import parse_benchmark_name
from workflow_scripts.paper.names import step_name
from workflow_scripts.publish.plan import data_licences
from workflow_scripts.plan.resources import SIZE_RESOURCES

config = {"languages": {"th": {"corpus": {"kind": "wiki", "path": "dumps/thwiki.txt.xz"}}}}
schema = with_registries(load_schema("schemas/config.schema.yaml"))
corpus = schema["properties"]["languages"]["additionalProperties"]["properties"]["corpus"]
print(json.dumps({
    "kinds": list(CORPORA),
    "enum": corpus["properties"]["kind"]["enum"],
    "dump": "dump" in corpus["properties"],
    "label": corpus_label(config, "th"),
    "licence": data_licences("wiki", "flores")[0],
    "words": step_name("sample_wiki"),
    "row": parse_benchmark_name("sample_wiki", "th")[2],
    "cost": "sample_cc100" in SIZE_RESOURCES,
}))
"""


def test_a_new_corpus_kind_is_one_module(tmp_path):
    wf = workflow_copy(tmp_path / "wf")
    (wf / "workflow_scripts" / "corpora" / "wiki.py").write_text(TOY.read_text(encoding="utf-8"), encoding="utf-8")
    # 2100 distinct Thai lines: data.n_train + data.n_heldout of config.yaml
    (wf / "th.txt").write_text("".join(f"ภาษาไทย บรรทัด {i}\n" for i in range(2200)), encoding="utf-8")
    config = yaml.safe_load((wf / "config.yaml").read_text(encoding="utf-8"))
    config["languages"]["th"] = {
        "corpus": {"kind": "wiki", "path": "th.txt", "dump": "20261201"},
        "mt": {"kind": "l10n", "deb": TH_DEB},
    }
    (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    plan = run(["-m", "snakemake", "-n", "-p", "--configfile", "study.yaml"], wf)
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = plan.stdout.split("\n\n")
    sample = [j for j in jobs if re.search(r"^(local)?rule sample_cc100:", j, flags=re.M)]
    assert len(sample) == 1 and "results/study/data/th/wiki/train.txt" in sample[0]
    assert "logs/sample_wiki/th.log" in sample[0] and "--input th.txt" in sample[0]
    aux = [j for j in jobs if re.search(r"^(local)?rule train_aux_tokenizer:", j, flags=re.M) and "/th/" in j]
    assert aux and all("results/study/data/th/wiki/train.txt" in j for j in aux)

    readers = run(["-c", READERS], wf)
    assert readers.returncode == 0, readers.stderr[-3000:]
    facts = json.loads(readers.stdout)
    assert facts["kinds"] == facts["enum"] == ["l10n", "cc100", "text", "orchid", "wiki"] and facts["dump"]
    assert facts["label"] == "Wikipedia (thwiki.txt.xz)" and facts["licence"] == "cc-by-sa-4.0"
    assert facts["words"] == "data: Wikipedia sample" and facts["row"] == "(shared) data: sample_wiki"
    assert facts["cost"]

    wrong = {"kind": {"kind": "wikki", "path": "th.txt"}, "dump": {"kind": "wiki", "path": "th.txt", "dump": "Dec"}}
    for key, corpus in wrong.items():
        config["languages"]["th"]["corpus"] = corpus
        (wf / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        refused = run(["-m", "snakemake", "-n", "--configfile", "study.yaml"], wf)
        out = refused.stderr + refused.stdout
        line = next((x for x in out.splitlines() if f"languages.th.corpus.{key}:" in x), "")
        assert refused.returncode != 0 and line, out[-3000:]
        assert key != "kind" or "'orchid', 'wiki']" in line, line  # the registered kinds, the new one among them
