"""What every task's step is made of (``Step``, ``cli``), and the options the per-cell job gives every step itself."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

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
