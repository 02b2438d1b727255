"""``python -m workflow_scripts.lapt``: see workflow_scripts.lapt.cli."""

import sys

from workflow_scripts.lapt.cli import main
from workflow_scripts.lapt.loop import TrainingInterrupted

try:
    sys.exit(main())
except TrainingInterrupted as e:  # a stop request (Slurm's USR1 before the time limit, TERM): checkpointed, resumable
    sys.exit(f"lapt: {e}; rerun to resume")
