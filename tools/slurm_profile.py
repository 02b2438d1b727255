"""Write the site profile `slurm` that `snakemake --profile slurm` finds: ~/.config/snakemake/slurm/config.yaml.

The profile holds only what the site needs (executor, account, partitions, QoS, GPU model, status command). What the
workflow needs (a GPU on its GPU rules, memory and time limits by model size, retries asking for more) comes
with the workflow, in the rules' `resources:` and in profiles/default/, so any site profile named `slurm` works.

    make slurm-profile ACCOUNT=my_project PARTITION=cpu GPU_PARTITION=gpu
    python -m tools.slurm_profile --account my_project --partition cpu --gpu-partition gpu [--qos normal] [--force]

A partition for every job needs the GPU rules' partition beside it (GPU_PARTITION=same where that partition has
GPUs): otherwise the GPU jobs would go there with --gpus, which Slurm refuses at submission where it has none. An
existing profile is kept unless --force is given. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from workflow_scripts.plan.resources import GPU_RULES  # standard library only, like this module

TEMPLATE = """\
# Site profile `slurm` for Snakemake's Slurm executor, written by `make slurm-profile` (tools/slurm_profile.py of the
# vocabulary-expansion workflow). Use it from the workflow's folder:
#   snakemake --profile slurm -n                                  # plan
#   snakemake --profile slurm --configfile configs/paper.yaml     # run; Ctrl-C cancels its jobs, rerun to resume
# Only the site's settings live here. The workflow brings its own needs: a GPU on lapt, evaluate_mt, evaluate_ppl and
# measure_speed, memory and time limits by model size, and retries that ask for more (rules' resources: and
# profiles/default/, which Snakemake applies by itself). Edit freely; a later `--profile` replaces whole keys of
# this one.
executor: slurm
# At most this many jobs queued or running at once.
jobs: {jobs}
# Shared file systems show a finished job's outputs late.
latency-wait: 60
# Every job's Slurm log, one folder per rule and wildcards: results/logs/slurm/rule_<rule>/<wildcards>/<jobid>.log
# (relative to the working directory, shared by every run: job ids keep the paths apart; each rule's own log
# stays in results/<run>/logs/<rule>/).
slurm-logdir: results/logs/slurm
slurm-keep-successful-logs: true
slurm-delete-logfiles-older-than: 0
{status}{qos}default-resources:
{default_resources}{set_resources}"""


def config_home() -> Path:
    """Snakemake's user configuration folder on Linux (platformdirs): $XDG_CONFIG_HOME/snakemake, else
    ~/.config/snakemake."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "snakemake"


_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
# --gpu-partition's value for "the partition of every job has GPUs".
SAME = "same"


def _checked(option: str, value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"--{option} {value!r}: expected a Slurm name (letters, digits, _ . + -)")
    return value


def render(
    account: str | None,
    partition: str | None,
    qos: str | None = None,
    gpu_partition: str | None = None,
    gpu_model: str | None = None,
    status_command: str | None = None,
    jobs: int = 50,
) -> str:
    """The profile's config.yaml for these site settings."""
    default = []
    if account:
        default.append(f"  slurm_account: {_checked('account', account)}  # sbatch -A")
    else:
        default.append(
            "  # slurm_account: my_project  # none given: the executor guesses one from sacct, else submits without"
        )
    if partition:
        default.append(
            f"  slurm_partition: {_checked('partition', partition)}  # every job, unless set-resources says otherwise"
        )
    else:
        default.append("  # slurm_partition: cpu  # none given: the cluster's default partition")
    set_resources = ""
    gpu = {}
    where = ""
    if gpu_partition == SAME:
        # the partition of every job has GPUs: named for the GPU rules too, so planning knows it was meant
        if partition:
            gpu["slurm_partition"] = partition
            where = f"# Partition {partition} has GPUs (--gpu-partition {SAME}).\n"
    elif gpu_partition:
        gpu["slurm_partition"] = _checked("gpu-partition", gpu_partition)
    elif partition:
        raise ValueError(
            f"--partition {partition} without --gpu-partition: every job would go to partition {partition}, the jobs "
            f"of the {len(GPU_RULES)} GPU rules too (lapt and the evaluations among them, each asking for a GPU), and "
            f"Slurm refuses those at submission if {partition} has no GPUs. Name the partition with GPUs: "
            f"GPU_PARTITION=<partition> (--gpu-partition <partition>); if partition {partition} has GPUs, "
            f"GPU_PARTITION={SAME} (--gpu-partition {SAME})"
        )
    if gpu_model:
        gpu["gpu_model"] = _checked("gpu-model", gpu_model)  # --gpus=<model>:1
    if gpu:
        values = ", ".join(f"{k}: {v}" for k, v in gpu.items())
        set_resources = (
            f"# The workflow's GPU rules (each asks for one GPU itself): where and which GPU.\n{where}set-resources:\n"
        )
        set_resources += "".join(f"  {rule}: {{{values}}}\n" for rule in GPU_RULES)
    status = ""
    if status_command:
        status = (
            "# squeue: a cluster without an accounting database (sacct fails there and the run would wait forever).\n"
            f"slurm-status-command: {status_command}\n"
        )
    qos_line = f"slurm-qos: {_checked('qos', qos)}\n" if qos else ""
    return TEMPLATE.format(
        jobs=jobs,
        status=status,
        qos=qos_line,
        default_resources="\n".join(default) + "\n",
        set_resources=set_resources,
    )


