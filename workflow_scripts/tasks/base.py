"""What every task's step is made of (``Step``, ``cli``), the options the per-cell job gives every step itself, and
what a task reads from a hub dataset for a language (``Source``, or ``Unavailable``)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """One language's data for a task: dataset name (a key of evaluation.datasets), subset, evaluation split, few-shot
    split (None: the same)."""

    dataset: str
    subset: str
    split: str
    fewshot_split: str | None = None


class Unavailable(Exception):
    """A task that has no data for a language (reported as "–" with this reason, never as 0)."""


def item_id(line: dict) -> dict | None:
    """The dataset's own id of an item, kept for the predictions file (LightEval sets ``Doc.id`` to the row index);
    the ids files of ``workflow_scripts.items`` name the same ids."""
    return {"item_id": str(line["id"])} if line.get("id") is not None else None


# the options evaluate_cell passes to every step itself
CELL_SHARED = ("--task", "--model", "--cell")


@dataclass
class Step:
    """One task of one cell: its input files by name, and its options in the command's order (each a list: the flag
    and its values, or a lone flag)."""

    inputs: dict[str, str | list[str]]
    options: list[list[str]] = field(default_factory=list)

    def command(self) -> str:
        """The arguments of the task's own command line, shell-quoted."""
        return shlex.join(x for option in self.options for x in option)

    def cell_command(self) -> str:
        """The arguments evaluate_cell gives the step: those of its own command line but the shared ones."""
        return shlex.join(x for option in self.options if option[0] not in CELL_SHARED for x in option)


def cli(**options) -> list[list[str]]:
    """Options in the given order: max_new_tokens=40 -> ["--max-new-tokens", "40"]."""
    return [[f"--{k.replace('_', '-')}", str(v)] for k, v in options.items()]
