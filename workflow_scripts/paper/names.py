"""Plain names for what figures and tables show: models, languages, tasks and metrics, speed variants and training
settings, so that no page a reader sees carries a configuration key, a metric field or a method slug."""

from __future__ import annotations

import math
import re

from workflow_scripts import languages
from workflow_scripts.corpora import STEP_WORDS
from workflow_scripts.mt_sources import STEP_WORDS as MT_STEP_WORDS
from workflow_scripts.tasks import TASKS

# Configuration keys of the models this project ships configurations for (config.yaml, configs/*.yaml).
MODEL_NAMES = {
    "llama2": "Llama2",
    "llama3": "Llama3",
    "gemma2": "Gemma2",
    "smollm2": "SmolLM2-135M",
    "tiny": "a tiny test model",
}
PAPER_MODELS = ("llama2", "llama3", "gemma2")  # the paper's 7–9B source models (config keys), in its tables' order
TASK_NAMES = {name: spec.words for name, spec in TASKS.items() if spec.words}  # workflow_scripts/tasks/
METRIC_NAMES = {
    "chrF": "chrF",
    "rougeL_mt5": "ROUGE-L",
    "rougeL_script": "ROUGE-L",
    "rougeL_reference": "ROUGE-L",
    "bleurt": "BLEURT",
    "acc": "accuracy",
    "bits_per_char": "bits per character",
    "perplexity": "perplexity",
    "paired_speedup": "paired speed-up",
    "paired_speedup_over_bound": "paired speed-up ÷ bound",
    "speedup": "T/S speed-up (unpaired)",
    "speedup_chars": "speed-up in characters (unpaired)",
    "tokens_per_second": "tokens per second",
    "items_per_second": "items per second",
}
MODES = {"teacher_forced": "teacher-forced", "generate": "generation", "loglikelihood": "log-likelihood pass"}
DECODINGS = {"greedy": "greedy", "paper": "the paper's sampling"}
PROCEDURE_WORDS = {"2x2LS": "2x2 LS", "LoRA": "LoRA", "2-stage": "2-stage", "MuMo": "MuMo"}


def model_name(model: object) -> str:
    """A model's name (SmolLM2-135M, Llama2) from its configuration key; an unknown key is shown as it is."""
    return MODEL_NAMES.get(str(model), str(model))


def language_name(lang: object) -> str:
    """A language's English name (Thai, Khmer) from its code (workflow_scripts.languages; the code where none is
    known)."""
    return languages.language_name(str(lang))


def panel_name(model: object, lang: object, multi_model: bool = True) -> str:
    """The name of a model x language panel or bar group: "SmolLM2-135M, Thai", or "Thai" where one model is shown."""
    return f"{model_name(model)}, {language_name(lang)}" if multi_model else language_name(lang)


def task_metric(task: str, metric: str) -> str:
    """ "translation chrF", "held-out text bits per character"."""
    return f"{TASK_NAMES.get(task, task)} {METRIC_NAMES.get(metric, metric)}"


def variant_name(variant: str) -> str:
    """A speed variant in words: "teacher_forced.greedy.b1" -> "teacher-forced, greedy, batch 1"; one timed in
    llama.cpp ("llama.cpp-f16.teacher_forced.greedy.b1") names the engine and its weights type first."""
    engine = ""
    if variant.startswith("llama.cpp-"):
        gguf, variant = variant.removeprefix("llama.cpp-").split(".", 1)
        engine = f"llama.cpp ({gguf}), "
    parts = variant.split(".")
    if len(parts) != 3 or not parts[2].startswith("b"):
        return engine + variant.replace("_", " ")
    mode, decoding, batch = parts
    return f"{engine}{MODES.get(mode, mode)}, {DECODINGS.get(decoding, decoding)}, batch {batch[1:]}"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) in ("", "nan", "<NA>")


def _whole(value: object) -> str:
    number = float(value)  # type: ignore[arg-type]
    return str(int(number)) if number.is_integer() else str(value)


def training_text(cell: dict) -> str:
    """A cell's training in words: "2x2 LS, clm, sequence length 128"; "" for one that was not trained."""
    parts = []
    if not _missing(cell.get("procedure")) and str(cell["procedure"]) != "none":
        parts.append(PROCEDURE_WORDS.get(str(cell["procedure"]), str(cell["procedure"])))
    if not _missing(cell.get("objective")):
        parts.append(str(cell["objective"]))
    if not _missing(cell.get("seq_len")):
        parts.append(f"sequence length {_whole(cell['seq_len'])}")
    return ", ".join(parts)


# The steps of the workflow in words (the cost table's jobs), by rule.
STEP_NAMES = {
    "lapt": "training",
    "mumo_head": "MuMo head training",
    "evaluate_cell": "evaluation",
    **{spec.rule: spec.rule_words for spec in TASKS.values()},  # each evaluation task's rule (workflow_scripts/tasks/)
    "score_bleurt": "BLEURT scoring",
    "serve_speed": "llama.cpp speed",
    "export_gguf": "GGUF export",
    "check_gguf": "GGUF check",
    "elchat": "ElChat merge",
    "prepare_source_model": "source model",
    "train_aux_tokenizer": "auxiliary tokenizer",
    "expand_tokenizer": "tokenizer expansion",
    "replace_tokenizer": "tokenizer replacement",
    "initialize": "initialization",
    "initialize_replace": "initialization (replacement)",
    "init_analysis": "initialization analysis",
    "init_analysis_cell": "initialization analysis",
    "fragmentation": "fragmentation analysis",
    **STEP_WORDS,  # the jobs of each corpus kind (workflow_scripts/corpora/)
    **MT_STEP_WORDS,  # the jobs of each MT kind (workflow_scripts/mt_sources/)
    "mc_proxy": "data: reading-comprehension proxy",
    "select_sum_items": "data: summarization items",
}


def step_name(rule: str) -> str:
    """A workflow step in words, from its rule."""
    return STEP_NAMES.get(rule, rule.replace("_", " "))


def setting_words(text: str) -> str:
    """The settings a job name carries (a method slug, "Mean.aux4000.k100") in words: "Mean, auxiliary vocabulary
    4000, 100 new tokens, 2x2 LS, clm, sequence length 128"."""
    words = {"aux": "auxiliary vocabulary {}", "k": "{} new tokens", "L": "sequence length {}", "replace": "replaced"}
    out = []
    for part in text.split("."):
        match = re.fullmatch(r"(aux|k|L)(\d+)", part)
        out.append(words[match[1]].format(match[2]) if match else PROCEDURE_WORDS.get(part, part))
    return ", ".join(out)
