from workflow_scripts.io import cli_main
from workflow_scripts.vocab.cli import main

cli_main(main)  # expected failures (bad input files) as one line, exit 1
