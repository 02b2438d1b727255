"""Publish an adapted cell (rules/publish.smk).

python -m workflow_scripts.publish card --results results.csv --spec JSON [--stats train_stats.json]
    --out <cell>/card/README.md [--copy-into <cell>/model]
python -m workflow_scripts.publish upload --repo user/name --model <cell>/model --card <cell>/card/README.md
    [--gguf <cell>/gguf/model.f16.gguf ...] [--private] --out <cell>/publish.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workflow_scripts.io import setup_logging


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("card", help="the cell's model card from results.csv")
    c.add_argument("--results", required=True, help="the run's results.csv")
    c.add_argument("--spec", required=True, help="JSON: the cell, its recipe and provenance (rules/publish.smk)")
    c.add_argument("--stats", default=None, help="the training job's stats JSON (none for an untrained cell)")
    c.add_argument("--out", required=True)
    c.add_argument("--copy-into", default=None, help="the cell's own model folder: the card also as its README.md")
    u = sub.add_parser("upload", help="the cell's model folder, card and GGUF files to the hub")
    u.add_argument("--repo", required=True, help="the hub repository id, namespace/name")
    u.add_argument("--model", required=True, type=Path)
    u.add_argument("--card", required=True, type=Path)
    u.add_argument("--gguf", nargs="*", default=[], type=Path)
    u.add_argument("--private", action="store_true")
    u.add_argument("--out", required=True, type=Path, help="the record: repository, commit, files")
    for sp in (c, u):
        sp.add_argument("--log", default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    if a.command == "card":
        from workflow_scripts.publish.card import write_card

        write_card(a.results, json.loads(a.spec), a.stats, a.out, a.copy_into)
    else:
        from workflow_scripts.publish.upload import publish

        publish(a.repo, a.model, a.card, a.gguf, private=a.private, out=a.out)


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # a refused token or a missing input as one line, exit 1
