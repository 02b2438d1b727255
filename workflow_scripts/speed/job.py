"""One speed job (rule measure_speed) run end to end: the model and its decoder loaded, the items read, every unit
timed in order with each unit's records saved as it finishes, and the speed JSON written.

A unit is (task, phase): the generation of mt (and sum) with the model alone, then the paired phase (teacher forcing
of mt and sum, the log-likelihood tasks), which needs Source beside the model when paired. A rerun with the same
settings skips the units its partial file holds, so the final JSON is the one an uninterrupted run writes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path

from workflow_scripts.inference import items_used, load_model
from workflow_scripts.io import write_json
from workflow_scripts.speed.choices import run_choice_task
from workflow_scripts.speed.decoders import HFDecoder
from workflow_scripts.speed.items import max_lengths, read_items
from workflow_scripts.speed.measure import Settings, hardware, run_generation, run_teacher_forced
from workflow_scripts.speed.settings import JobSettings
from workflow_scripts.tasks import TIMED_CHOICE_TASKS

log = logging.getLogger("vocabexp")

PARTIAL_SUFFIX = ".partial.json"


def partial_path(out: str | Path) -> Path:
    """The file next to ``out`` that holds the records of every unit finished so far (``run``)."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".json") + PARTIAL_SUFFIX)


def _unit_finished(key: str) -> None:
    """Called after each unit's records are saved; tests replace it to stop a run at a known point."""


def plan_units(*, sum_data: bool, teacher_forced: bool, choice_tasks: Iterable[str]) -> list[tuple[str, str]]:
    """(task, phase) units in run order: generation of mt (and sum) with the model alone, then the paired phase
    (teacher forcing of mt and sum, the log-likelihood tasks), which needs Source beside the model when paired."""
    generation = ["mt", *(["sum"] if sum_data else [])]
    units = [(t, "generate") for t in generation]
    if teacher_forced:
        units += [(t, "paired") for t in generation]
    return units + [(task, "paired") for task in choice_tasks]


def load_decoder(model_dir: str, dtype: str, *, mumo_k: int, mumo_verify: bool, seed: int, choice_tasks: bool):
    """The model timed and its decoder: (MuMo model or None, the model, its tokenizer, the decoder). A MuMo model
    decodes with ``mumo_k`` candidates per step, verified or not; ``choice_tasks``: log-likelihood tasks are timed
    (refused for MuMo)."""
    from workflow_scripts.mumo.head import is_mumo_dir

    if not is_mumo_dir(model_dir):
        model, tokenizer = load_model(model_dir, dtype)
        return None, model, tokenizer, HFDecoder(model, tokenizer)
    # MuMo: its decoder on the source model it refers to (workflow_scripts.speed.mumo)
    from workflow_scripts.mumo.decode import DecodeSettings
    from workflow_scripts.mumo.head import load_mumo
    from workflow_scripts.speed.mumo import MuMoDecoder

    if choice_tasks:
        raise SystemExit("--choice-data: a MuMo model is not evaluated on log-likelihood tasks (grid.MUMO_TASKS)")
    mumo, tokenizer = load_mumo(model_dir, dtype)
    settings = DecodeSettings(k=mumo_k, verify=mumo_verify, seed=seed)
    return mumo, mumo.base, tokenizer, MuMoDecoder(mumo, tokenizer, settings)


def finished_units(partial: Path, fingerprint: dict) -> dict[str, list[dict]]:
    """The units a partial file of an interrupted run with the same settings holds (none otherwise)."""
    if not partial.is_file():
        return {}
    saved = json.loads(partial.read_text(encoding="utf-8"))
    if saved.get("arguments") != json.loads(json.dumps(fingerprint)):
        log.info("speed: %s was written with other arguments; timing every unit", partial)
        return {}
    log.info("speed: %s holds finished units %s; they are not timed again", partial, ", ".join(saved["units"]))
    return saved["units"]


def run_details(job: JobSettings, items: dict, units: list[tuple[str, str]], model, mumo) -> dict:
    """The ``details`` of the speed JSON: what was timed, on what, with which settings."""
    details = {
        "model_dir": str(job.model),
        "source_tokenizer": str(job.source_tokenizer),
        "pairs_file": str(job.pairs),
        "language": job.lang,
        "n": len(items["mt"]),
        **items_used("speed", job.n, len(items["mt"]), job.pairs),
        "n_items": {task: len(task_items) for task, task_items in items.items()},
        "sum_data": job.sum_data,
        "choice_data": job.choice_data or None,
        "choice_fewshot": job.choice_fewshot or None,  # the few-shot examples in each timed context
        "max_new_tokens": job.max_new_tokens,
        "repeats": job.repeats,
        "warmup": job.warmup,
        "reference_chars": job.reference_chars or None,
        "seed": job.seed,
        "units": [f"{task}.{phase}" for task, phase in units],
        "hardware": hardware(model),
    }
    if mumo is not None:
        details["mumo"] = {"k": job.mumo_k, "verify": not job.mumo_no_verify, "v_mono": len(mumo.v_mono)}
    if job.data_label:
        details["data_label"] = job.data_label
    return details


