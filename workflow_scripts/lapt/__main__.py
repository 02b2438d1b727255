"""``python -m workflow_scripts.lapt``: see workflow_scripts.lapt.cli."""

import sys

from workflow_scripts.lapt.cli import main

sys.exit(main())
