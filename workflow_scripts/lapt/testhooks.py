"""Test-only interruption points of the LAPT loop: a signal, a kill or a hold at a chosen optimizer step.

Tests stop a run at a known step instead of racing it with timers. Each hook reads an environment variable that no
workflow rule sets. The command line (cli.py) passes ``step_end`` to ``loop.train`` as a step hook (``loop.StepHook``)
only when one of them is set: outside the tests the loop runs no hook at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.io import write_text

if TYPE_CHECKING:
    from workflow_scripts.lapt.loop import StepHook

# "N" makes the process SIGKILL itself at the end of step N (after that step's checkpoint, if it writes one).
KILL_AT_STEP_ENV = "LAPT_TEST_KILL_AT_STEP"
# "N:FILE": at the end of step N, write the checkpoint folder into FILE and wait until a signal ends the process, so
# that a test can interrupt the whole workflow (Ctrl-C, a Slurm time limit) at a known step of a known run. Only the
# first process to reach step N holds (it claims FILE.claimed, created exclusively): LAPT jobs running side by side
# (a cluster) pass on, and so does a resumed run that meets step N again.
HOLD_AT_STEP_ENV = "LAPT_TEST_HOLD_AT_STEP"
# "N:SIGNAME" sends the process that signal (USR1, TERM) right after optimizer step N, as Slurm's --signal would at
# some moment during a step; "N:SIGNAME:group" sends it to the whole process group (the rule's shell too), as Slurm
# does to a job step.
SIGNAL_AT_STEP_ENV = "LAPT_TEST_SIGNAL_AT_STEP"


def from_environment() -> list[StepHook]:
    """The step hooks this process's environment asks for: ``[step_end]`` when a test set one of the variables above,
    else none."""
    asked = any(os.environ.get(name) for name in (KILL_AT_STEP_ENV, HOLD_AT_STEP_ENV, SIGNAL_AT_STEP_ENV))
    return [step_end] if asked else []


@contextlib.contextmanager
def step_end(step: int, checkpoint_dir: Path) -> Iterator[None]:
    """Around the stop check and checkpoint of optimizer step ``step``: the asked signal on entry (so that the stop
    check sees it), the asked kill or hold on exit (after the checkpoint is written)."""
    at, name, whom = ([*os.environ.get(SIGNAL_AT_STEP_ENV, "").split(":"), "", ""])[:3]
    if at == str(step) and name:
        sig = getattr(signal, f"SIG{name.removeprefix('SIG')}")
        if whom == "group":  # as Slurm signals every process of the job step: the shell too
            os.killpg(os.getpgid(0), sig)
        else:
            os.kill(os.getpid(), sig)
    yield
    if os.environ.get(KILL_AT_STEP_ENV) == str(step):
        os.kill(os.getpid(), signal.SIGKILL)
    hold_step, _, marker = os.environ.get(HOLD_AT_STEP_ENV, "").partition(":")
    if hold_step == str(step) and marker and _claim(Path(f"{marker}.claimed")):
        write_text(marker, str(checkpoint_dir.resolve()))
        while True:  # until a signal ends the process: SIGINT raises KeyboardInterrupt here, SIGKILL at a time limit
            signal.pause()  # LAPT's own stop signals (TERM, USR1) only record a stop request: it keeps holding


def _claim(path: Path) -> bool:
    """Create ``path`` if no process has: True for the one process that did."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True
