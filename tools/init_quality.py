"""Quality check of the initializations with no training: held-out NLL per character.

For each language: split the LibreOffice l10n pairs (a stand-in for CC-100, see l10n.py) with ``corpus.split_pairs``
into D (the adaptation corpus) and held-out text, train the aux tokenizer on D, expand the source tokenizer by k new
tokens, initialize the source model by each method, and score the held-out text with ``perplexity.evaluate_ppl``. NLL
and bits per character compare across vocabularies (perplexity does not). Source is the unexpanded model. Mean, Merge
and Align should land far closer to Source than Random does: a new row that points nowhere near its spelling costs nats
on every occurrence.

    python -m tools.init_quality --source-model /tmp/smollm2 --work /tmp/initq --out initq.json \
        --lang th:resources/l10n/libreoffice-l10n-th_*.deb:4000 --lang si:...:1500
"""

from __future__ import annotations

import argparse
import glob
import logging
import time
from pathlib import Path
from typing import Any

from workflow_scripts.initialize import INIT_METHODS  # the registry: no torch at import
from workflow_scripts.io import set_threads, setup_logging, write_json, write_text

METHODS = ("Source", *INIT_METHODS)


def expand_for_language(
    source_model: Path,
    deb: str,
    lang: str,
    aux_vocab_size: int,
    k: int,
    work: Path,
    seed: int,
    n_train: int,
    n_heldout: int,
    n_mt: int,
    new_merges: str = "last",
) -> tuple[Path, list[str], list[str], dict]:
    """D, held-out text and T_t for one language, built with the workflow's own modules (corpus, l10n, vocab)."""
    from workflow_scripts.corpus import split_pairs
    from workflow_scripts.l10n import extract
    from workflow_scripts.vocab import expand, train_aux_tokenizer

    pairs, _ = extract(deb, lang, 3)
    train, heldout, _ = split_pairs(pairs, n_train=n_train, n_heldout=n_heldout, n_mt=n_mt, seed=seed)
    tok_dir = work / f"{lang}.aux{aux_vocab_size}.k{k}.{new_merges}"
    aux = train_aux_tokenizer(train, source_model, aux_vocab_size, seed)
    out_dir = None if tok_dir.exists() else tok_dir
    report = expand(source_model, aux, train, k, out_dir, heldout, new_merges=new_merges).report
    info = {
        "pairs": len(pairs),
        "train_sentences": len(train),
        "heldout_sentences": len(heldout),
        "k": k,
        "aux_vocab_size": aux_vocab_size,
        "tokens_per_sentence_source": report["tokens_per_sentence_source"],
        "tokens_per_sentence_target": report["tokens_per_sentence_target"],
        "new_token_share": report["new_token_share"],
    }
    return tok_dir, train, heldout, info


def score(model: Any, tokenizer: Any, heldout: list[str], batch_size: int) -> dict:
    from workflow_scripts.perplexity import evaluate_ppl

    res = evaluate_ppl(model, tokenizer, heldout, batch_size=batch_size)
    return {r["metric"]: r["value"] for r in res["records"]}


def run(
    source_model: Path,
    langs: list[tuple[str, str, int]],
    work: Path,
    methods: list[str],
    k: int = 100,
    seed: int = 42,
    n_train: int = 2000,
    n_heldout: int = 200,
    n_mt: int = 40,
    batch_size: int = 16,
    new_merges: str = "last",
) -> dict:
    """The table: for each language and method, NLL/char, bits/char and tokens per sentence of the held-out text."""
    import copy

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workflow_scripts.initialize import initialize_model

    log = logging.getLogger("vocabexp")
    base = AutoModelForCausalLM.from_pretrained(source_model, dtype="auto").eval()
    src_tok = AutoTokenizer.from_pretrained(source_model)
    out: dict[str, Any] = {
        "source_model": str(source_model),
        "k": k,
        "seed": seed,
        "new_merges": new_merges,
        "languages": {},
    }
    for lang, deb, aux in langs:
        tok_dir, train, heldout, info = expand_for_language(
            source_model, deb, lang, aux, k, work, seed, n_train, n_heldout, n_mt, new_merges
        )
        tgt_tok = AutoTokenizer.from_pretrained(tok_dir)
        rows: dict[str, Any] = {}
        for method in methods:
            t0 = time.perf_counter()
            if method == "Source":
                metrics = score(base, src_tok, heldout, batch_size)
                extra: dict[str, Any] = {}
            else:
                model = copy.deepcopy(base)
                report = initialize_model(model, src_tok, tgt_tok, method, seed, 1, {"corpus": train})
                t_init = time.perf_counter() - t0
                metrics = score(model.eval(), tgt_tok, heldout, batch_size)
                extra = {
                    "init_seconds": round(t_init, 2),
                    "fallbacks": report["fallbacks"],
                    "new_over_source_norm": report["stats"]["input"]["new_over_source"],
                    "method_stats": report["method_stats"],
                }
                del model
            rows[method] = {**metrics, **extra, "seconds": round(time.perf_counter() - t0, 2)}
            log.info("%s %s: nll/char %.4f (%.1f s)", lang, method, metrics["nll_per_char"], rows[method]["seconds"])
        out["languages"][lang] = {"data": info, "methods": rows}
    return out


