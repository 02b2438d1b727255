"""The Slurm planning report: the cost table, GPU requests, dry-run parsing, and the report on the real configs."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, expected_counts, snakemake, tiny_config
from tools import slurm_profile
from tools.plan import Job, declared_local_rules, job_problems, parse_dry_run, parse_runtime, summarize
from workflow_scripts.gpu.shape import MODELS, total_parameters
from workflow_scripts.plan import speed as speed_plan
from workflow_scripts.plan.checks.partitions import known_partition_gpus, partition_has_gpus
from workflow_scripts.plan.checks.schema import fill_defaults
from workflow_scripts.plan.grid import expand_grid, tasks_of
from workflow_scripts.plan.models import describe_models
from workflow_scripts.plan.resources import (
    GPU_RULES,
    SIZE_RESOURCES,
    gpu_partition_checks,
    gpu_request_problems,
    gpus_requested,
    sized_resources,
)


def site_home(tmp_path: Path, *make_args: str) -> dict[str, str]:
    """A throwaway HOME with the site profile `slurm` written by the README's command; the environment to use it."""
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    result = subprocess.run(
        ["make", "-s", "slurm-profile", *make_args], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return env


# Three job blocks as `snakemake -n` prints them (Snakemake 9.27), with a shell command; `tables` is a local rule.
DRY_RUN = """\
[Mon Nov 30 14:01:22 2026]
rule lapt:
    input: results/default/tiny/th/init/Mean.aux1000.k50, results/default/data/th/l10n/train.txt
    output: results/default/tiny/th/Mean.k50.2x2LS.clm.L64/model
    jobid: 13
    reason: Missing output files: results/default/tiny/th/Mean.k50.2x2LS.clm.L64/model
    wildcards: model=tiny, lang=th, method=Mean.k50.2x2LS.clm.L64
    threads: 2
    resources: tmpdir=<TBD>, runtime=120, cpus_per_gpu=8, mem_mb=64000, mem=64 GB, gres=gpu:a100:2
Shell command: python -m workflow_scripts.lapt --hparams '{"a": 1, "b": 2}' --threads 2

[Mon Nov 30 14:01:22 2026]
rule split_l10n:
    input: results/default/data/th/l10n/pairs.tsv
    jobid: 4
    wildcards: lang=th
    resources: tmpdir=<TBD>, runtime=15, mem_mb=2000, slurm_extra='--comment=a,b'

[Mon Nov 30 14:01:22 2026]
rule tables:
    input: results/default/tiny/th/Source/eval/mt.json
    jobid: 1
    resources: tmpdir=<TBD>
Job stats:
job       count
-----  -------
lapt         1
"""


def test_cost_table_grows_with_each_attempt():
    llama2 = total_parameters(MODELS["llama2-7b"])  # 6.74B
    # Llama-2-7B's LAPT: 61 GB and 180 min on attempt 1; +50% of the memory and +180 min per retry.
    assert sized_resources("lapt", llama2, 1) == {"mem_mb": 61000, "runtime": 180, "cpus_per_gpu": 8}
    assert sized_resources("lapt", llama2, 2) == {"mem_mb": 91500, "runtime": 360, "cpus_per_gpu": 8}
    assert sized_resources("lapt", llama2, 3) == {"mem_mb": 122000, "runtime": 540, "cpus_per_gpu": 8}
    # A size label stands for its stand-in's parameters, a count written as text for that count.
    assert sized_resources("lapt", "7B") == sized_resources("lapt", str(llama2)) == sized_resources("lapt", llama2)
    assert sized_resources("lapt", "14B")["mem_mb"] > sized_resources("lapt", "9B")["mem_mb"]
    # Rules without a model have one cost; CPU rules get no cpus_per_gpu.
    assert sized_resources("split_l10n", None) == {"mem_mb": 2000, "runtime": 15}
    assert sized_resources("initialize", "9B") == {"mem_mb": 122000, "runtime": 150}
    with pytest.raises(KeyError, match="no cost table entry for rule 'tables'"):
        sized_resources("tables", llama2)
    with pytest.raises(KeyError, match="'huge' is not a parameter count"):
        sized_resources("lapt", "huge")
    with pytest.raises(KeyError, match="costs by the job's model"):
        sized_resources("lapt", None)


# Limits set by hand for the paper's models, on which SIZE_RESOURCES is fitted: (MB, minutes) for Llama-2-7B,
# Llama-3-8B, Gemma-2-9B.
HAND_SET = {
    "prepare_source_model": ((64000, 120), (64000, 120), (80000, 150)),
    "initialize": ((96000, 120), (96000, 120), (128000, 150)),
    "lapt": ((64000, 180), (64000, 180), (80000, 240)),
    "evaluate_mt": ((48000, 60), (48000, 60), (64000, 90)),
    "evaluate_sum": ((48000, 240), (48000, 240), (64000, 300)),
    "evaluate_cell": ((48000, 300), (48000, 300), (64000, 360)),
    "mumo_head": ((64000, 360), (64000, 360), (80000, 420)),
}


def test_costs_follow_the_parameter_count():
    paper = [total_parameters(MODELS[m]) for m in ("llama2-7b", "llama3-8b", "gemma2-9b")]
    for rule, limits in HAND_SET.items():
        for parameters, (mem_mb, minutes) in zip(paper, limits, strict=True):
            got = sized_resources(rule, parameters)
            assert 0.85 <= got["mem_mb"] / mem_mb <= 1.25 and 0.85 <= got["runtime"] / minutes <= 1.25, (rule, got)
    smollm2, tiny = total_parameters(MODELS["smollm2-135m"]), 3_392_320  # configs/test.yaml's random Llama
    assert sized_resources("lapt", smollm2) == {"mem_mb": 8000, "runtime": 60, "cpus_per_gpu": 4}
    assert sized_resources("lapt", tiny) == {"mem_mb": 2000, "runtime": 20, "cpus_per_gpu": 2}  # a 2-CPU CI node
    # a larger model never asks for less, and a model-free rule asks the same of every model
    for rule, cost in SIZE_RESOURCES.items():
        sizes = [None] if cost.any_model and rule not in GPU_RULES else [tiny, smollm2, *paper, 14_000_000_000]
        asks = [sized_resources(rule, n) for n in sizes]
        assert all(a["mem_mb"] <= b["mem_mb"] and a["runtime"] <= b["runtime"] for a, b in pairwise(asks)), rule


@pytest.mark.parametrize(
    ("resources", "gpus"),
    [
        ({"gpu": 2}, 2),
        ({"gpu": "1"}, 1),
        ({"gpu": 0}, 0),
        ({"gres": "gpu:a100:2"}, 2),
        ({"gres": "gpu"}, 1),
        ({"gres": "gpu:a100"}, 1),
        ({"gres": "tmpfs:10G"}, 0),
        ({"gpu_model": "a100"}, 1),
        ({"mem_mb": 1000}, 0),
    ],
)
def test_gpus_requested_reads_gpu_gres_and_gpu_model(resources, gpus):
    assert gpus_requested(resources) == gpus


def test_runtime_units():
    assert parse_runtime(90) == 90.0
    assert parse_runtime("2d") == 2880.0
    assert parse_runtime("1.5h") == 90.0
    assert parse_runtime("45m") == 45.0
    assert parse_runtime("1h30m") is None  # Slurm's executor rejects it too (one unit only)
    assert parse_runtime(None) is None


def test_gpu_on_a_cpu_rule_and_missing_gpu_on_a_7b_model_are_flagged():
    gpu_models = {"llama2": "7B"}  # the models that need a GPU (tiny does not)
    good = {rule: {"gpu": 1} for rule in GPU_RULES}
    assert gpu_request_problems(good, None, gpu_models, require_gpu=True) == []

    bad = {**good, "split_l10n": {"gres": "gpu:1"}}
    (problem,) = gpu_request_problems(bad, None, gpu_models, require_gpu=True)
    assert problem.startswith("set-resources split_l10n: asks for a GPU, but rule split_l10n cannot use one")

    (problem,) = gpu_request_problems(good, {"gpu": 1}, gpu_models, require_gpu=True)
    assert problem.startswith("default-resources asks for a GPU for every rule")

    no_lapt = {rule: r for rule, r in good.items() if rule != "lapt"}
    (problem,) = gpu_request_problems(no_lapt, None, gpu_models, require_gpu=True)
    assert problem.startswith("set-resources lapt: no GPU requested")
    assert "models that need one (1B parameters or more): llama2 (7B)" in problem
    # A grid of small models may train on CPUs; a run without a GPU profile is not flagged.
    assert gpu_request_problems(no_lapt, None, {}, require_gpu=True) == []
    assert gpu_request_problems(no_lapt, None, gpu_models, require_gpu=False) == []


def test_parse_dry_run_jobs_and_totals():
    jobs = parse_dry_run(DRY_RUN, {"all", "tables"})
    assert [(j.rule, j.local) for j in jobs] == [("lapt", False), ("split_l10n", False), ("tables", True)]
    lapt, split, _ = jobs
    assert lapt.wildcards == {"model": "tiny", "lang": "th", "method": "Mean.k50.2x2LS.clm.L64"}
    assert lapt.threads == 2 and lapt.gpus == 2 and lapt.cpus == 16 and lapt.runtime_min == 120
    assert split.resources["slurm_extra"] == "'--comment=a,b'" and split.cpus == 1 and split.gpus == 0

    summary = summarize(jobs, {"tiny": "demo"})
    total = summary["total"]
    # lapt: 2 GPUs x 2 h = 4 GPU-hours, 16 CPUs x 2 h = 32 CPU-hours; split: 1 CPU x 0.25 h.
    assert (total.jobs, total.gpu_jobs, total.gpu_hours, total.cpu_hours) == (2, 1, 4.0, 32.25)
    assert summary["local"] == {"tables": 1}
    assert summary["by_model"]["tiny"].gpu_hours == 4.0 and summary["by_model"]["(data)"].jobs == 1


def test_local_rules_are_read_from_the_workflow(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "Snakefile").write_text("localrules: a, b\n\nrule all:\n    input: 'x'\n")
    (tmp_path / "rules" / "x.smk").write_text("localrules:\n    c,\n    d,\n\n\nrule c:\n    output: 'y'\n")
    assert declared_local_rules(tmp_path) == {"all", "a", "b", "c", "d"}
    assert {"download_cc100", "tables"} <= declared_local_rules() and "lapt" not in declared_local_rules()


def test_job_problems_on_resolved_jobs():
    sizes = {"llama2": "7B"}
    jobs = [
        Job("lapt", False, {"model": "llama2"}, {"runtime": 60}),
        Job("expand_tokenizer", False, {"model": "llama2"}, {"gpu": 1}),
        Job("tables", True, {}, {"gpu": 1}),  # local: never submitted
    ]
    gpu_on_cpu_rule, no_gpu = sorted(job_problems(jobs, sizes, cluster=True))
    assert gpu_on_cpu_rule.startswith("rule expand_tokenizer cannot use a GPU")
    assert no_gpu.startswith("rule lapt gets no GPU for model llama2 of size 7B")
    assert job_problems(jobs, sizes, cluster=False) == [gpu_on_cpu_rule]


def plan(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tools.plan", "--directory", str(tmp_path), *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, **(env or {})})


def task_rule(task: str) -> str:
    """The rule that writes eval/{task}.json (rules/evaluate.smk)."""
    return "measure_speed" if task == "speed" else f"evaluate_{task}"


@pytest.mark.slow  # a dry run of the whole paper grid: about 20 s
def test_report_on_the_paper_grid(tmp_path):
    config = REPO / "configs" / "paper.yaml"
    env = site_home(tmp_path, "ACCOUNT=my_project", "PARTITION=cpu", "GPU_PARTITION=gpu")
    result = plan(
        tmp_path, "--configfile", str(config), "--profile", "slurm", "--json", str(tmp_path / "p.json"), env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "p.json").read_text())
    grid = yaml.safe_load(config.read_text())
    validated = copy.deepcopy(grid)
    fill_defaults(validated, REPO / "schemas" / "config.schema.yaml")
    counts = expected_counts(grid)
    for rule, n in counts.items():
        assert report["by_rule"][rule]["jobs"] == n
    assert report["by_rule"]["lapt"]["gpu_jobs"] == counts["lapt"] > 0
    assert report["by_rule"]["initialize"]["gpu_jobs"] == 0
    assert report["gpus_per_job"]["evaluate_ppl"] == [1] and report["gpus_per_job"]["expand_tokenizer"] == [0]
    # Each model's GPU-hours from its cells: one LAPT job per trained cell, one job per task and cell, each for its
    # time limit at the model's parameter count (1 GPU per job: the GPU rules ask for it themselves).
    described = describe_models(grid)
    for model in grid["models"]:
        size = described[model].parameters
        cells = [m for name, _, m in expand_grid(grid) if name == model]
        trained = {
            (lang, m.adapted.slug)
            for name, lang, m in expand_grid(grid)
            if name == model and m.trains and not m.is_mumo
        }
        minutes = len(trained) * sized_resources("lapt", size)["runtime"]
        heads = len({lang for name, lang, m in expand_grid(grid) if name == model and m.is_mumo})
        minutes += heads * sized_resources("mumo_head", size)["runtime"]
        for task in grid["evaluation"]["tasks"]:
            n = sum(task in tasks_of(m, grid["evaluation"]["tasks"]) for m in cells)
            if task == "speed":  # its time limit follows its planned workload
                minutes += n * speed_plan.runtime_minutes(validated, described[model])
            else:
                minutes += n * sized_resources(task_rule(task), size)["runtime"]
            if task == "sum" and validated["evaluation"]["sum"]["bleurt"]:  # BLEURT scores each sum cell's output
                minutes += n * sized_resources("score_bleurt", size)["runtime"]
        assert report["by_model"][model]["gpu_hours"] == pytest.approx(minutes / 60, abs=1e-3)
    assert report["sizes"] == {"llama2": "7B", "llama3": "8B", "gemma2": "9B"}
    assert report["local"]["download_cc100"] == len(grid["languages"])
    assert "download_cc100" not in report["by_rule"] and "tables" not in report["by_rule"]
    assert "GPU-hours" in result.stdout and f"| lapt | {counts['lapt']} | 1 |" in result.stdout


@pytest.mark.slow  # a dry run
def test_report_on_the_test_config_without_a_profile(tmp_path):
    config = tiny_config(tmp_path)  # configs/test.yaml with its data package path made absolute
    result = plan(tmp_path, "--configfile", str(config), "--json", str(tmp_path / "p.json"))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "p.json").read_text())
    counts = expected_counts(yaml.safe_load(config.read_text()))
    n = counts["lapt"]
    # No profile: the GPU rules still ask for their GPU (the rules' own resources), and only they: LAPT and one job
    # per evaluation task and cell.
    tasks = yaml.safe_load(config.read_text())["evaluation"]["tasks"]
    assert report["total"]["gpu_jobs"] == n + len(tasks) * counts["evaluate_mt"]
    assert report["gpus_per_job"]["lapt"] == [1] and report["gpus_per_job"]["initialize"] == [0]
    # demo size: 20 min and 2 GB per LAPT job, 1 GPU with 2 CPUs (cpus_per_gpu) each.
    assert report["by_rule"]["lapt"] == {
        "jobs": n,
        "gpu_jobs": n,
        "gpu_hours": pytest.approx(n * 20 / 60, abs=1e-3),
        "cpu_hours": pytest.approx(n * 2 * 20 / 60, abs=1e-3),
        "max_runtime_min": 20.0,
        "max_mem_mb": 2000,
    }


