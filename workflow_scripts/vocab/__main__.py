from workflow_scripts.vocab.cli import main

main()
