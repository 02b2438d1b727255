"""Command line of the tokenizer step: ``python -m workflow_scripts.vocab aux|expand`` (rules/vocab.smk)."""

from __future__ import annotations

import argparse
import logging
import time

from workflow_scripts.io import atomic_path, corpus_lines, read_corpus, setup_logging, write_json
from workflow_scripts.vocab.aux import train_aux_tokenizer
from workflow_scripts.vocab.pipeline import expand


def parser() -> argparse.ArgumentParser:
    """The ``aux`` and ``expand`` subcommands and their arguments."""
    from workflow_scripts import vocab

    p = argparse.ArgumentParser(
        prog="python -m workflow_scripts.vocab",
        description=vocab.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("aux", help="train the auxiliary tokenizer T_aux on D")
    a.add_argument("--source-tokenizer", required=True, help="HF model/tokenizer folder with tokenizer.json")
    a.add_argument("--corpus", required=True, help="D, one sentence a line")
    a.add_argument("--vocab-size", type=int, required=True)
    a.add_argument("--seed", type=int, default=42)
    a.add_argument("--threads", type=int, default=1, help="SentencePiece trainer threads")
    a.add_argument("--out", required=True, help="aux tokenizer.json")
    a.add_argument("--log")
    e = sub.add_parser("expand", help="choose V_new and write the target tokenizer T_t")
    e.add_argument("--source-tokenizer", required=True)
    e.add_argument("--aux", required=True, help="aux tokenizer.json")
    e.add_argument("--corpus", required=True, help="D, for token frequencies")
    e.add_argument("--heldout", required=True, help="held-out target text for the report")
    e.add_argument("--k", type=int, required=True)
    e.add_argument(
        "--new-merges",
        choices=("first", "last"),
        default="last",
        help="new merges after the source merges (last, the default) or before them (first: the paper's priority)",
    )
    e.add_argument(
        "--selection",
        choices=("reachable", "topk"),
        default="reachable",
        help="V_new: the top-k made reachable with building blocks (reachable, the default) or the plain top-k (topk)",
    )
    e.add_argument("--out", required=True, help="target tokenizer folder")
    e.add_argument("--report", required=True)
    e.add_argument("--log")
    r = sub.add_parser("replace", help="train the replacement tokenizer on D (Table 11): it replaces V_s entirely")
    r.add_argument("--source-tokenizer", required=True)
    r.add_argument("--corpus", required=True, help="D, one sentence a line")
    r.add_argument("--heldout", required=True, help="held-out target text for the report")
    r.add_argument("--vocab-size", type=int, required=True, help="the whole vocabulary, special tokens included")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--threads", type=int, default=1, help="SentencePiece trainer threads")
    r.add_argument("--out", required=True, help="replacement tokenizer folder")
    r.add_argument("--report", required=True)
    r.add_argument("--log")
    return p


def _replace(args: argparse.Namespace, lines: list[str], corpus_stats: dict, log: logging.Logger) -> None:
    """The ``replace`` subcommand: train, save the folder, write the report (special-token mapping, fragmentation)."""
    from workflow_scripts.vocab.replace import replacement_report, save_replacement, train_replacement_tokenizer
    from workflow_scripts.vocab.source import as_tokenizer

    t0 = time.perf_counter()
    target, mapping, text = train_replacement_tokenizer(
        lines, args.source_tokenizer, args.vocab_size, args.seed, args.threads
    )
    save_replacement(args.source_tokenizer, text, mapping, args.out)
    heldout = read_corpus(args.heldout, what="held-out text")
    report = replacement_report(as_tokenizer(args.source_tokenizer), target, mapping, heldout, lines)
    write_json(args.report, {**report, "seconds": round(time.perf_counter() - t0, 2), "corpus": corpus_stats})
    log.info(
        "replacement tokenizer: %d tokens, %d special ids changed; held-out tokens/sentence %.1f -> %.1f",
        report["vocab_size"],
        report["special_ids_changed"],
        report["tokens_per_sentence_source"],
        report["tokens_per_sentence_target"],
    )


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    log = setup_logging(args.log)
    # Invalid UTF-8 and over-long lines are skipped and counted; an empty corpus stops here, naming the file.
    lines, corpus_stats = corpus_lines(args.corpus, what="corpus D")
    if args.command == "replace":
        _replace(args, lines, corpus_stats, log)
        return
    if args.command == "aux":
        t0 = time.perf_counter()
        aux = train_aux_tokenizer(lines, args.source_tokenizer, args.vocab_size, args.seed, args.threads)
        log.info(
            "aux tokenizer: %d tokens from %d lines in %.1f s",
            aux.get_vocab_size(),
            len(lines),
            time.perf_counter() - t0,
        )
        with atomic_path(args.out) as tmp:
            aux.save(str(tmp))
        return
    heldout = read_corpus(args.heldout, what="held-out text")
    result = expand(
        args.source_tokenizer,
        args.aux,
        lines,
        args.k,
        args.out,
        heldout,
        new_merges=args.new_merges,
        selection=args.selection,
    )
    write_json(args.report, {**result.report, "corpus": corpus_stats})
    log.info(
        "T_t: %d new tokens (%s: %d of the top k in, %d unreachable), merges %s (%d replaced, %.1f%% of their uses "
        "in D cross a source-token boundary) in %.1f s; held-out tokens/sentence %.1f -> %.1f",
        args.k,
        args.selection,
        result.plan.top_k_in,
        len(result.plan.unreachable),
        args.new_merges,
        len(result.replaced),
        100 * result.report["boundary_crossings_in_D"]["crossing_share"],
        result.seconds,
        result.report["tokens_per_sentence_source"],
        result.report["tokens_per_sentence_target"],
    )