def site_profile(tmp_path: Path, set_resources: dict) -> Path:
    site = tmp_path / "site"
    site.mkdir(parents=True)
    (site / "config.yaml").write_text(yaml.safe_dump({"set-resources": set_resources}))
    return site


@pytest.mark.slow  # a plan and a dry run
def test_gpu_on_a_cpu_rule_stops_planning_and_the_run(tmp_path):
    env = site_home(tmp_path, "PARTITION=cpu", "GPU_PARTITION=gpu")
    site = site_profile(tmp_path, {"lapt": {"gpu": 1}, "split_l10n": {"gpu": 1}})
    profiles = ["--profile", "slurm", "--profile", str(site)]
    config = str(tiny_config(tmp_path))
    result = plan(tmp_path, "--configfile", config, *profiles, env=env)
    assert result.returncode == 1
    assert "split_l10n" in result.stderr and "cannot use" in result.stderr
    # The Snakefile refuses it too, before any job.
    run = snakemake(["-n", "--configfile", config, *profiles], tmp_path, env=env)
    assert run.returncode != 0
    assert "set-resources split_l10n: asks for a GPU, but rule split_l10n cannot use one" in run.stdout + run.stderr


@pytest.mark.slow  # a dry run of the paper grid
def test_paper_grid_without_a_gpu_for_lapt_is_flagged(tmp_path):
    # A site overlay that took the training rule's GPU away (and asks for the others' by gres).
    env = site_home(tmp_path, "PARTITION=cpu", "GPU_PARTITION=gpu")
    overlay = {rule: {"gres": "gpu:a100:1"} for rule in GPU_RULES if rule != "lapt"}
    site = site_profile(tmp_path, {**overlay, "lapt": {"gpu": 0}})
    profiles = ["--profile", "slurm", "--profile", str(site)]
    result = plan(tmp_path, "--configfile", str(REPO / "configs" / "paper.yaml"), *profiles, env=env)
    assert result.returncode == 1
    assert "set-resources lapt: no GPU requested" in result.stderr
    assert "llama2 (7B)" in result.stderr


