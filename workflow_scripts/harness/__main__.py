"""Command line of one evaluation job: one task of the paper on one cell's model, through LightEval (paper 002 §6.4).

    python -m workflow_scripts.harness --task mt --lang th --model DIR --pairs mt.tsv --cell JSON --out mt.json
    python -m workflow_scripts.harness --task mc --lang th --model DIR --data FOLDER --fewshot 3 ...

Generation tasks run ``--runs`` times with seeds ``--seed``, ``--seed + 1``, ...; every record carries its run and seed.
A task without data for the language (Global-MMLU has no Burmese or Thai) writes no records and the reason. Prompt and
continuation fit the model's own maximum length (its config's, as LightEval reads it); the result's details record that
``max_length`` and how many prompts LightEval cut to fit it (``run.prompt_limits``).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from workflow_scripts.harness.datasets import Unavailable, pairs_dataset, task_source
from workflow_scripts.io import set_threads, setup_logging, write_json, write_text
from workflow_scripts.languages import language_arg
from workflow_scripts.tasks import LIGHTEVAL_TASKS, TASKS

log = logging.getLogger("vocabexp")
# the tasks LightEval runs here that generate text
GENERATIVE = {name for name in LIGHTEVAL_TASKS if not TASKS[name].choice}


def record_task(task: str, lang: str) -> str:
    """The task name results carry: an English run is a retention check (Table 9; tasks ``<task>_en``), recorded
    under its own name so that it never mixes with the same cell's target-language results."""
    return f"{task}_en" if lang == "en" else task


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from workflow_scripts.inference import add_common_args

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--task", required=True, choices=LIGHTEVAL_TASKS)
    p.add_argument(
        "--lang", required=True, type=language_arg, help="language code (en for the English retention checks)"
    )
    p.add_argument("--pairs", help="mt: English<TAB>target test pairs")
    p.add_argument("--data", help="a task with a hub dataset: its folder in the hub layout")
    p.add_argument(
        "--fewshot",
        type=int,
        default=None,
        help="default: the paper's ("
        + ", ".join(f"{t} {TASKS[t].fewshot}" for t in LIGHTEVAL_TASKS if TASKS[t].fewshot)
        + ", else 0)",
    )
    p.add_argument("--runs", type=int, default=1, help="generation tasks: runs with seeds seed, seed+1, ...")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--decoding", default="greedy", choices=["greedy", "paper"])
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="prompt + continuation tokens; default: the model's own maximum (its config's "
        "max_position_embeddings, as LightEval reads it)",
    )
    p.add_argument("--predictions", help="mt, sum: TSV of run, source id, reference, hypothesis")
    p.add_argument(
        "--chat-template",
        action="store_true",
        help="wrap each prompt (few-shot examples as earlier turns) in the model's chat template, as LightEval's "
        "--use-chat-template; the workflow passes it for ElChat cells (Table 10: evaluated as the chat model they "
        "are); the base models' cells take plain text",
    )
    p.add_argument("--mumo-no-verify", dest="mumo_verify", action="store_false", help="MuMo: skip verification")
    p.add_argument("--mumo-k", type=int, default=10, help="MuMo: candidates per decoding step")
    p.add_argument(
        "--rouge-tokenizer", default="script", choices=["mt5", "script", "reference"], help="sum: ROUGE-L segmentation"
    )
    p.add_argument("--mt5-spiece", help="sum with --rouge-tokenizer mt5 or reference: mT5's spiece.model")
    return p.parse_args(argv)


def _load(a: argparse.Namespace):
    """The model and the folder its tokenizer comes from. A MuMo folder (workflow_scripts/mumo) is its source model
    with the MuMo decoder behind ``generate`` (greedy: deterministic; paper: MuMo's sampling; ``--mumo-no-verify``:
    the ablation), so LightEval's prompt, stop sequences and metric are the same as for every other method."""
    from workflow_scripts.inference import load_model
    from workflow_scripts.mumo.head import is_mumo_dir

    if not is_mumo_dir(a.model):
        return load_model(a.model, a.dtype)[0], a.model
    if a.task not in GENERATIVE:
        raise SystemExit(f"{a.model}: a MuMo model generates; task {a.task!r} scores log-likelihoods (not applicable)")
    from workflow_scripts.mumo.decode import DecodeSettings, MuMoGenerator
    from workflow_scripts.mumo.head import load_mumo, source_model_of

    mumo, tokenizer = load_mumo(a.model, a.dtype)
    settings = DecodeSettings(k=a.mumo_k, verify=a.mumo_verify, sample=a.decoding == "paper", seed=a.seed)
    return MuMoGenerator(mumo, tokenizer, settings), str(source_model_of(a.model))


