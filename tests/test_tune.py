"""tools/tune.py: LAPT settings tried on a validation split that no reported number reads."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO, tiny_config
from tools.tune import validation_sentences
from workflow_scripts.io import UserError


class _Layout:
    """The two Layout methods validation_sentences reads, over a folder of data files."""

    def __init__(self, folder, kind="l10n"):
        self.folder, self.kind = folder, kind

    def corpus_kind(self, lang):
        return self.kind

    def data_file(self, lang, name):
        return str(self.folder / name)


def test_the_validation_split_is_the_pairs_no_data_file_took(tmp_path):
    pairs = [(f"english {i}", f"target {i}") for i in range(10)]
    (tmp_path / "pairs.tsv").write_text("".join(f"{e}\t{t}\n" for e, t in [*pairs, pairs[9]]))
    (tmp_path / "train.txt").write_text("target 0\ntarget 1\ntarget 2\n")
    (tmp_path / "heldout.txt").write_text("target 3\ntarget 4\n")
    (tmp_path / "mt.tsv").write_text("english 5\ttarget 5\n")
    sentences, source = validation_sentences(_Layout(tmp_path), "th", None, 100)
    assert sentences == ["target 6", "target 7", "target 8", "target 9"]  # in file order, each once
    assert "pairs outside D, heldout.txt and mt.tsv" in source
    assert validation_sentences(_Layout(tmp_path), "th", None, 2)[0] == ["target 6", "target 7"]


def test_a_corpus_without_spare_pairs_or_not_l10n_needs_a_validation_file(tmp_path):
    (tmp_path / "pairs.tsv").write_text("e\tt1\n")
    (tmp_path / "train.txt").write_text("t1\n")
    (tmp_path / "heldout.txt").write_text("t1\n")
    (tmp_path / "mt.tsv").write_text("")
    with pytest.raises(
        UserError, match=re.escape("every pair went to D, heldout.txt or mt.tsv; give a file with --validation")
    ):
        validation_sentences(_Layout(tmp_path), "th", None, 10)
    with pytest.raises(
        UserError, match=re.escape("languages.th.corpus is 'text': give a validation file with --validation")
    ):
        validation_sentences(_Layout(tmp_path, "text"), "th", None, 10)
    given = tmp_path / "validation.txt"
    given.write_text("v1\nv2\nv3\n")
    assert validation_sentences(_Layout(tmp_path, "text"), "th", str(given), 2) == (["v1", "v2"], str(given))


@pytest.mark.e2e
def test_tune_trains_each_setting_apart_from_the_run(tmp_path):
    """The tiny grid up to its initialized models, then two learning rates of Mean: one row each and Source's, on
    validation sentences outside every data file; the run's own cells are not trained by it."""
    config = tiny_config(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
    }
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path)]
    done = subprocess.run(
        [*snakemake, "--cores", "2", "--configfile", str(config), "--until", "initialize"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cmd = [
        sys.executable,
        "-m",
        "tools.tune",
        "--configfile",
        str(config),
        "--method",
        "Mean",
        "--lr",
        "1e-3",
        "3e-3",
        "--max-steps",
        "2",
        "--n",
        "20",
        "--threads",
        "1",
    ]
    tuned = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    with open(tmp_path / "results/default/tuning/lapt.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    langs = list(yaml.safe_load(config.read_text())["languages"])
    assert [(r["language"], r["method"], r["lr"], r["steps"]) for r in rows] == [
        row
        for lang in langs
        for row in [(lang, "Source", "", ""), (lang, "Mean", "0.001", "2"), (lang, "Mean", "0.003", "2")]
    ]
    for r in rows:
        assert float(r["validation_bpc"]) > 0 and r["sentences"] == "20"
    source = {r["language"]: float(r["validation_bpc"]) for r in rows if r["method"] == "Source"}
    for r in rows:
        assert float(r["vs_source"]) == pytest.approx(float(r["validation_bpc"]) - source[r["language"]], abs=2e-4)
    assert "| th | Mean | 0.001 | 2 |" in tuned.stdout
    assert not list(tmp_path.glob("results/default/*/*/*/model"))  # no cell of the run was trained
    assert not list(tmp_path.glob("results/default/tune-*"))  # the scratch folders are gone
