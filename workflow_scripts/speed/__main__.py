"""Command line of the speed step (rule measure_speed): ``python -m workflow_scripts.speed --model M
--source-tokenizer S --pairs mt.tsv --lang th --out speed.json``; see the package docstring for what it times."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from workflow_scripts.evaluate import DECODING, add_common_args, load_model, read_cell
from workflow_scripts.io import read_pairs, set_threads, setup_logging, write_json
from workflow_scripts.prompts import mt_query
from workflow_scripts.speed import __doc__ as PACKAGE_DOC
from workflow_scripts.speed.decoders import HFDecoder
from workflow_scripts.speed.measure import Item, Settings, hardware, run_task

log = logging.getLogger("vocabexp")


def mt_items(pairs_file: str | Path, lang: str, n: int | None, reference_chars: int | None = None) -> list[Item]:
    """The mt items: the harness's prompt on the English side, the target side as the reference (its first
    ``reference_chars`` characters when given: teacher forcing then costs less, on the same text for every model)."""
    return [Item(mt_query(en, lang), target[:reference_chars]) for en, target in read_pairs(pairs_file, n)]


def sum_items(
    folder: str | Path, lang: str, n: int | None, reference_chars: int | None = None, tokenizer=None
) -> list[Item]:
    """The sum items: the harness's prompt on each article of the evaluation split (cut as the harness cuts it for
    ``tokenizer``), the summary as the reference; read through a private ``datasets`` cache, as the harness reads."""
    import tempfile

    import datasets

    from workflow_scripts.harness.datasets import task_source
    from workflow_scripts.harness.run import private_datasets_cache
    from workflow_scripts.prompts import sum_prompt

    source = task_source("sum", lang)
    with tempfile.TemporaryDirectory() as cache, private_datasets_cache(cache):
        rows = datasets.load_dataset(str(folder), source.subset, split=source.split)
        rows = [rows[i] for i in range(min(n or len(rows), len(rows)))]
    return [Item(sum_prompt(r["text"], lang, tokenizer), r["summary"][:reference_chars]) for r in rows]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=PACKAGE_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p, batch_size=4)
    p.add_argument("--source-tokenizer", required=True, help="the SOURCE model's folder (its tokenizer re-counts text)")
    p.add_argument("--pairs", required=True, help="mt TSV English<TAB>target")
    p.add_argument("--sum-data", default=None,
                   help="the sum dataset folder the harness evaluates (hub layout): time the sum task too")  # fmt: skip
    p.add_argument("--lang", required=True)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--decodings", nargs="+", default=["greedy"], choices=sorted(DECODING))
    p.add_argument("--no-teacher-forced", action="store_true", help="skip teacher forcing")
    p.add_argument("--paired", action="store_true",
                   help="teacher-force Source's model (--source-tokenizer's folder) item by item next to this one: "
                        "a speed-up both sides of which saw the same machine load (paired_speedup)")  # fmt: skip
    p.add_argument("--reference-chars", type=int, default=0,
                   help="teacher forcing: only the first N characters of each reference (0: all)")  # fmt: skip
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--mumo-k", type=int, default=10, help="a MuMo --model: candidates per step (MuMo's k)")
    p.add_argument("--mumo-no-verify", action="store_true", help="a MuMo --model: decode without verification")
    a = p.parse_args(argv)
    for name in ("repeats", "batch_size", "max_new_tokens"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    if a.warmup < 0 or a.reference_chars < 0:
        p.error(f"--warmup and --reference-chars must be at least 0, got {a.warmup}, {a.reference_chars}")
    return a


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    cell = read_cell(a.cell)
    items = mt_items(a.pairs, a.lang, a.n, a.reference_chars or None)
    from transformers import AutoTokenizer

    from workflow_scripts.mumo.head import is_mumo_dir

    mumo = source = None
    if is_mumo_dir(a.model):  # MuMo: its decoder on the source model it refers to (workflow_scripts.speed.mumo)
        from workflow_scripts.mumo.decode import DecodeSettings
        from workflow_scripts.mumo.head import load_mumo
        from workflow_scripts.speed.mumo import MuMoDecoder

        mumo, tokenizer = load_mumo(a.model, a.dtype)
        model = mumo.base
        decoder = MuMoDecoder(mumo, tokenizer, DecodeSettings(k=a.mumo_k, verify=not a.mumo_no_verify, seed=a.seed))
    else:
        model, tokenizer = load_model(a.model, a.dtype)
        decoder = HFDecoder(model, tokenizer)
    settings = Settings(
        max_new_tokens=a.max_new_tokens,
        repeats=a.repeats,
        warmup=a.warmup,
        batch_sizes=tuple(dict.fromkeys((1, a.batch_size))),
        decodings=tuple(a.decodings),
        teacher_forced=not a.no_teacher_forced,
        seed=a.seed,
    )
    source_decoder = None
    if a.paired and not settings.teacher_forced:
        raise SystemExit("--paired needs teacher forcing (drop --no-teacher-forced)")
    if a.paired and mumo is not None:  # the frozen model under the head is Source's: time it, not a second copy
        source_decoder = HFDecoder(mumo.base, tokenizer)
    elif a.paired and Path(a.model).resolve() != Path(a.source_tokenizer).resolve():
        source = load_model(a.source_tokenizer, a.dtype)
        source_decoder = HFDecoder(*source)
    # the source tokenizer re-counts text; loaded once (with Source's model when it is timed beside this one)
    source_tokenizer = source[1] if source else AutoTokenizer.from_pretrained(a.source_tokenizer)
    records = run_task(decoder, tokenizer, source_tokenizer, "mt", items, settings, source_decoder)
    n_items = {"mt": len(items)}
    if a.sum_data:
        summaries = sum_items(a.sum_data, a.lang, a.n, a.reference_chars or None, tokenizer)
        records += run_task(decoder, tokenizer, source_tokenizer, "sum", summaries, settings, source_decoder)
        n_items["sum"] = len(summaries)
    details = {
        "model_dir": str(a.model),
        "source_tokenizer": str(a.source_tokenizer),
        "pairs_file": str(a.pairs),
        "language": a.lang,
        "n": len(items),
        "n_items": n_items,
        "sum_data": a.sum_data,
        "max_new_tokens": a.max_new_tokens,
        "repeats": a.repeats,
        "warmup": a.warmup,
        "reference_chars": a.reference_chars or None,
        "seed": a.seed,
        "hardware": hardware(model),
    }
    if mumo is not None:
        details["mumo"] = {"k": a.mumo_k, "verify": not a.mumo_no_verify, "v_mono": len(mumo.v_mono)}
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": records, "details": details})
    for r in records:
        if r["metric"].endswith("per_second") or r["metric"] == "token_ratio_bound":
            log.info("speed %s %s b%s %s: %.3f", r["mode"], r["decoding"], r["batch_size"], r["metric"], r["value"])


if __name__ == "__main__":
    main()