def evaluate(a: argparse.Namespace, folder: Path) -> tuple[list[dict], dict, list[str]]:
    """Run the task: records (one per metric and run), details, and prediction rows."""
    from workflow_scripts.harness.run import run_task
    from workflow_scripts.harness.tasks import task_configs

    if a.task == "sum":  # before the model loads: a missing spiece.model fails at once
        from workflow_scripts.harness.lighteval_metrics import set_rouge_tokenizer

        set_rouge_tokenizer(a.rouge_tokenizer, a.mt5_spiece)
    model, model_dir = _load(a)
    configs = task_configs(a.task, a.lang, folder, generation_size=a.max_new_tokens, tokenizer_dir=model_dir)
    for config in configs:
        config.num_fewshots = TASKS[a.task].fewshot if a.fewshot is None else a.fewshot
    runs = a.runs if a.task in GENERATIVE else 1
    grouped = TASKS[a.task].group is not None
    records, seconds, rows = [], [], ["run\tid\treference\thypothesis"]
    for run in range(runs):
        seed = a.seed + run
        result = run_task(
            model,
            model_dir,
            configs if grouped else config,  # a grouped task: its member tasks in one pipeline
            n=a.n,
            decoding=a.decoding,
            seed=seed,
            batch_size=a.batch_size,
            max_length=a.max_length,
            chat_template=a.chat_template,
        )
        records += [
            {"task": record_task(a.task, a.lang), "metric": m, "value": v, "run": run, "seed": seed}
            for m, v in result.scores.items()
        ]
        seconds.append(round(result.seconds, 2))
        for d in result.details:
            if a.task in GENERATIVE:
                hyp = d.model_response.final_text[0].split("\n", 1)[0].strip()
                item = (d.doc.specific or {}).get("item_id", d.doc.id)  # the dataset's id where it has one
                fields = (str(run), str(item), d.doc.get_golds()[0], hyp)
                rows.append("\t".join(x.replace("\t", " ").replace("\n", " ") for x in fields))
        log.info("%s run %d (seed %d): %s", a.task, run, seed, result.scores)
    from workflow_scripts.inference import items_used

    # a grouped task: n is per member, n_items their sum
    used = {} if grouped else items_used(a.task, a.n, len(result.details), a.pairs or a.data)
    details = {
        "n_items": len(result.details),
        **used,
        "fewshot": config.num_fewshots,
        "runs": runs,
        "decoding": a.decoding,
        "seeds": [a.seed + r for r in range(runs)],
        "seconds_per_run": seconds,
        "chat_template": a.chat_template,
        "harness": "lighteval 0.13.0",
        **result.limits,  # max_length and how many prompts exceeded it (run.prompt_limits; the same every run)
    }
    if result.limits.get("prompts_truncated") or result.limits.get("generations_shortened"):
        log.warning("%s %s: prompts over the model's maximum length: %s", a.task, a.lang, result.limits)
    # a grouped task: acc* = LightEval's mean over its members (MMLU's subjects), acc*_items the mean over items; each
    # member's scores under its name after the ":"
    if result.groups:
        details["subjects"] = {name.split(":", 1)[1]: scores for name, scores in result.groups.items()}
    return records, details, rows


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    from workflow_scripts.inference import read_cell

    cell = read_cell(a.cell)
    t0 = time.time()
    details: dict = {"model_dir": str(a.model), "language": a.lang, "task": record_task(a.task, a.lang)}
    try:
        if a.task != "mt":
            source = task_source(a.task, a.lang)  # raises Unavailable before any model is loaded
            if not a.data:
                raise Unavailable(f"no data folder (evaluation.datasets.{source.dataset} is not set; README)")
        with tempfile.TemporaryDirectory(prefix="vocabexp-mt-") as tmp:
            if a.task == "mt":
                if not a.pairs:
                    raise SystemExit("--pairs is required for mt")
                folder = pairs_dataset(Path(a.pairs), a.lang, Path(tmp) / "pairs")
                details["pairs_file"] = str(a.pairs)
            else:
                folder = Path(a.data)
                details["data"] = str(a.data)
            records, run_details, rows = evaluate(a, folder)
        details.update(run_details)
        if a.predictions:
            write_text(a.predictions, "\n".join(rows) + "\n")
    except Unavailable as e:
        records = []
        details["unavailable"] = str(e)
        log.warning("%s %s: %s", a.task, a.lang, e)
        if a.predictions:
            write_text(a.predictions, "run\tid\treference\thypothesis\n")
    details["seconds"] = round(time.time() - t0, 2)
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": records, "details": details})


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
