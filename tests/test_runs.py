"""Run folders: every configuration writes under results/<run>/, so two configurations never share an output path,
a dry run never mistakes another configuration's outputs for its own, and outputs outside any run folder are named
and moved without recomputing."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from tests.conftest import REPO, expected_counts, planned_jobs, snakemake, tiny_config
from tools import migrate_results
from workflow_scripts.plan import runs


def test_run_name_is_the_key_else_the_config_files_name():
    assert runs.run_name({}, ["config.yaml"]) == "default"
    assert runs.run_name({}, ["configs/paper.yaml"]) == "paper"
    assert runs.run_name({}, ["/somewhere/else/config.yaml"]) == "default"
    assert runs.run_name({}, ["configs/paper.yaml", "mine.yml"]) == "paper+mine"
    assert runs.run_name({"run": "pilot"}, ["configs/paper.yaml"]) == "pilot"
    assert runs.run_name({}, []) == "default"


@pytest.mark.parametrize(
    "name, problem",
    [
        ("default", None),
        ("paper+mine", None),
        ("v1.2_a-b", None),
        ("downloads", "shared by every run"),
        ("../x", "a run folder name is letters"),
        ("-x", "a run folder name is letters"),
        ("a/b", "a run folder name"),
    ],
)
def test_run_name_problems(name, problem):
    found = runs.run_name_problem(name)
    assert (found is None) if problem is None else (problem in found)


def test_a_run_folder_belongs_to_the_config_files_that_claimed_it(tmp_path):
    root = tmp_path / "results" / "paper"
    assert runs.owner_conflict(root, ["configs/paper.yaml"], tmp_path) is None  # nothing claimed yet
    runs.claim(root, [tmp_path / "configs" / "paper.yaml"], tmp_path)
    assert json.loads((root / runs.MARKER).read_text()) == {"configfiles": ["configs/paper.yaml"]}  # relative
    assert runs.owner_conflict(root, [tmp_path / "configs/paper.yaml"], tmp_path) is None
    assert runs.owner_conflict(root, ["configs/paper.yaml"], tmp_path.parent / tmp_path.name) is None
    problem = runs.owner_conflict(root, [tmp_path / "paper.yaml"], tmp_path)
    assert problem == (
        f"{root}/ holds the outputs of --configfile configs/paper.yaml, not of paper.yaml; two configurations never "
        f"share a run folder: give this one its own `run:` name (or --config run=NAME), or, to let it take the "
        f"folder over, delete {root / runs.MARKER}"
    )
    runs.claim(root, [tmp_path / "paper.yaml"], tmp_path)  # a second claim changes nothing
    assert json.loads((root / runs.MARKER).read_text()) == {"configfiles": ["configs/paper.yaml"]}


def outside_layout(results):
    """Outputs of a default run lying directly under results/, as every run wrote them before run folders."""
    files = [
        "tables/results.csv",
        "paper/tables.md",
        "paper/table1.md",
        "analysis/fragmentation.csv",
        "data/th/l10n/train.txt",
        "models/smollm2/source/config.json",
        "logs/lapt/smollm2.th.Mean.log",
        "logs/tables/tables.log",
        "benchmarks/lapt/smollm2.th.Mean.tsv",
        "smollm2/th/tokenizer/aux4000.k100/tokenizer.json",
        "smollm2/th/Source/eval/mt.json",
        "downloads/hf/belebele/README.md",
    ]
    for name in files:
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).write_text(name)
        os.utime(results / name, ns=(10**18, 10**18))
    return files


def test_outputs_outside_run_folders_are_found_and_moved_keeping_their_times(tmp_path, monkeypatch):
    results = tmp_path / "results"
    files = outside_layout(results)
    runs.claim(results / "pilot", ["configs/pilot.yaml"], tmp_path)  # a run folder: not outside
    (results / "pilot" / "tables").mkdir()
    found = [p.name for p in runs.outside_runs(results)]
    assert found == ["analysis", "benchmarks", "data", "logs", "models", "paper", "smollm2", "tables"]
    message = runs.outside_runs_message(runs.outside_runs(results), "default")
    assert message.startswith(
        "results/ holds outputs outside any run folder (analysis/, benchmarks/, data/, logs/, models/, paper/, "
        "smollm2/, tables/); this run writes under results/default/ and does not read them."
    )
    assert "`python -m tools.migrate_results --configfile <that config>`" in message

    monkeypatch.chdir(tmp_path)
    assert migrate_results.main(["-n"]) == 0
    assert sorted(p.name for p in runs.outside_runs(results)) == found  # -n moves nothing
    assert migrate_results.main([]) == 0  # config.yaml's run: default
    for name in files:
        moved = results / name if name.startswith("downloads/") else results / "default" / name
        assert moved.read_text() == name and moved.stat().st_mtime_ns == 10**18, name
    assert runs.outside_runs(results) == []
    assert runs.owner(results / "default") == ["config.yaml"]
    assert migrate_results.main([]) == 0  # nothing left to move


def test_a_move_never_overwrites(tmp_path, monkeypatch):
    results = tmp_path / "results"
    outside_layout(results)
    (results / "default" / "tables").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"already in .*default/tables; nothing was moved"):
        runs.migrate("default", ["config.yaml"], results)
    assert (results / "tables" / "results.csv").is_file() and (results / "smollm2").is_dir()
    # the paper tables folder of outputs outside any run is not the paper run's folder
    monkeypatch.chdir(tmp_path)
    assert migrate_results.main(["--configfile", "configs/paper.yaml"]) == 1


def _dry_run_counts(workdir, config):
    out = snakemake(["-n", "--quiet", "rules", "--configfile", str(config)], workdir)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.slow  # a dry run of the paper grid: about 8 s of CPU
def test_paper_grid_plans_every_job_beside_another_runs_outputs(tmp_path):
    """The default's tables (the outputs rule all asks for) exist, in its run folder and outside any: the paper grid
    still plans all its jobs (beside a real run, with its Snakemake records and without: tests/test_workflow.py), its
    own tables, fragmentation analysis and paper tables (the default's files of the same names) included."""
    paper = tmp_path / "paper.yaml"
    shutil.copy(REPO / "configs" / "paper.yaml", paper)
    default = tiny_config(tmp_path, "config.yaml")
    outside_layout(tmp_path / "results")
    shutil.rmtree(tmp_path / "results" / "downloads")  # shared by every run: its mirrors would count as done
    written = {
        "tables/results.csv": "tables",
        "tables/results.md": "tables",
        "analysis/fragmentation.csv": "fragmentation",
        "paper/tables.md": "paper_tables",
    }
    for target in written:
        (tmp_path / "results" / "default" / target).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / "default" / target).write_text("")
    out = _dry_run_counts(tmp_path, paper)
    assert "Nothing to be done" not in out.stdout + out.stderr
    counts, expected = planned_jobs(out.stdout), expected_counts(yaml.safe_load(paper.read_text()))
    assert {rule: counts[rule] for rule in expected} == expected and sum(counts.values()) > 3000
    assert {rule: counts[rule] for rule in written.values()} == dict.fromkeys(written.values(), 1)
    # and the default's own plan names the outputs outside any run folder
    plan = snakemake(["-n", "--quiet", "--configfile", str(default)], tmp_path)
    assert "config warning: results/ holds outputs outside any run folder" in plan.stderr


