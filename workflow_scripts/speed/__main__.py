"""Command line of the speed step (rule measure_speed): ``python -m workflow_scripts.speed --model M
--source-tokenizer S --pairs mt.tsv --lang th --out speed.json``; see the package docstring for what it times."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from workflow_scripts.inference import DECODING, add_common_args, items_used, load_model, read_cell
from workflow_scripts.io import read_pairs, set_threads, setup_logging, write_json
from workflow_scripts.languages import language_arg
from workflow_scripts.prompts import mt_query
from workflow_scripts.speed import __doc__ as PACKAGE_DOC
from workflow_scripts.speed.choices import run_choice_task
from workflow_scripts.speed.decoders import HFDecoder
from workflow_scripts.speed.measure import Item, Settings, hardware, run_generation, run_teacher_forced
from workflow_scripts.tasks import TASKS, TIMED_CHOICE_TASKS

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
    p.add_argument(
        "--sum-data",
        default=None,
        help="the sum dataset folder the harness evaluates (hub layout): time the sum task too",
    )
    p.add_argument(
        "--choice-data",
        action="append",
        default=[],
        metavar="TASK=FOLDER",
        help="a log-likelihood task and its dataset folder (hub layout): time its forward "
        "passes over prompt and choices (workflow_scripts.speed.choices); repeatable",
    )
    p.add_argument(
        "--choice-fewshot",
        action="append",
        default=[],
        metavar="TASK=N",
        help="few-shot examples in the timed contexts of a --choice-data task, as the harness evaluates "
        "it (evaluation.<task>.fewshot); default: the task's own (its spec's fewshot); "
        "repeatable",
    )
    p.add_argument(
        "--large-batch-decodings",
        nargs="*",
        default=None,
        choices=sorted(DECODING),
        help="decodings timed at --batch-size (default: every decoding)",
    )
    p.add_argument("--lang", required=True, type=language_arg)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--decodings", nargs="+", default=["greedy"], choices=sorted(DECODING))
    p.add_argument("--no-teacher-forced", action="store_true", help="skip teacher forcing")
    p.add_argument(
        "--paired",
        action="store_true",
        help="teacher-force Source's model (--source-tokenizer's folder) item by item next to this one: "
        "a speed-up both sides of which saw the same machine load (paired_speedup)",
    )
    p.add_argument(
        "--reference-chars",
        type=int,
        default=0,
        help="teacher forcing: only the first N characters of each reference (0: all)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--mumo-k", type=int, default=10, help="a MuMo --model: candidates per step (MuMo's k)")
    p.add_argument("--mumo-no-verify", action="store_true", help="a MuMo --model: decode without verification")
    a = p.parse_args(argv)
    for name in ("repeats", "batch_size", "max_new_tokens"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(a, name)}")
    choice_data = {}
    for entry in a.choice_data:
        task, sep, folder = entry.partition("=")
        if not sep or task not in TIMED_CHOICE_TASKS or not folder:
            p.error(f"--choice-data takes TASK=FOLDER with TASK one of {', '.join(TIMED_CHOICE_TASKS)}, got {entry!r}")
        choice_data[task] = folder
    a.choice_data = choice_data
    fewshot = {}
    if choice_data:
        fewshot = {task: TASKS[task].fewshot for task in choice_data}
    for entry in a.choice_fewshot:
        task, sep, count = entry.partition("=")
        if not sep or task not in choice_data or not count.isdigit():
            p.error(f"--choice-fewshot takes TASK=N with TASK one of the --choice-data tasks, got {entry!r}")
        fewshot[task] = int(count)
    a.choice_fewshot = fewshot
    if a.warmup < 0 or a.reference_chars < 0:
        p.error(f"--warmup and --reference-chars must be at least 0, got {a.warmup}, {a.reference_chars}")
    return a


PARTIAL_SUFFIX = ".partial.json"


def partial_path(out: str | Path) -> Path:
    """The file next to ``out`` that holds the records of every unit finished so far (``main``)."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".json") + PARTIAL_SUFFIX)


def _unit_finished(key: str) -> None:
    """Called after each unit's records are saved; tests replace it to stop a run at a known point."""


def plan_units(a: argparse.Namespace) -> list[tuple[str, str]]:
    """(task, phase) units in run order: generation of mt (and sum) with the model alone, then the paired phase
    (teacher forcing of mt and sum, the log-likelihood tasks), which needs Source beside the model when paired."""
    generation = ["mt", *(["sum"] if a.sum_data else [])]
    units = [(t, "generate") for t in generation]
    if not a.no_teacher_forced:
        units += [(t, "paired") for t in generation]
    return units + [(task, "paired") for task in a.choice_data]


