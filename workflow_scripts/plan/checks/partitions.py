"""What the cluster says about the partitions a run's GPU jobs go to: whether their nodes have GPUs at all.

Planning asks `sinfo` on the submitting machine for each partition the GPU rules' jobs go to
(``workflow_scripts.plan.resources.workflow_gpu_partitions``): a partition whose nodes have no GPU among their generic
resources is one where Slurm refuses a job that asks for a GPU, which planning then stops on. Where sinfo is missing,
does not answer, or knows no such partition, nothing is known and planning only warns.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable

SINFO_SECONDS = 10
# a gpu generic resource among a node group's (`gpu`, `gpu:4`, `gpu:a100:4(S:0-1)`, next to others such as `mps:100`)
_GPU_GRES = re.compile(r"(?:^|,)gpu(?:[:(,]|$)")


def partition_has_gpus(partition: str) -> bool | None:
    """Whether any node of Slurm partition ``partition`` has a GPU, as `sinfo` reports their generic resources; None
    where it cannot tell: no sinfo, no answer within SINFO_SECONDS, no such partition, or inside a Slurm job (the
    run was planned where it was submitted, and a job's own planning should not query the controller)."""
    sinfo = shutil.which("sinfo")
    if sinfo is None or os.environ.get("SLURM_JOB_ID"):
        return None
    cmd = [sinfo, "--noheader", "--partition", partition, "--format", "%G"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=SINFO_SECONDS, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    groups = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if not groups:
        return None
    return any(_GPU_GRES.search(group) for group in groups)


def known_partition_gpus(partitions: Iterable[str]) -> dict[str, bool]:
    """``partition_has_gpus`` of each partition where sinfo could tell."""
    known = {}
    for partition in sorted(set(partitions)):
        has = partition_has_gpus(partition)
        if has is not None:
            known[partition] = has
    return known