@pytest.mark.slow  # two dry runs
def test_sites_that_want_gres_get_gres_only(tmp_path):
    # set-resources asking for the GPU by gres replaces the rules' own `gpu: 1` (the plugin would pass both).
    env = site_home(tmp_path, "PARTITION=cpu", "GPU_PARTITION=gpu")
    site = site_profile(tmp_path, {rule: {"gres": "gpu:a100:1", "slurm_partition": "gpu"} for rule in GPU_RULES})
    config = tiny_config(tmp_path)
    run = snakemake(
        ["-n", "--configfile", str(config), "--profile", "slurm", "--profile", str(site)], tmp_path, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = parse_dry_run(run.stdout + run.stderr, declared_local_rules())
    for job in jobs:
        if job.rule in GPU_RULES:
            assert job.resources["gres"] == "gpu:a100:1" and job.resources.get("gpu", 0) == 0, job
        elif not job.local:
            assert job.gpus == 0 and job.resources["slurm_partition"] == "cpu", job
    # Every GPU rule the test grid plans (it evaluates mt, ppl, speed and mc; the analysis is a separate target).
    planned = {"lapt", "measure_speed", "evaluate_mt", "evaluate_ppl", "evaluate_mc"}
    assert {j.rule for j in jobs} & set(GPU_RULES) == planned
    # Both at once is refused, naming the rule.
    both = site_profile(tmp_path / "both", {"lapt": {"gpu": 1, "gres": "gpu:1"}})
    run = snakemake(
        ["-n", "--configfile", str(config), "--profile", "slurm", "--profile", str(both)], tmp_path, env=env
    )
    assert run.returncode != 0
    assert "set-resources lapt: asks for its GPU by both gpu and gres" in run.stdout + run.stderr


def test_site_profile_command_writes_slurm_and_keeps_an_existing_one(tmp_path):
    env = site_home(tmp_path, "ACCOUNT=my_project", "PARTITION=cpu", "GPU_PARTITION=gpu", "QOS=normal")
    path = Path(env["XDG_CONFIG_HOME"]) / "snakemake" / "slurm" / "config.yaml"
    profile = yaml.safe_load(path.read_text())
    assert profile["executor"] == "slurm" and profile["slurm-qos"] == "normal"
    assert profile["default-resources"] == {"slurm_account": "my_project", "slurm_partition": "cpu"}
    assert profile["set-resources"] == {rule: {"slurm_partition": "gpu"} for rule in GPU_RULES}
    # What the workflow needs is not the site's business: no GPU requests, memory or time limits in it.
    assert "gpu" not in str(profile["set-resources"]).replace("slurm_partition': 'gpu", "")
    # A second run keeps the profile (a site's own, say) unless asked.
    other = ["make", "-s", "slurm-profile", "PARTITION=other", "GPU_PARTITION=same"]
    again = subprocess.run(other, cwd=REPO, env={**os.environ, **env}, capture_output=True)
    assert again.returncode != 0 and b"already exists" in again.stderr and b"FORCE=1" in again.stderr
    assert yaml.safe_load(path.read_text()) == profile
    forced = subprocess.run([*other, "FORCE=1"], cwd=REPO, env={**os.environ, **env})
    assert forced.returncode == 0
    assert yaml.safe_load(path.read_text())["default-resources"] == {"slurm_partition": "other"}


def test_site_profile_with_a_partition_needs_the_gpu_rules_partition(tmp_path, capsys):
    """PARTITION alone would send the GPU jobs there with --gpus (refused by Slurm where it has no GPUs): refused,
    unless GPU_PARTITION names theirs or says `same`; no partition at all is written, with a note."""

    def write(*args: str) -> dict | None:
        folder = tmp_path / "-".join(args)
        code = slurm_profile.main([*args, "--dir", str(folder)])
        return yaml.safe_load((folder / "config.yaml").read_text()) if code == 0 else None

    assert write("--partition", "cpu") is None
    error = capsys.readouterr().err
    assert error.startswith("slurm_profile: --partition cpu without --gpu-partition: every job would go to partition")
    assert "GPU_PARTITION=<partition> (--gpu-partition <partition>)" in error
    assert "if partition cpu has GPUs, GPU_PARTITION=same (--gpu-partition same)" in error
    same = write("--partition", "cpu", "--gpu-partition", "same", "--gpu-model", "a100")
    assert same["default-resources"]["slurm_partition"] == "cpu"
    assert same["set-resources"] == {rule: {"slurm_partition": "cpu", "gpu_model": "a100"} for rule in GPU_RULES}
    own = write("--partition", "cpu", "--gpu-partition", "gpu")
    assert own["set-resources"] == {rule: {"slurm_partition": "gpu"} for rule in GPU_RULES}
    capsys.readouterr()
    bare = write("--account", "x")
    assert bare["default-resources"] == {"slurm_account": "x"} and "set-resources" not in bare
    assert "note: no partition given: every job, the GPU rules' too, goes to the cluster's default partition" in (
        capsys.readouterr().err
    )


def test_gpu_rules_on_the_default_partition_are_warned_about():
    own_gpu = {rule: {"gpu": 1} for rule in GPU_RULES}
    assert gpu_partition_checks(own_gpu, {"slurm_partition": "cpu"}, {})[0] == []
    (warning,) = gpu_partition_checks(own_gpu, {"slurm_partition": "cpu"}, {})[1]
    assert warning.startswith(f"GPU rules without a partition of their own: {', '.join(GPU_RULES)} ask for a GPU")
    assert "default-resources' partition cpu" in warning
    assert "`set-resources: <rule>: {slurm_partition: <gpu partition>}`" in warning
    # Rules that name a partition, the default one included (a partition with GPUs), are not named; nor is a rule
    # whose GPU a profile took away.
    named = {
        **own_gpu,
        "lapt": {"gpu": 1, "slurm_partition": "gpu"},
        "evaluate_mt": {"gpu": 1, "slurm_partition": "cpu"},
        "evaluate_ppl": {"gpu": 0},
    }
    (warning,) = gpu_partition_checks(named, {"slurm_partition": "cpu"}, {})[1]
    left = [rule for rule in GPU_RULES if rule not in ("lapt", "evaluate_mt", "evaluate_ppl")]
    assert f"own: {', '.join(left)} ask" in warning
    everywhere = {rule: {"gpu": 1, "slurm_partition": "gpu"} for rule in GPU_RULES}
    assert gpu_partition_checks(everywhere, {"slurm_partition": "cpu"}, {}) == ([], [])
    # No partition in default-resources: the cluster's default partition, or a local run; nothing to say.
    assert gpu_partition_checks(own_gpu, None, {}) == gpu_partition_checks(own_gpu, {"mem_mb": 1000}, {}) == ([], [])


def test_gpu_jobs_on_a_partition_sinfo_shows_without_gpus_stop_planning():
    own_gpu = {rule: {"gpu": 1} for rule in GPU_RULES}
    # sinfo says the default partition has GPUs: nothing to say; that it has none: Slurm would refuse every GPU job.
    assert gpu_partition_checks(own_gpu, {"slurm_partition": "cpu"}, {"cpu": True}) == ([], [])
    (problem,), warnings = gpu_partition_checks(own_gpu, {"slurm_partition": "cpu"}, {"cpu": False})
    assert warnings == [] and problem.startswith(f"{', '.join(GPU_RULES)}: ask for a GPU on partition cpu, whose nodes")
    # A partition a rule names itself is checked too; a partition sinfo does not know is left alone.
    named = {**own_gpu, "lapt": {"gpu": 1, "slurm_partition": "cpu"}, "evaluate_mt": {"gpu": 1, "slurm_partition": "x"}}
    (problem,), _ = gpu_partition_checks(named, {"slurm_partition": "gpu"}, {"cpu": False, "gpu": True})
    assert problem.startswith("lapt: ask for a GPU on partition cpu")


def fake_sinfo(tmp_path: Path, monkeypatch, output: str, code: int = 0) -> None:
    """An `sinfo` on PATH that prints ``output`` (the generic resources of a partition's node groups)."""
    (tmp_path / "sinfo").write_text(f"#!/bin/sh\nprintf '%s' {shlex.quote(output)}\nexit {code}\n")
    (tmp_path / "sinfo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


@pytest.mark.parametrize(
    ("output", "code", "has"),
    [
        ("(null)\n(null)\n", 0, False),
        ("(null)\ngpu:a100:4(S:0-1)\n", 0, True),
        ("mps:100,gpu:2\n", 0, True),
        ("gpu\n", 0, True),
        ("gpumem:80G\n", 0, False),
        ("", 0, None),  # no such partition
        ("(null)\n", 1, None),  # sinfo failed
    ],
)
def test_partition_gpus_as_sinfo_reports_them(tmp_path, monkeypatch, output, code, has):
    fake_sinfo(tmp_path, monkeypatch, output, code)
    assert partition_has_gpus("cpu") is has
    assert known_partition_gpus(["cpu", "cpu"]) == ({} if has is None else {"cpu": has})
    monkeypatch.setenv("SLURM_JOB_ID", "7")  # inside a job: planned where it was submitted, the controller is spared
    assert partition_has_gpus("cpu") is None


@pytest.mark.slow  # two dry runs
def test_a_site_profile_without_the_gpu_partition_is_warned_about_at_planning(tmp_path):
    config = str(tiny_config(tmp_path))
    site = tmp_path / "site"
    site.mkdir()
    (site / "config.yaml").write_text(yaml.safe_dump({"default-resources": {"slurm_partition": "cpu"}}))
    run = snakemake(["-n", "--configfile", config, "--profile", str(site)], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    (warning,) = [line for line in run.stderr.splitlines() if line.startswith("profile warning: ")]
    assert warning.startswith("profile warning: GPU rules without a partition of their own: lapt, evaluate_mt")
    planned = plan(tmp_path, "--configfile", config, "--profile", str(site))
    assert planned.returncode == 0 and f"plan: {warning}" in planned.stderr.splitlines()
    # The profile `make slurm-profile` writes names the GPU rules' partition: no warning.
    env = site_home(tmp_path, "PARTITION=cpu", "GPU_PARTITION=gpu")
    run = snakemake(["-n", "--configfile", config, "--profile", "slurm"], tmp_path, env=env)
    assert run.returncode == 0 and "profile warning" not in run.stdout + run.stderr, run.stderr[-3000:]
