"""``python -m workflow_scripts.lapt``: see workflow_scripts.lapt.cli."""

import logging
import os
import sys

from workflow_scripts.io import cli_main
from workflow_scripts.lapt.cli import main
from workflow_scripts.lapt.loop import TrainingInterrupted

try:
    cli_main(main)  # expected failures (bad input files) as one line, exit 1
except TrainingInterrupted as e:  # a stop request (Slurm's USR1 before the time limit, TERM): checkpointed, resumable
    sys.exit(f"lapt: {e}; rerun to resume")
except SystemExit as e:
    if e.code in (0, None) and "WORLD_SIZE" in os.environ:
        # A torchrun process whose work is done, outputs written and process group destroyed: it leaves without the
        # interpreter's teardown, in which a gloo thread can abort it ("terminate called without an active
        # exception", SIGABRT) and torchrun would then fail the finished run.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    raise
