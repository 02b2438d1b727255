"""Run the paper's tasks through LightEval's Python API on a loaded model (paper 002 §6.4; Table 13 b).

The model is loaded once by the caller and handed to every pipeline (one per task and run). LightEval's sample cache is
off (it keys outputs by the model config, not the weights, so a retrained model would get stale scores) and its
registry holds only our tasks (its built-in registry downloads a file at import and fails offline).
Generation tasks under the paper's sampling are run once per seed; greedy decoding gives the same output every run.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("vocabexp")

# Table 13 (b): beam sampling; "greedy" for cheap runs.
SAMPLING = {
    "paper": {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.1, "early_stopping": True},
    "greedy": {"temperature": 0.0},
}
NUM_BEAMS = {"paper": 5, "greedy": 1}


@contextlib.contextmanager
def private_datasets_cache(folder: str | Path) -> Iterator[None]:
    """``datasets``' cache redirected to ``folder`` for the duration of the block.

    Our task data are local folders (``datasets.pairs_dataset``, the mc proxy, mirrored hub data), and ``datasets``
    keys the cache of a local folder by its name and subset, not by its content: a second pairs folder called ``pairs``
    with 32 rows was served the 3 rows cached from an earlier one (the default's Thai mt scored 3 sentences, not 32).
    A cache that lives as long as one pipeline cannot be stale.
    """
    import datasets

    before = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = Path(folder)
    try:
        yield
    finally:
        datasets.config.HF_DATASETS_CACHE = before


@contextlib.contextmanager
def only_our_tasks(configs: list) -> Iterator[None]:
    """LightEval's task registry restricted to ``configs`` for the duration of the block."""
    from lighteval.tasks.registry import Registry

    original = Registry.__dict__["load_all_task_configs"]

    def ours(custom_tasks=None, load_multilingual=False):
        return {c.name: c for c in configs}

    Registry.load_all_task_configs = staticmethod(ours)
    try:
        yield
    finally:
        Registry.load_all_task_configs = original


def set_decoding(model, decoding: str) -> None:
    """What LightEval's GenerationParameters cannot say (num_beams, do_sample) goes into the model's generation config.

    A fresh config, so that defaults stored with a checkpoint never leak into the runs.
    """
    from transformers import GenerationConfig

    if decoding not in SAMPLING:
        raise ValueError(f"unknown decoding {decoding!r}; expected one of {sorted(SAMPLING)}")
    model.generation_config = GenerationConfig(do_sample=decoding == "paper", num_beams=NUM_BEAMS[decoding])


@dataclass
class TaskRun:
    """One task's scores and per-item details from one pipeline run. A task run as a group (Global-MMLU: one LightEval
    task per subject) has its members' scores in ``groups`` and, in ``scores``, LightEval's average over them (its
    ``{task}:_average``) and each metric's mean over all items (``{metric}_items``)."""

    scores: dict[str, float]
    details: list  # LightEval DetailsLogger.Detail: doc, model_response, metric
    seconds: float
    groups: dict[str, dict[str, float]] = field(default_factory=dict)  # member task name -> its scores and n_items
    limits: dict[str, int] = field(default_factory=dict)  # max_length and the counts of ``prompt_limits``


def run_task(
    model,
    model_dir: str,
    config,
    *,
    n: int | None,
    decoding: str,
    seed: int,
    batch_size: int,
    max_length: int | None = None,
    chat_template: bool = False,
):
    """Evaluate one task (a LightevalTaskConfig, or a list of them run as one group in one pipeline) on ``model``
    (loaded from ``model_dir``) and return its ``TaskRun``.

    ``n`` items (of each member task) are drawn by LightEval's fixed shuffle (seed 42), so every method sees the same
    items.
    ``chat_template`` wraps every prompt in the tokenizer's chat template (ElChat cells, Table 10); LightEval then
    stops generation at EOS only, and the metrics still score the first line.
    ``max_length`` (prompt and continuation tokens) is the model's own maximum unless given
    (``workflow_scripts.inference.model_max_length``).
    """
    with keeping_grad_mode():
        return _run_pipeline(model, model_dir, config, n, decoding, seed, batch_size, max_length, chat_template)


@contextlib.contextmanager
def keeping_grad_mode() -> Iterator[None]:
    """LightEval's transformers backend calls torch.set_grad_enabled(False) for the whole process, at its import and
    when it wraps a model: the caller's mode is restored afterwards, so that code running later in the same process
    (a test session, a notebook) still trains."""
    import torch

    grad_enabled = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch.set_grad_enabled(grad_enabled)


def task_spec(configs: list) -> str:
    """LightEval's task string of ``configs``: ``name|fewshot`` each, comma-separated."""
    return ",".join(f"{c.name}|{c.num_fewshots}" for c in configs)


def task_docs(configs: list, max_samples: int | None = None) -> dict[str, list]:
    """Each task's documents as LightEval's Pipeline builds them before it scores (``_init_tasks_and_requests``): its
    registry copies each config with its few-shot count, its loader reads the data (the task's ``hf_filter``
    applied), and ``get_docs`` draws ``max_samples`` items (its fixed shuffle, seed 42) and attaches each item's
    few-shot examples (its sampler). Keyed by task name. The speed step times these documents' prompts
    (``speed.choices``), so that the text it times is the text the harness scores."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.registry import Registry

    with tempfile.TemporaryDirectory(prefix="vocabexp-docs-") as tmp, private_datasets_cache(tmp):
        with only_our_tasks(configs):
            tasks = Registry(tasks=task_spec(configs)).load_tasks()
        LightevalTask.load_datasets(tasks)
        return {task.name: task.get_docs(max_samples) for task in tasks.values()}


def lighteval_model_config(
    model, model_dir: str, *, batch_size: int, max_length: int | None, decoding: str, chat_template: bool, cache_dir
):
    """LightEval's model config of a run on ``model`` (loaded from ``model_dir``); ``max_length`` None is the
    model's own maximum (``workflow_scripts.inference.model_max_length``), which LightEval's backend would also read
    from the model's config, written out so that the result records it."""
    from lighteval.models.model_input import GenerationParameters

    with keeping_grad_mode():  # the backend's first import turns gradients off
        from lighteval.models.transformers.transformers_model import TransformersModelConfig

    from workflow_scripts.inference import model_max_length

    return TransformersModelConfig(
        model_name=str(model_dir),
        batch_size=batch_size,
        max_length=max_length or model_max_length(model.config),
        device=str(model.device),
        override_chat_template=chat_template,  # plain text for the paper's base models; ElChat: its template
        generation_parameters=GenerationParameters(**SAMPLING[decoding]),
        cache_dir=str(cache_dir),
    )


def prompt_limits(lighteval_model, docs: list) -> dict[str, int]:
    """What LightEval 0.13.0's transformers backend does to prompts longer than its ``max_length``, counted on the
    run's documents with its own prompt builder and tokenization (it records no such count itself):

    - ``prompts_truncated``: prompts it cut from the left (the start of the prompt, few-shot examples first, is
      dropped). A log-likelihood item is cut when its context and a choice exceed ``max_length``; a generation prompt
      when it alone does.
    - ``generations_shortened`` (generation tasks): prompts that leave fewer than the task's generation size of new
      tokens within ``max_length`` (the backend then generates at most ``max_length`` minus the batch's prompt width,
      at least 1).
    """
    from lighteval.tasks.requests import SamplingMethod

    limit = lighteval_model.max_length
    counts = {"max_length": limit, "prompts_truncated": 0}
    for doc in docs:
        context = lighteval_model.prompt_manager.prepare_prompt(doc)
        if SamplingMethod.GENERATIVE in doc.sampling_methods:
            ids = lighteval_model.tokenizer(context, add_special_tokens=lighteval_model.add_special_tokens)
            width = len(ids["input_ids"])
            counts["prompts_truncated"] += width > limit
            counts["generations_shortened"] = counts.get("generations_shortened", 0) + (
                width + (doc.generation_size or 0) > limit
            )
        else:
            ctx, continuations = lighteval_model.tok_encode_pair(context, doc.choices, pairwise=True)
            counts["prompts_truncated"] += any(len(ctx[0]) + len(c) > limit for c in continuations)
    return counts


def _run_pipeline(
    model, model_dir: str, config, n, decoding: str, seed: int, batch_size: int, max_length, chat_template: bool
):
    """LightEval's Pipeline on our task(s), cache off, with the given model object (``run_task``)."""
    import torch
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    configs = config if isinstance(config, list | tuple) else [config]
    set_decoding(model, decoding)
    with tempfile.TemporaryDirectory(prefix="vocabexp-lighteval-") as tmp:
        model_config = lighteval_model_config(
            model,
            model_dir,
            batch_size=batch_size,
            max_length=max_length,
            decoding=decoding,
            chat_template=chat_template,
            cache_dir=tmp,
        )
        tracker = EvaluationTracker(output_dir=tmp, save_details=False)
        params = PipelineParameters(launcher_type=ParallelismManager.NONE, max_samples=n)
        with private_datasets_cache(Path(tmp) / "datasets"):
            with only_our_tasks(configs):
                pipeline = Pipeline(
                    tasks=task_spec(configs),
                    pipeline_parameters=params,
                    evaluation_tracker=tracker,
                    model_config=model_config,
                    model=model,
                )
            pipeline.model._cache = None  # cache off: see module docstring
            # counted before the run: LightEval's model drops its tokenizer when it is done
            limits = prompt_limits(pipeline.model, [d for docs in pipeline.documents_dict.values() for d in docs])
            torch.manual_seed(seed)
            t0 = time.perf_counter()
            pipeline.evaluate()
            seconds = time.perf_counter() - t0
        results = pipeline.get_results()["results"]
        details = pipeline.get_details()
    if configs is config:
        return _group_run(configs, results, details, seconds, limits)
    key = next(k for k in results if k.startswith(f"{config.name}:"))
    scores = {m: float(v) for m, v in results[key].items() if not m.endswith("_stderr")}
    return TaskRun(scores=scores, details=next(iter(details.values())), seconds=seconds, limits=limits)


def _group_run(configs, results: dict, details: dict, seconds: float, limits: dict) -> TaskRun:
    """A group's TaskRun: its members' scores, LightEval's average over the members (a group of one: that member's),
    and each metric's mean over all items."""
    groups, items = {}, []
    for c in configs:  # LightEval's results name a task "name:fewshot", its details "name|fewshot"
        groups[c.name] = {m: float(v) for m, v in results[f"{c.name}:{c.num_fewshots}"].items() if "_stderr" not in m}
        groups[c.name]["n_items"] = len(details[f"{c.name}|{c.num_fewshots}"])
        items += details[f"{c.name}|{c.num_fewshots}"]
    first = configs[0]
    average = results.get(f"{first.name.split(':')[0]}:_average:{first.num_fewshots}")
    average = results[f"{first.name}:{first.num_fewshots}"] if average is None else average
    scores = {m: float(v) for m, v in average.items() if not m.endswith("_stderr")}
    for metric in list(scores):
        scores[f"{metric}_items"] = sum(float(d.metric[metric]) for d in items) / len(items)
    return TaskRun(scores=scores, details=items, seconds=seconds, groups=groups, limits=limits)
