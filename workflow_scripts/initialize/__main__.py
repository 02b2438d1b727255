"""The command line the initialize rule calls: ``python -m workflow_scripts.initialize --method Mean ...``."""

from __future__ import annotations

import argparse
import json
from typing import Any

import workflow_scripts.initialize as package
from workflow_scripts.initialize.apply import initialize
from workflow_scripts.initialize.methods.focus import FASTTEXT_DEFAULTS
from workflow_scripts.initialize.registry import CORPUS_METHODS, INIT_METHODS, method_options
from workflow_scripts.io import read_corpus, set_threads, setup_logging, write_json


def parser() -> argparse.ArgumentParser:
    """The arguments of the command line; the package docstring is its description."""
    p = argparse.ArgumentParser(
        prog="python -m workflow_scripts.initialize",
        description=package.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--source-model", required=True, help="source model folder (HF, safetensors, tokenizer inside)")
    p.add_argument("--target-tokenizer", required=True, help="expanded target tokenizer folder (BPE over V_s ∪ V_new)")
    p.add_argument("--method", required=True, choices=sorted(INIT_METHODS), help="initialization (paper names)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument(
        "--vocab",
        choices=("expand", "replace"),
        default="expand",
        help="expand: new rows after the source rows; replace: the target tokenizer replaces V_s, every row is new",
    )
    p.add_argument("--pad-to-multiple-of", type=int, default=1, help="pad the vocabulary rows to a multiple of N")
    p.add_argument("--corpus", help="adaptation corpus D, one sentence a line (required by Align and FOCUS)")
    p.add_argument("--fasttext-dim", type=int, default=FASTTEXT_DEFAULTS["dim"], help="FOCUS: fastText dimension")
    p.add_argument("--fasttext-epochs", type=int, default=FASTTEXT_DEFAULTS["epoch"], help="FOCUS: fastText epochs")
    p.add_argument(
        "--fasttext-min-count", type=int, default=FASTTEXT_DEFAULTS["min_count"], help="FOCUS: fastText minCount"
    )
    p.add_argument(
        "--method-options",
        default="{}",
        help="JSON: the method's settings (a config's initialization.<method>), over its registered defaults",
    )
    p.add_argument("--out", required=True, help="output target model folder")
    p.add_argument("--report", required=True, help="output JSON: per-token mapping, norms, fallbacks")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    return p


def main(argv: list[str] | None = None) -> None:
    """Initialize the target model of one grid cell and write its report JSON."""
    p = parser()
    a = p.parse_args(argv)
    if a.method in CORPUS_METHODS and not a.corpus:
        p.error(f"--method {a.method} needs --corpus FILE (the adaptation corpus D, one sentence a line)")
    try:
        options = method_options(a.method, json.loads(a.method_options))
    except (ValueError, TypeError) as e:  # json.JSONDecodeError is a ValueError
        p.error(f"--method-options: {e}")
    log = setup_logging(a.log)
    set_threads(a.threads)
    resources: dict[str, Any] = {"options": options}
    if a.corpus:
        resources["corpus"] = read_corpus(a.corpus, what="corpus D")
    resources["fasttext_options"] = {
        "dim": a.fasttext_dim,
        "epoch": a.fasttext_epochs,
        "min_count": a.fasttext_min_count,
    }
    if a.vocab == "replace":
        from workflow_scripts.initialize.replace import initialize_replacement

        report = initialize_replacement(
            a.source_model, a.target_tokenizer, a.out, a.method, a.seed, a.pad_to_multiple_of, resources
        )
        log.info(
            "%s (replace): %s rows, copied %s, rules %s, fallbacks %s, %s s",
            a.method,
            report["vocab"]["rows"],
            report["copied_rows"],
            report["rules"],
            report["fallbacks"],
            report["seconds"],
        )
        write_json(a.report, report)
        return
    report = initialize(a.source_model, a.target_tokenizer, a.out, a.method, a.seed, a.pad_to_multiple_of, resources)
    diag = report["mapping_diagnostics"]
    log.info(
        "%s: %d new tokens (%d partial UTF-8), %d rows, fallbacks %s, new/source norm %s, %s s",
        a.method,
        report["vocab"]["new"],
        diag["partial_utf8_tokens"],
        report["vocab"]["rows"],
        report["fallbacks"],
        {r: s["new_over_source"] for r, s in report["stats"].items() if isinstance(s, dict)},
        report["seconds"],
    )
    if report["method_stats"]:
        log.info("%s: %s", a.method, report["method_stats"])
    write_json(a.report, report)


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