def load_decoder(a: argparse.Namespace):
    """The model timed and its decoder: (MuMo model or None, the model, its tokenizer, the decoder)."""
    from workflow_scripts.mumo.head import is_mumo_dir

    if not is_mumo_dir(a.model):
        model, tokenizer = load_model(a.model, a.dtype)
        return None, model, tokenizer, HFDecoder(model, tokenizer)
    # MuMo: its decoder on the source model it refers to (workflow_scripts.speed.mumo)
    from workflow_scripts.mumo.decode import DecodeSettings
    from workflow_scripts.mumo.head import load_mumo
    from workflow_scripts.speed.mumo import MuMoDecoder

    if a.choice_data:
        raise SystemExit("--choice-data: a MuMo model is not evaluated on log-likelihood tasks (grid.MUMO_TASKS)")
    mumo, tokenizer = load_mumo(a.model, a.dtype)
    settings = DecodeSettings(k=a.mumo_k, verify=not a.mumo_no_verify, seed=a.seed)
    return mumo, mumo.base, tokenizer, MuMoDecoder(mumo, tokenizer, settings)


def finished_units(partial: Path, fingerprint: dict) -> dict[str, list[dict]]:
    """The units a partial file of an interrupted run with the same arguments holds (none otherwise)."""
    if not partial.is_file():
        return {}
    saved = json.loads(partial.read_text(encoding="utf-8"))
    if saved.get("arguments") != json.loads(json.dumps(fingerprint)):
        log.info("speed: %s was written with other arguments; timing every unit", partial)
        return {}
    log.info("speed: %s holds finished units %s; they are not timed again", partial, ", ".join(saved["units"]))
    return saved["units"]


def run_details(a: argparse.Namespace, items: dict, units: list[tuple[str, str]], model, mumo) -> dict:
    """The ``details`` of the speed JSON: what was timed, on what, with which settings."""
    details = {
        "model_dir": str(a.model),
        "source_tokenizer": str(a.source_tokenizer),
        "pairs_file": str(a.pairs),
        "language": a.lang,
        "n": len(items["mt"]),
        **items_used("speed", a.n, len(items["mt"]), a.pairs),
        "n_items": {task: len(task_items) for task, task_items in items.items()},
        "sum_data": a.sum_data,
        "choice_data": a.choice_data or None,
        "choice_fewshot": a.choice_fewshot or None,  # the few-shot examples in each timed context
        "max_new_tokens": a.max_new_tokens,
        "repeats": a.repeats,
        "warmup": a.warmup,
        "reference_chars": a.reference_chars or None,
        "seed": a.seed,
        "units": [f"{task}.{phase}" for task, phase in units],
        "hardware": hardware(model),
    }
    if mumo is not None:
        details["mumo"] = {"k": a.mumo_k, "verify": not a.mumo_no_verify, "v_mono": len(mumo.v_mono)}
    if a.data_label:
        details["data_label"] = a.data_label
    return details


def choice_limit_details(a: argparse.Namespace, items: dict, tokenizer, source_tokenizer, lengths: dict) -> dict:
    """Per log-likelihood task: the maximum lengths its contexts were cut to and how many timed items were cut."""
    from workflow_scripts.speed.choices import choice_limits

    return {
        task: {
            "max_length": lengths["model"],
            "source_max_length": lengths["source"],
            "items_truncated": choice_limits(items[task], tokenizer, lengths["model"]),
            "source_items_truncated": choice_limits(items[task], source_tokenizer, lengths["source"]),
        }
        for task in a.choice_data
    }


def read_items(a: argparse.Namespace, model, tokenizer) -> tuple[dict[str, list], dict[str, int]]:
    """The timed items per task, and the model's and Source's maximum lengths where log-likelihood tasks are timed
    (their contexts are cut to them, as the harness cuts them)."""
    items = {"mt": mt_items(a.pairs, a.lang, a.n, a.reference_chars or None)}
    if a.sum_data:
        items["sum"] = sum_items(a.sum_data, a.lang, a.n, a.reference_chars or None, tokenizer)
    lengths: dict[str, int] = {}
    if a.choice_data:
        from transformers import AutoConfig

        from workflow_scripts.inference import model_max_length
        from workflow_scripts.speed.choices import choice_items

        lengths = {
            "model": model_max_length(model.config),
            "source": model_max_length(AutoConfig.from_pretrained(a.source_tokenizer)),
        }
        for task, folder in a.choice_data.items():
            items[task] = choice_items(task, a.lang, folder, a.n, a.choice_fewshot[task])
    return items, lengths


