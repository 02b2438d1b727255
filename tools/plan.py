"""What a grid costs on Slurm before it is submitted: the jobs of a Snakemake dry run, per rule and per model.

Runs `snakemake -n` with the given profiles (a profile name such as `slurm` is looked up as Snakemake does), parses its
jobs and reports jobs, GPUs, GPU-hours and CPU-hours per rule and per model, and GPU requests that do not fit the rules.
The cost table the rules ask for is workflow_scripts/plan/resources.py. Pure Python, no torch.

    python -m tools.plan --configfile configs/paper.yaml --profile slurm
"""

from __future__ import annotations

import argparse
import logging
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts.plan.resources import GPU_RULES, gpus_requested

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Job:
    """One job of a dry run: its rule, wildcards, threads and resources as Snakemake resolved them."""

    rule: str
    local: bool
    wildcards: dict[str, str] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    threads: int = 1

    @property
    def gpus(self) -> int:
        return gpus_requested(self.resources)

    @property
    def runtime_min(self) -> float | None:
        return parse_runtime(self.resources.get("runtime"))

    @property
    def cpus(self) -> int:
        """CPUs Slurm allocates (the plugin: cpus_per_task, else cpus_per_gpu x GPUs, else threads)."""
        if isinstance(self.resources.get("cpus_per_task"), int) and self.resources["cpus_per_task"] > 0:
            return self.resources["cpus_per_task"]
        if self.gpus and isinstance(self.resources.get("cpus_per_gpu"), int) and self.resources["cpus_per_gpu"] > 0:
            return self.resources["cpus_per_gpu"] * self.gpus
        return self.threads


_UNITS = {"d": 1440.0, "h": 60.0, "m": 1.0, "min": 1.0, "s": 1 / 60}


