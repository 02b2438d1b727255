"""LightEval metrics of the paper's tasks, defined in an importable module so that they pickle (a metric class in
a custom-task file does not; LightEval's built-in chrF scores only the first sample, upstream issue 1112).

Each metric wraps a plain function of ``metrics``. Importing this module imports LightEval (about 15 s, and it turns
off torch gradients process-wide): only the evaluation jobs import it.
"""

from __future__ import annotations

import numpy as np
from lighteval.metrics.metrics_corpus import CorpusLevelComputation
from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import CorpusLevelMetric, SampleLevelMetric
from lighteval.tasks.requests import SamplingMethod

from workflow_scripts.harness import metrics


def _prediction(model_response) -> str:
    """The generated text, cut at the first newline (the tasks stop there) and stripped."""
    return model_response.final_text[0].split("\n", 1)[0].strip()


class SentenceChrF(SampleLevelComputation):
    """sacrebleu sentence chrF of one generation against the doc's reference."""

    def compute(self, doc, model_response, **kwargs) -> float:
        return metrics.sentence_chrf(_prediction(model_response), doc.get_golds()[0])


class ChrFPair(SampleLevelComputation):
    """(hypothesis, reference) of one item, for corpus chrF."""

    def compute(self, doc, model_response, **kwargs) -> tuple[str, str]:
        return _prediction(model_response), doc.get_golds()[0]


class CorpusChrF(CorpusLevelComputation):
    """Corpus chrF over the (hypothesis, reference) pairs of all items."""

    def compute_corpus(self, items) -> float:
        return metrics.corpus_chrf([h for h, _ in items], [r for _, r in items])


class RougeL(SampleLevelComputation):
    """ROUGE-L F1 (0-100) on one segmentation (``metrics.rouge_tokenizer``: mT5 pieces, script-aware, or the
    reference code's)."""

    def __init__(self, kind: str = "script", model_file: str | None = None):
        self.tokenizer = metrics.rouge_tokenizer(kind, model_file)

    def compute(self, doc, model_response, **kwargs) -> float:
        return metrics.rouge_l(_prediction(model_response), doc.get_golds()[0], self.tokenizer)


# The segmentation of the process's sum tasks (set by the harness's command line before the tasks are built).
_ROUGE = {"kind": "script", "model_file": None}


def set_rouge_tokenizer(kind: str, model_file: str | None = None) -> None:
    """Choose the ROUGE-L segmentation (``mt5`` or ``reference`` with mT5's spiece.model, or ``script``) of later
    ``rouge_metrics``; checked here, so a missing model file fails before any model is loaded."""
    metrics.rouge_tokenizer(kind, model_file)
    _ROUGE.update(kind=kind, model_file=model_file)


class ChoiceAccuracy(SampleLevelComputation):
    """Log-likelihood accuracy: ``norm`` None (raw sum), "token" (per choice token) or "char" (per choice character)."""

    def __init__(self, norm: str | None = None):
        self.norm = norm

    def compute(self, doc, model_response, **kwargs) -> int:
        lengths = None
        if self.norm == "token":
            lengths = [len(tokens) for tokens in model_response.output_tokens]
        elif self.norm == "char":
            lengths = [len(choice) for choice in doc.choices]
        gold = doc.gold_index if isinstance(doc.gold_index, int) else doc.gold_index[0]
        return metrics.choice_accuracy(model_response.logprobs, gold, lengths)


def chrf_metrics() -> list:
    """chrF (per-sentence mean, the paper's) and chrF_corpus for a generative task."""
    return [
        SampleLevelMetric(
            metric_name="chrF",
            sample_level_fn=SentenceChrF(),
            category=SamplingMethod.GENERATIVE,
            corpus_level_fn=np.mean,
            higher_is_better=True,
        ),
        CorpusLevelMetric(
            metric_name="chrF_corpus",
            sample_level_fn=ChrFPair(),
            category=SamplingMethod.GENERATIVE,
            corpus_level_fn=CorpusChrF(),
            higher_is_better=True,
        ),
    ]


def rouge_metrics(kind: str | None = None, model_file: str | None = None) -> list:
    """ROUGE-L F1, averaged over items, named by its segmentation (``metrics.ROUGE_METRICS``); without
    arguments the one ``set_rouge_tokenizer`` chose."""
    if kind is None:
        kind, model_file = _ROUGE["kind"], _ROUGE["model_file"]
    return [
        SampleLevelMetric(
            metric_name=metrics.ROUGE_METRICS[kind],
            sample_level_fn=RougeL(kind, model_file),
            category=SamplingMethod.GENERATIVE,
            corpus_level_fn=np.mean,
            higher_is_better=True,
        )
    ]


def accuracy_metrics() -> list:
    """Accuracy raw, token-normalized and character-normalized (log-likelihood multiple choice)."""
    return [
        SampleLevelMetric(
            metric_name=name,
            sample_level_fn=ChoiceAccuracy(norm),
            category=SamplingMethod.LOGPROBS,
            corpus_level_fn=np.mean,
            higher_is_better=True,
        )
        for name, norm in (("acc", None), ("acc_token", "token"), ("acc_char", "char"))
    ]
