"""``python -m workflow_scripts.lapt``: see workflow_scripts.lapt.cli."""

import sys

from workflow_scripts.io import cli_main
from workflow_scripts.lapt.cli import main
from workflow_scripts.lapt.loop import TrainingInterrupted

try:
    cli_main(main)  # expected failures (bad input files) as one line, exit 1
except TrainingInterrupted as e:  # a stop request (Slurm's USR1 before the time limit, TERM): checkpointed, resumable
    sys.exit(f"lapt: {e}; rerun to resume")