def choice_limit_details(tasks: Iterable[str], items: dict, tokenizers: tuple, lengths: dict) -> dict:
    """Per log-likelihood task: the maximum lengths its contexts were cut to and how many timed items were cut, in the
    model's and Source's ``tokenizers``."""
    from workflow_scripts.speed.choices import choice_limits

    tokenizer, source_tokenizer = tokenizers
    return {
        task: {
            "max_length": lengths["model"],
            "source_max_length": lengths["source"],
            "items_truncated": choice_limits(items[task], tokenizer, lengths["model"]),
            "source_items_truncated": choice_limits(items[task], source_tokenizer, lengths["source"]),
        }
        for task in tasks
    }


def load_source(model_dir: str, source_dir: str, dtype: str, mumo, tokenizer):
    """Source's decoder for the paired phase, and Source's model where one was loaded for it (None: Source is the
    cell's model, or MuMo's frozen base model, which is Source's: timed without a second copy)."""
    if mumo is not None:
        return HFDecoder(mumo.base, tokenizer), None
    if Path(model_dir).resolve() == Path(source_dir).resolve():
        return None, None
    source_model, source_tok = load_model(source_dir, dtype)
    return HFDecoder(source_model, source_tok), source_model


def time_unit(
    task: str, phase: str, items: dict, lengths: dict, decoders: tuple, tokenizers: tuple, settings: Settings
):
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
            repeats=settings.repeats,
            warmup=settings.warmup,
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


def time_units(job: JobSettings, units: list[tuple[str, str]], items: dict, lengths: dict, loaded: tuple) -> dict:
    """The records of every unit, saved to the partial file as each finishes; units a partial file of the same
    settings holds are not timed again. ``loaded``: (MuMo or None, the model, its decoder, its tokenizer, Source's
    tokenizer). Source's model is loaded for the paired phase only and freed before returning."""
    import gc

    mumo, model, decoder, tokenizer, source_tokenizer = loaded
    fingerprint, partial, timing = job.fingerprint(), partial_path(job.out), job.timing
    done = finished_units(partial, fingerprint)
    source_decoder = source_model = None
    for task, phase in units:
        key = f"{task}.{phase}"
        if key in done:
            continue
        if phase == "paired" and job.paired and source_decoder is None:
            # Source is loaded for the paired phase only, after generation: never two models beside a KV cache
            source_decoder, source_model = load_source(job.model, job.source_tokenizer, job.dtype, mumo, tokenizer)
        started = time.perf_counter()
        decoders, tokenizers = (decoder, source_decoder), (tokenizer, source_tokenizer)
        done[key] = time_unit(task, phase, items, lengths, decoders, tokenizers, timing)
        write_json(partial, {"arguments": fingerprint, "units": done})
        log.info("speed: unit %s saved after %.1f s", key, time.perf_counter() - started)
        _unit_finished(key)
    if source_model is not None:  # freed before the next job step (and before the output is written)
        del source_decoder, source_model
        gc.collect()
        if model.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()
    return done


def run(job: JobSettings, cell: dict) -> None:
    """Time every unit of ``job`` for the grid ``cell``, saving each unit's records as it finishes, and write the
    speed JSON (``job.out``); a rerun with the same settings skips the units its partial file holds."""
    from transformers import AutoTokenizer

    if job.paired and job.no_teacher_forced and not job.choice_data:
        raise SystemExit("--paired needs teacher forcing or a log-likelihood task (drop --no-teacher-forced)")
    mumo, model, tokenizer, decoder = load_decoder(
        job.model,
        job.dtype,
        mumo_k=job.mumo_k,
        mumo_verify=not job.mumo_no_verify,
        seed=job.seed,
        choice_tasks=bool(job.choice_data),
    )
    source_tokenizer = AutoTokenizer.from_pretrained(job.source_tokenizer)
    items = read_items(
        tokenizer,
        lang=job.lang,
        n=job.n,
        pairs=job.pairs,
        reference_chars=job.reference_chars or None,
        sum_data=job.sum_data,
        choice_fewshot=job.choice_fewshot,
        choice_data=job.choice_data,
    )
    lengths = max_lengths(model, job.source_tokenizer) if job.choice_data else {}
    units = plan_units(
        sum_data=bool(job.sum_data), teacher_forced=not job.no_teacher_forced, choice_tasks=job.choice_data
    )
    done = time_units(job, units, items, lengths, (mumo, model, decoder, tokenizer, source_tokenizer))
    records = [r for task, phase in units for r in done[f"{task}.{phase}"]]
    details = run_details(job, items, units, model, mumo)
    if job.choice_data:
        details["choice_limits"] = choice_limit_details(job.choice_data, items, (tokenizer, source_tokenizer), lengths)
    write_json(job.out, {"cell": cell, "records": records, "details": details})
    partial_path(job.out).unlink(missing_ok=True)
    log_records(records)