@pytest.mark.slow  # Snakemake dry runs of the tiny grid: about 2 s of CPU each
def test_another_configuration_cannot_write_a_claimed_run_folder(tmp_path):
    config = tiny_config(tmp_path)
    runs.claim(tmp_path / "results" / "default", [tmp_path / "other" / "config.yaml"], tmp_path)
    out = snakemake(["-n", "--configfile", str(config)], tmp_path)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "results/default/ holds the outputs of --configfile other/config.yaml, not of config.yaml" in text
    # its own run name: planned, with every output under results/tiny-grid/
    settings = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**settings, "run": "tiny-grid"}))
    out = snakemake(["-n", "-p", "--configfile", str(config)], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    outputs = [line.split(":", 1)[1] for line in out.stdout.splitlines() if line.strip().startswith("output:")]
    paths = [p.strip() for line in outputs for p in line.split(",")]
    assert paths and all(p.startswith("results/tiny-grid/") for p in paths), paths


@pytest.mark.slow  # Snakemake on the tiny grid, stopped before its first job: about 2 s of CPU
def test_a_real_run_waits_while_its_folder_holds_outputs_outside_any_run(tmp_path):
    config = tiny_config(tmp_path, run="paper")
    outside_layout(tmp_path / "results")  # results/paper/: the paper tables of outputs outside any run folder
    plan = snakemake(["-n", "--quiet", "--configfile", str(config)], tmp_path)
    assert plan.returncode == 0 and "config warning: results/paper/ is not a run folder yet" in plan.stderr
    run = snakemake(["--cores", "1", "--configfile", str(config)], tmp_path)
    assert run.returncode != 0
    assert "a real run of this configuration waits until it is emptied" in run.stdout + run.stderr
    assert sorted(p.name for p in (tmp_path / "results" / "paper").iterdir()) == ["table1.md", "tables.md"]
