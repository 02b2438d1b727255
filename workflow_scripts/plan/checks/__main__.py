"""Check config files as planning does, naming the file and the line of a YAML error::

    python -m workflow_scripts.plan.checks configs/paper.yaml

Snakemake reads ``--configfile X`` before the Snakefile runs, and its error for a file that does not parse names
neither the file nor the line ("Config file is not valid JSON or YAML"); this command does. For each file: YAML
syntax, keys given twice, the schema, a left-out data or evaluation block, then the semantic checks (paths resolve
against the working directory, as in Snakemake), and the warnings planning prints. Exit 1 when any file is refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml"


def problems(path: Path) -> tuple[list[str], list[str]]:
    """(errors, warnings) of one config file, in the order planning reports them."""
    import yaml

    from workflow_scripts.plan.checks import (
        ConfigError,
        check_config,
        config_file_problems,
        config_warnings,
        missing_blocks,
        schema_errors,
        unset_evaluation,
    )
    from workflow_scripts.plan.checks.schema import fill_defaults

    if not path.is_file():
        return [f"{path}: no such file"], []
    errors = config_file_problems(path)
    if errors:
        return errors, []
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = schema_errors(config, SCHEMA) or missing_blocks(config, SCHEMA)
    if errors:
        return errors, []
    unset = unset_evaluation(config, SCHEMA)
    fill_defaults(config, SCHEMA)
    try:
        check_config(config, Path.cwd())
    except ConfigError as e:
        return [line.removeprefix("  - ") for line in str(e).splitlines()[1:]], []
    return [], [*unset, *config_warnings(config)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m workflow_scripts.plan.checks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("configfiles", nargs="+", type=Path)
    a = p.parse_args(argv)
    refused = 0
    for path in a.configfiles:
        errors, warnings = problems(path)
        for line in warnings:
            print(f"config warning: {line}", file=sys.stderr)
        if errors:
            refused += 1
            print(f"{path}: invalid configuration:\n  - " + "\n  - ".join(errors), file=sys.stderr)
        else:
            print(f"{path}: ok")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