def load_source(a: argparse.Namespace, mumo, tokenizer):
    """Source's decoder for the paired phase, and Source's model where one was loaded for it (None: Source is the
    cell's model, or MuMo's frozen base model, which is Source's: timed without a second copy)."""
    if mumo is not None:
        return HFDecoder(mumo.base, tokenizer), None
    if Path(a.model).resolve() == Path(a.source_tokenizer).resolve():
        return None, None
    source_model, source_tok = load_model(a.source_tokenizer, a.dtype)
    return HFDecoder(source_model, source_tok), source_model


def time_unit(a, task: str, phase: str, items: dict, lengths: dict, decoders: tuple, tokenizers: tuple, settings):
    """The records of one unit: generation, the log-likelihood pass of a choice task, or teacher forcing."""
    decoder, source_decoder = decoders
    tokenizer, source_tokenizer = tokenizers
    if phase == "generate":
        return run_generation(decoder, tokenizer, source_tokenizer, task, items[task], settings)
    if task in TIMED_CHOICE_TASKS:
        return run_choice_task(
            decoder,
            tokenizer,
            source_tokenizer,
            task,
            items[task],
            repeats=a.repeats,
            warmup=a.warmup,
            source_decoder=source_decoder,
            max_length=lengths["model"],
            source_max_length=lengths["source"],
        )
    return run_teacher_forced(decoder, tokenizer, source_tokenizer, task, items[task], settings, source_decoder)


def log_records(records: list[dict]) -> None:
    """The rates, bounds and paired speed-ups in the job's log."""
    for r in records:
        if r["metric"].endswith("per_second") or r["metric"] in ("token_ratio_bound", "paired_speedup"):
            log.info(
                "speed %s %s %s b%s %s: %.3f",
                r["task"],
                r["mode"],
                r["decoding"],
                r["batch_size"],
                r["metric"],
                r["value"],
            )


def main(argv: list[str] | None = None) -> None:
    """Time every unit, saving each unit's records as it finishes; a rerun with the same arguments skips the units
    its partial file holds, so the final JSON is the one an uninterrupted run writes."""
    import gc

    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    cell = read_cell(a.cell)
    from transformers import AutoTokenizer

    if a.paired and a.no_teacher_forced and not a.choice_data:
        raise SystemExit("--paired needs teacher forcing or a log-likelihood task (drop --no-teacher-forced)")
    mumo, model, tokenizer, decoder = load_decoder(a)
    settings = Settings(
        max_new_tokens=a.max_new_tokens,
        repeats=a.repeats,
        warmup=a.warmup,
        batch_sizes=tuple(dict.fromkeys((1, a.batch_size))),
        decodings=tuple(a.decodings),
        teacher_forced=not a.no_teacher_forced,
        seed=a.seed,
        large_batch_decodings=tuple(a.large_batch_decodings or ()),
    )
    source_tokenizer = AutoTokenizer.from_pretrained(a.source_tokenizer)
    items, lengths = read_items(a, model, tokenizer)

    fingerprint = {k: v for k, v in sorted(vars(a).items()) if k not in ("log", "threads", "out")}
    partial = partial_path(a.out)
    done = finished_units(partial, fingerprint)
    units = plan_units(a)
    source_decoder = source_model = None
    for task, phase in units:
        key = f"{task}.{phase}"
        if key in done:
            continue
        if phase == "paired" and a.paired and source_decoder is None:
            # Source is loaded for the paired phase only, after generation: never two models beside a KV cache
            source_decoder, source_model = load_source(a, mumo, tokenizer)
        started = time.perf_counter()
        decoders, tokenizers = (decoder, source_decoder), (tokenizer, source_tokenizer)
        done[key] = time_unit(a, task, phase, items, lengths, decoders, tokenizers, settings)
        write_json(partial, {"arguments": fingerprint, "units": done})
        log.info("speed: unit %s saved after %.1f s", key, time.perf_counter() - started)
        _unit_finished(key)
    if source_model is not None:  # freed before the next job step (and before the output is written)
        del source_decoder, source_model
        gc.collect()
        if model.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()
    records = [r for task, phase in units for r in done[f"{task}.{phase}"]]
    details = run_details(a, items, units, model, mumo)
    if a.choice_data:
        details["choice_limits"] = choice_limit_details(a, items, tokenizer, source_tokenizer, lengths)
    write_json(a.out, {"cell": cell, "records": records, "details": details})
    partial.unlink(missing_ok=True)
    log_records(records)


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