def parse_runtime(value: Any) -> float | None:
    """Minutes from a runtime resource: an integer (minutes) or one number with one unit ("2d", "90m", "1.5h")."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    match = re.fullmatch(r"\s*([\d.]+)\s*(d|h|min|m|s)?\s*", str(value))
    if not match:
        return None
    return float(match.group(1)) * _UNITS[match.group(2) or "m"]


def _parse_value(text: str) -> Any:
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    return text


def _parse_pairs(text: str) -> dict[str, Any]:
    """`a=1, b=x, c=gpu:a100:1` as printed by a dry run (a value may itself contain commas, so split before `name=`)."""
    out = {}
    for item in re.split(r",\s*(?=\w+=)", text.strip()):
        if "=" in item:
            name, value = item.split("=", 1)
            out[name.strip()] = _parse_value(value)
    return out


def parse_dry_run(text: str, local_rules: set[str] | frozenset[str] = frozenset({"all"})) -> list[Job]:
    """The jobs of `snakemake -n` output (Snakemake 9's job blocks: `rule X:` and indented fields).

    Jobs of `local_rules` (see declared_local_rules) and of blocks printed as `localrule X:` are marked local.
    """
    jobs: list[Job] = []
    current: Job | None = None
    for line in text.splitlines():
        head = re.fullmatch(r"(local)?(?:rule|checkpoint) (\w+):", line.strip())
        if head and not line.startswith(" "):
            current = Job(rule=head.group(2), local=bool(head.group(1)) or head.group(2) in local_rules)
            jobs.append(current)
            continue
        if current is None or not line.startswith("    "):
            if line.strip() and not line.startswith(" "):
                current = None  # shell command, timestamp, job stats: the block ended
            continue
        key, _, value = line.strip().partition(": ")
        if key == "wildcards":
            current.wildcards = {k: str(v) for k, v in _parse_pairs(value).items()}
        elif key == "resources":
            current.resources = _parse_pairs(value)
        elif key == "threads":
            current.threads = int(value)
    return jobs


# `localrules: a, b` on one line, or one indented name per line below it.
_LOCALRULES = re.compile(r"^localrules:([ \t]*\w[\w, \t]*\n|[ \t]*\n(?:[ \t]+\w[\w, \t]*\n?)+)", re.MULTILINE)


def declared_local_rules(root: Path = REPO) -> set[str]:
    """Rules that run on the submitting node: the workflow's `localrules:` and `all` (a target with nothing to run).

    A dry run prints them like any rule, so they are read from the Snakefile and rules/*.smk.
    """
    local = {"all"}
    for path in [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]:
        if path.exists():
            for block in _LOCALRULES.findall(path.read_text()):
                local |= set(re.findall(r"\w+", block))
    return local


def dry_run(
    configfile: Path | None,
    profiles: Iterable[Path | str],
    directory: Path,
    forceall: bool,
    extra: Iterable[str] = (),
) -> str:
    """Run `snakemake -n` on the repository's Snakefile with the given profiles; its output text."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"), "--directory", str(directory)]
    for profile in profiles:
        cmd += ["--profile", str(profile)]
    if configfile:
        cmd += ["--configfile", str(configfile)]
    if forceall:
        cmd.append("--forceall")
    cmd += list(extra)
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=directory)
    text = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"snakemake -n failed ({' '.join(cmd)}):\n{text[-4000:]}")
    return text


def model_sizes(config: Mapping[str, Any], workdir: str | Path = ".") -> tuple[dict[str, str], dict[str, str]]:
    """Each model's size in words (its ``size`` label, else its parameter count: workflow_scripts.plan.models; "?"
    where its shape cannot be read, which the dry run then names), and those of the models that need a GPU."""
    from workflow_scripts.plan.models import ModelError, describe

    sizes, gpu_models = {}, {}
    for name, spec in (config.get("models") or {}).items():
        try:
            model = describe(name, spec, workdir)
        except ModelError:
            sizes[name] = str(spec.get("size") or "?")
            continue
        sizes[name] = model.size
        if model.needs_gpu:
            gpu_models[name] = model.size
    return sizes, gpu_models


def job_problems(jobs: Iterable[Job], gpu_models: Mapping[str, str], cluster: bool) -> list[str]:
    """GPU requests of resolved jobs that do not fit: a GPU on a rule that cannot use one, none on a job of a model
    that needs a GPU (``gpu_models``: those models, each with its size in words)."""
    problems: dict[str, str] = {}
    for job in jobs:
        if job.local:  # runs on the submitting node, never submitted
            continue
        if job.gpus and job.rule not in GPU_RULES:
            problems.setdefault(
                f"gpu:{job.rule}",
                f"rule {job.rule} cannot use a GPU but its jobs ask for {job.gpus} (profile set-resources or "
                f"default-resources); GPUs belong to {', '.join(GPU_RULES)} only",
            )
        size = gpu_models.get(job.wildcards.get("model", ""))
        if cluster and job.rule in GPU_RULES and not job.gpus and size is not None:
            problems.setdefault(
                f"nogpu:{job.rule}:{job.wildcards['model']}",
                f"rule {job.rule} gets no GPU for model {job.wildcards['model']} of size {size}: add "
                f"`{job.rule}: {{gpu: 1}}` (or gres) to the profile's set-resources",
            )
    return list(problems.values())


@dataclass
class Row:
    """Totals of a group of jobs."""

    jobs: int = 0
    gpu_jobs: int = 0
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    max_runtime_min: float = 0.0
    max_mem_mb: int = 0
    no_runtime: int = 0

    def add(self, job: Job) -> None:
        self.jobs += 1
        minutes = job.runtime_min
        if minutes is None:
            self.no_runtime += 1
            minutes = 0.0
        self.gpu_jobs += bool(job.gpus)
        self.gpu_hours += job.gpus * minutes / 60
        self.cpu_hours += job.cpus * minutes / 60
        self.max_runtime_min = max(self.max_runtime_min, minutes)
        mem = job.resources.get("mem_mb")
        self.max_mem_mb = max(self.max_mem_mb, mem if isinstance(mem, int) else 0)


def summarize(jobs: Iterable[Job], sizes: Mapping[str, str]) -> dict[str, Any]:
    """Totals per rule, per model (with its size in words) and overall; local jobs are counted apart."""
    by_rule: dict[str, Row] = {}
    by_model: dict[str, Row] = {}
    total = Row()
    local: dict[str, int] = {}
    gpus_per_job: dict[str, set[int]] = {}
    for job in jobs:
        if job.local:
            if job.rule != "all":  # the target rule: no job at all
                local[job.rule] = local.get(job.rule, 0) + 1
            continue
        by_rule.setdefault(job.rule, Row()).add(job)
        gpus_per_job.setdefault(job.rule, set()).add(job.gpus)
        by_model.setdefault(job.wildcards.get("model", "(data)"), Row()).add(job)
        total.add(job)
    return {
        "by_rule": by_rule,
        "by_model": by_model,
        "total": total,
        "local": local,
        "gpus_per_job": {rule: sorted(v) for rule, v in gpus_per_job.items()},
        "sizes": dict(sizes),
    }


def _hours(value: float) -> str:
    return f"{value:,.1f}"


def render_markdown(summary: Mapping[str, Any], problems: list[str], title: str) -> str:
    """The planning report: jobs and GPU-hours per rule and per model, the totals, and any problems first."""
    lines = [f"# Slurm plan: {title}", ""]
    if problems:
        lines += ["## Problems (fix before submitting)", ""] + [f"- {p}" for p in problems] + [""]
    total: Row = summary["total"]
    lines += [
        f"{total.jobs} cluster jobs, {total.gpu_jobs} of them on a GPU; at most "
        f"**{_hours(total.gpu_hours)} GPU-hours** and {_hours(total.cpu_hours)} CPU-hours (time limits, attempt 1).",
        "",
        "The hours are upper bounds: the sum of each job's requested time limit (`runtime`) times its GPUs (CPUs).",
        "A retry asks for more. After a run, results/<run>/benchmarks/<rule>/*.tsv hold the measured times.",
        "",
        "## Per rule",
        "",
        "| rule | jobs | GPUs/job | max time limit (min) | max memory (GB) | GPU-hours | CPU-hours |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for rule, row in sorted(summary["by_rule"].items(), key=lambda kv: (-kv[1].gpu_hours, kv[0])):
        gpus = "/".join(str(g) for g in summary["gpus_per_job"][rule])
        limit = f"{row.max_runtime_min:,.0f}" + (" (some unset)" if row.no_runtime else "")
        lines.append(
            f"| {rule} | {row.jobs} | {gpus} | {limit} | {row.max_mem_mb / 1000:,.0f} | {_hours(row.gpu_hours)} "
            f"| {_hours(row.cpu_hours)} |"
        )
    lines += [
        "",
        "## Per model",
        "",
        "| model | size | jobs | GPU jobs | GPU-hours | CPU-hours |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for model, row in sorted(summary["by_model"].items()):
        size = summary["sizes"].get(model, "")
        lines.append(
            f"| {model} | {size} | {row.jobs} | {row.gpu_jobs} | {_hours(row.gpu_hours)} | {_hours(row.cpu_hours)} |"
        )
    if summary["local"]:
        local = ", ".join(f"{rule} {n}" for rule, n in sorted(summary["local"].items()))
        lines += ["", f"Run on the submitting node (no cluster cost): {local}."]
    return "\n".join(lines) + "\n"


def summary_json(summary: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """The report as plain data (for scripts and tests)."""

    def row(r: Row) -> dict[str, Any]:
        return {
            "jobs": r.jobs,
            "gpu_jobs": r.gpu_jobs,
            "gpu_hours": round(r.gpu_hours, 3),
            "cpu_hours": round(r.cpu_hours, 3),
            "max_runtime_min": r.max_runtime_min,
            "max_mem_mb": r.max_mem_mb,
        }

    return {
        "total": row(summary["total"]),
        "by_rule": {k: row(v) for k, v in sorted(summary["by_rule"].items())},
        "by_model": {k: row(v) for k, v in sorted(summary["by_model"].items())},
        "gpus_per_job": summary["gpus_per_job"],
        "local": summary["local"],
        "sizes": summary["sizes"],
        "problems": problems,
    }


def _load_yaml(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


# Snakemake 9's profile files in a profile folder: profile.yaml or config.yaml, optionally for a minimal major version
# (profile.v9+.yaml); the highest applicable version wins.
_PROFILE_FILE = re.compile(r"(?:profile|config)(?:\.v(\d+)\+)?\.yaml")


def profile_search_dirs(cwd: Path) -> list[Path]:
    """Where Snakemake looks for a profile given by name: the working directory, then the user's and the site's
    configuration folders (~/.config/snakemake and /etc/xdg/snakemake on Linux)."""
    from platformdirs import AppDirs

    dirs = AppDirs("snakemake", "snakemake")  # as snakemake.common.get_appdirs
    return [cwd, Path(dirs.user_config_dir), Path(dirs.site_config_dir)]


def find_profile(profile: str | Path, cwd: Path) -> Path:
    """The config file of a `--profile` argument, found as Snakemake 9 finds it: a path (file or folder), else a name
    under the search folders."""
    given = Path(profile).expanduser()
    if (cwd / given).exists():
        candidates = [cwd / given]
    else:
        candidates = [d / given for d in profile_search_dirs(cwd)]
    major = 9
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
        if candidate.is_dir():
            files = {}
            for f in candidate.iterdir():
                m = _PROFILE_FILE.fullmatch(f.name)
                if m and int(m.group(1) or 0) <= major:
                    files[f] = int(m.group(1) or 0)
            if files:
                return max(files, key=files.get).resolve()
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(
        f"profile {str(profile)!r} not found (looked for profile.yaml or config.yaml in {searched}); "
        "`make slurm-profile ACCOUNT=... PARTITION=...` writes the site profile `slurm`"
    )


def profile_executor(profiles: Iterable[Path]) -> str | None:
    """The executor the profiles' files select (a later profile replaces an earlier one's keys, as in Snakemake)."""
    executor = None
    for profile in profiles:
        executor = _load_yaml(profile / "config.yaml" if profile.is_dir() else profile).get("executor", executor)
    return executor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.plan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--configfile", type=Path, help="grid config (default: the repository's config.yaml)")
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        help="Snakemake profile: a name (slurm: ~/.config/snakemake/slurm) or a folder, as for snakemake; repeat "
        "for overlays",
    )
    parser.add_argument("--directory", type=Path, default=Path.cwd(), help="working directory of the run (default .)")
    parser.add_argument(
        "--forceall", action="store_true", help="plan the whole grid, not only the jobs whose outputs are missing"
    )
    parser.add_argument(
        "--from-dry-run", type=Path, help="parse this saved `snakemake -n` output instead of running it"
    )
    parser.add_argument("--markdown", type=Path, help="also write the report here")
    parser.add_argument("--json", type=Path, help="write the totals as JSON here")
    parser.add_argument("--log", type=Path)
    args = parser.parse_args(argv)

    from workflow_scripts.io import setup_logging, write_json, write_text

    setup_logging(args.log)
    log = logging.getLogger("plan")
    try:
        profiles = [find_profile(p, args.directory) for p in args.profile]
    except FileNotFoundError as e:
        print(f"plan: {e}", file=sys.stderr)
        return 1
    configfile = args.configfile or REPO / "config.yaml"
    from workflow_scripts.plan.checks import config_file_problems

    unreadable = config_file_problems(configfile)  # Snakemake's own error names neither the file nor the line
    if unreadable:
        print("plan: invalid configuration:\n  - " + "\n  - ".join(unreadable), file=sys.stderr)
        return 1
    sizes, gpu_models = model_sizes(_load_yaml(configfile), args.directory)
    if args.from_dry_run:
        text = args.from_dry_run.read_text(encoding="utf-8")
    else:
        try:
            text = dry_run(args.configfile, profiles, args.directory, args.forceall)
        except RuntimeError as e:  # the Snakefile's own checks (config, GPU requests) stop the dry run: show why
            print(f"plan: {e}", file=sys.stderr)
            return 1
    jobs = parse_dry_run(text, declared_local_rules())
    warnings = [line for line in text.splitlines() if line.startswith("profile warning: ")]
    for warning in dict.fromkeys(warnings):  # the Snakefile's warnings on the profiles (the GPU rules' partition)
        print(f"plan: {warning}", file=sys.stderr)
    # Missing GPUs matter only where jobs go to a cluster; a local run uses whatever GPU the machine has.
    cluster = profile_executor(profiles) not in (None, "local", "dryrun", "touch")
    problems = job_problems(jobs, gpu_models, cluster)
    summary = summarize(jobs, sizes)
    title = f"{configfile.name}" + (f" with {' + '.join(str(p) for p in args.profile)}" if args.profile else "")
    report = render_markdown(summary, problems, title)
    sys.stdout.write(report)
    if args.markdown:
        write_text(args.markdown, report)
    if args.json:
        write_json(args.json, summary_json(summary, problems))
    log.info("%d jobs, %.1f GPU-hours, %d problems", summary["total"].jobs, summary["total"].gpu_hours, len(problems))
    if problems:
        print("plan: GPU requests do not fit the workflow:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
