"""The command line of a task whose module has its own program (``TaskSpec.main``), as its rule runs it:

python -m workflow_scripts.tasks TASK ARGS...
"""

from __future__ import annotations

import sys

from workflow_scripts.tasks import TASKS


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    own = [name for name, spec in TASKS.items() if spec.main is not None]
    if not argv or argv[0] not in own:
        raise SystemExit(f"usage: python -m workflow_scripts.tasks TASK ARGS...; TASK is one of {own or 'none'}")
    TASKS[argv[0]].main(argv[1:])


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