def time_corpus_methods(source_model: Path, tok_dir: Path, lines: list[str], n: int, seed: int) -> dict:
    """Seconds of Align's counting and of FOCUS (fastText training + sparsemax) on ``n`` lines and on n/3, n/9.

    ``lines`` are resampled with replacement (seeded) to n: the l10n corpora hold only a few thousand sentences, so
    30K lines repeat sentences; the cost per line is what is measured. The smaller sizes show the scaling.
    """
    import random

    from transformers import AutoTokenizer

    from workflow_scripts.initialize import InitContext, align_counts, find_new_tokens, focus_plans

    src_tok = AutoTokenizer.from_pretrained(source_model)
    tgt_tok = AutoTokenizer.from_pretrained(tok_dir)
    tokens = find_new_tokens(src_tok, tgt_tok)
    sample = random.Random(seed).choices(lines, k=n)
    out = {}
    for size in (n // 9, n // 3, n):
        d = sample[:size]
        t0 = time.perf_counter()
        _, stats = align_counts(src_tok, tgt_tok, d, [t.id for t in tokens])
        t_align = time.perf_counter() - t0
        ids = sorted(src_tok.get_vocab().values())
        ctx = InitContext(src_tok, tgt_tok, ids, tokens, seed, True, {"corpus": d})
        _, fstats = focus_plans(ctx)
        out[size] = {
            "align_seconds": round(t_align, 2),
            "align_occurrences": stats["occurrences"],
            "focus_seconds": fstats["seconds"],
            "fasttext_seconds": fstats["seconds_fasttext"],
            "characters": sum(len(x) for x in d),
        }
    return out


def markdown(result: dict) -> str:
    """The table as Markdown: NLL per character (nats) and bits per character, per language × method."""
    langs = list(result["languages"])
    methods = list(next(iter(result["languages"].values()))["methods"])
    head = "| method | " + " | ".join(f"{lang} nll/char | {lang} bits/char | {lang} tok/sent" for lang in langs) + " |"
    sep = "|---|" + "---|---|---|" * len(langs)
    lines = [head, sep]
    for m in methods:
        cells = []
        for lang in langs:
            r = result["languages"][lang]["methods"][m]
            cells.append(f"{r['nll_per_char']:.4f} | {r['bits_per_char']:.4f} | {r['tokens_per_sentence']:.1f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m tools.init_quality", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--source-model", required=True, help="source model folder (e.g. SmolLM2 prepared by source_model)")
    p.add_argument(
        "--lang",
        action="append",
        required=True,
        help="LANG:DEB_GLOB:AUX_VOCAB, e.g. th:resources/l10n/libreoffice-l10n-th_*.deb:4000 (repeatable)",
    )
    p.add_argument("--work", required=True, help="folder for the expanded tokenizers")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated; Source = the unexpanded model")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-heldout", type=int, default=200)
    p.add_argument("--n-mt", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--new-merges", choices=("first", "last"), default="last", help="tokenizer.new_merges")
    p.add_argument("--out", required=True, help="output JSON (a Markdown table is written next to it)")
    p.add_argument(
        "--timing-lines", type=int, default=0, help="also time Align and FOCUS on N resampled lines of each language"
    )
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)
    log = setup_logging(a.log)
    set_threads(a.threads)
    langs = []
    for spec in a.lang:
        lang, pattern, aux = spec.split(":")
        debs = sorted(glob.glob(pattern))
        if not debs:
            p.error(f"--lang {spec}: no file matches {pattern}")
        langs.append((lang, debs[-1], int(aux)))
    result = run(
        Path(a.source_model),
        langs,
        Path(a.work),
        a.methods.split(","),
        a.k,
        a.seed,
        a.n_train,
        a.n_heldout,
        a.n_mt,
        a.batch_size,
        a.new_merges,
    )
    if a.timing_lines:
        from workflow_scripts.l10n import extract

        for lang, deb, aux in langs:
            lines = [t for _, t in extract(deb, lang, 3)[0]]
            tok_dir = Path(a.work) / f"{lang}.aux{aux}.k{a.k}.{a.new_merges}"
            result["languages"][lang]["timing"] = time_corpus_methods(
                Path(a.source_model), tok_dir, lines, a.timing_lines, a.seed
            )
            log.info("%s timing: %s", lang, result["languages"][lang]["timing"])
    write_json(a.out, result)
    table = markdown(result)
    write_text(Path(a.out).with_suffix(".md"), table)
    log.info("\n%s", table)


if __name__ == "__main__":
    main()
