"""Move outputs that lie directly under results/ (outside any run folder) into one run's folder, results/<run>/.

    python -m tools.migrate_results -n                                   # list the moves
    python -m tools.migrate_results                                      # into results/default/ (config.yaml's run)
    python -m tools.migrate_results --configfile configs/paper.yaml      # into the run of that config (results/paper/)

Name the configuration that wrote them: the run folder records it, and Snakemake then finds every moved output up to
date (files keep their modification times; nothing is recomputed). Nothing is overwritten: a name already in the run
folder stops the move before anything moves. results/downloads/ stays where it is (every run shares it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workflow_scripts.plan.runs import RESULTS, migrate, outside_runs, run_of_configfiles


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tools.migrate_results",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--configfile", nargs="+", default=["config.yaml"], help="the config file(s) that wrote them")
    p.add_argument("--run", help="the run folder (default: the run of --configfile)")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results folder (default: results)")
    p.add_argument("-n", "--dry-run", action="store_true", help="list the moves, move nothing")
    a = p.parse_args(argv)
    run = run_of_configfiles(a.configfile, a.run)
    if not outside_runs(a.results):
        print(f"nothing to move: {a.results}/ holds no outputs outside a run folder")
        return 0
    try:
        moves = migrate(run, a.configfile, a.results, dry_run=a.dry_run)
    except ValueError as e:
        print(f"error: {e}")
        return 1
    for line in moves:
        print(("would move " if a.dry_run else "moved ") + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