def notes(partition: str | None, gpu_partition: str | None) -> list[str]:
    """What the user should know about a profile written with these partitions."""
    if partition or (gpu_partition and gpu_partition != SAME):
        return []
    return [
        "no partition given: every job, the GPU rules' too, goes to the cluster's default partition; if it has no "
        "GPUs, write the profile again with GPU_PARTITION=<partition with GPUs> FORCE=1"
    ]


def write_profile(text: str, folder: Path, force: bool) -> Path:
    """Write `folder`/config.yaml atomically; refuse to replace an existing profile unless `force`."""
    existing = [p for p in (folder / "config.yaml", folder / "profile.yaml") if p.exists()]
    existing += sorted(folder.glob("*.v*+.yaml")) if folder.is_dir() else []
    if existing and not force:
        raise FileExistsError(
            f"a Snakemake profile already exists in {folder} ({', '.join(p.name for p in existing)}); it is kept and "
            "`snakemake --profile slurm` uses it. Rerun with --force (make slurm-profile ... FORCE=1) to replace it"
        )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "config.yaml"
    with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".config.yaml.", delete=False, encoding="utf-8") as f:
        f.write(text)
    os.replace(f.name, target)
    for other in existing:  # --force: a profile.yaml would otherwise win over the new config.yaml
        if other != target:
            other.unlink()
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.slurm_profile", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--account", help="Slurm account (sbatch -A); leave out on clusters without accounts")
    parser.add_argument("--partition", help="partition of every job (default: the cluster's default partition)")
    parser.add_argument("--qos", help="quality of service of every job")
    parser.add_argument(
        "--gpu-partition",
        help=f"partition of the GPU rules' jobs; `{SAME}` where --partition's has GPUs (required with --partition)",
    )
    parser.add_argument("--gpu-model", help="GPU model of the GPU jobs, e.g. a100 (sbatch --gpus=a100:1)")
    parser.add_argument(
        "--status-command", choices=["sacct", "squeue"], help="how job states are read (squeue: no accounting database)"
    )
    parser.add_argument("--jobs", type=int, default=50, help="at most this many jobs queued or running (default 50)")
    parser.add_argument("--name", default="slurm", help="profile name (default slurm: `snakemake --profile slurm`)")
    parser.add_argument("--dir", type=Path, help="profile folder (default: ~/.config/snakemake/<name>)")
    parser.add_argument("--force", action="store_true", help="replace an existing profile")
    args = parser.parse_args(argv)
    folder = args.dir or config_home() / args.name
    try:
        text = render(
            args.account, args.partition, args.qos, args.gpu_partition, args.gpu_model, args.status_command, args.jobs
        )
        path = write_profile(text, folder, args.force)
    except (ValueError, FileExistsError) as e:
        print(f"slurm_profile: {e}", file=sys.stderr)
        return 1
    hint = "" if args.dir else f" `snakemake --profile {args.name} -n` plans with it."
    print(f"slurm_profile: wrote {path}.{hint}")
    for note in notes(args.partition, args.gpu_partition):
        print(f"slurm_profile: note: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
