"""The scores of the paper's evaluation (paper 002 §6.5), as plain functions of strings and numbers.

- chrF (mt): sacrebleu's sentence chrF per item, averaged (the paper's number), and corpus chrF as an extra.
- ROUGE-L F1 (sum): ``rouge-score``'s LCS F-measure on a segmentation given as a tokenizer object, because the
  library's own tokenizer lowercases and deletes everything outside [a-z0-9] (Thai or Sinhala text becomes empty and
  scores 0). Two segmentations, each under its own metric name so that no table mixes them (``ROUGE_METRICS``):
  ``rougeL_mt5``, the paper's (§6.6: "we split sentences with an mT5 tokenizer as preprocessing ... and subsequently
  call rouge_scorer"): the pieces of mT5's SentencePiece model (``spiece.model``, one for every mT5 size), and
  ``rougeL_script``, where that model cannot be had: words where a script separates words with spaces, grapheme
  clusters where it does not (Thai, Lao, Burmese, Khmer, Chinese, Japanese kana). Script numbers are not the paper's.
  A third, ``rougeL_reference``, is the computation of the paper's reference code: mT5's pieces joined by spaces and
  scored by rouge-score's default tokenizer with its stemmer, which deletes every character outside [a-z0-9] again;
  it scores Thai, Sinhala, ... 0, so the workflow allows it for Latin-script languages only (docs/evaluation.md).
- Log-likelihood accuracy (the multiple-choice tasks): the choice with the highest log-likelihood is the answer, raw
  (token-normalized = mean over the choice's tokens) and character-normalized (sum / characters of the choice). Ties go
  to the first tied choice (``numpy.argmax``, as LightEval does): a tie counts as correct only when the gold choice
  comes first.

The LightEval wrappers of these functions are in ``lighteval_metrics`` (LightEval is imported only there).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import regex

from workflow_scripts.sum_assets import PIECE_SEGMENTATIONS

# Scripts written without spaces between words: segmented into grapheme clusters.
_UNSPACED = r"\p{Thai}\p{Lao}\p{Myanmar}\p{Khmer}\p{Han}\p{Hiragana}\p{Katakana}"
_TOKEN = regex.compile(rf"\X(?<=[{_UNSPACED}]\p{{M}}*)|[^\s\p{{P}}\p{{S}}{_UNSPACED}]+")


def segment(text: str) -> list[str]:
    """Script-aware ROUGE tokens: lowercased words of spaced scripts, grapheme clusters of unspaced ones.

    Punctuation and symbols are dropped (as rouge-score's tokenizer drops them); combining marks stay with their base.
    """
    return [m.group(0) for m in _TOKEN.finditer(text.lower())]


class ScriptTokenizer:
    """A ``rouge_score`` tokenizer object (``tokenize(text) -> list[str]``) using ``segment``."""

    def tokenize(self, text: str) -> list[str]:
        return segment(text)


class PieceTokenizer:
    """A ``rouge_score`` tokenizer object returning the pieces of a SentencePiece model (mT5's ``spiece.model``).

    Pieces are kept as the model prints them (with "▁" marking a word start), as the paper's preprocessing handed
    them to rouge_scorer; the model is loaded on first use, so the object pickles (LightEval's metrics)."""

    def __init__(self, model_file: str | Path):
        self.model_file = str(model_file)
        if not Path(self.model_file).is_file():
            raise FileNotFoundError(f"SentencePiece model {self.model_file} not found (evaluation.sum.mt5_spiece)")
        self._sp = None

    def __getstate__(self) -> dict:
        return {"model_file": self.model_file, "_sp": None}

    def tokenize(self, text: str) -> list[str]:
        if self._sp is None:
            import sentencepiece

            self._sp = sentencepiece.SentencePieceProcessor(model_file=self.model_file)
        return self._sp.encode(text, out_type=str)


class ReferenceTokenizer:
    """The tokens of the paper's reference code: the text's mT5 pieces joined by spaces, then rouge-score's default
    tokenizer with its Porter stemmer (``RougeScorer(["rougeL"], use_stemmer=True)`` on the joined pieces).

    That tokenizer lowercases, turns every character outside [a-z0-9] into a space and stems words longer than three
    letters, so "▁" and every non-ASCII letter vanish: Thai or Sinhala text leaves no token and scores 0, German
    loses its umlauts ("▁für" becomes "f", "r")."""

    def __init__(self, model_file: str | Path):
        self.pieces = PieceTokenizer(model_file)
        self._default = None

    def __getstate__(self) -> dict:
        return {"pieces": self.pieces, "_default": None}

    def tokenize(self, text: str) -> list[str]:
        if self._default is None:
            from rouge_score.tokenizers import DefaultTokenizer

            self._default = DefaultTokenizer(use_stemmer=True)
        return self._default.tokenize(" ".join(self.pieces.tokenize(text)))


# metric name of each segmentation (config key evaluation.sum.rouge_tokenizer)
ROUGE_METRICS = {"mt5": "rougeL_mt5", "script": "rougeL_script", "reference": "rougeL_reference"}
RougeTokenizer = ScriptTokenizer | PieceTokenizer | ReferenceTokenizer


def rouge_tokenizer(kind: str = "script", model_file: str | Path | None = None) -> RougeTokenizer:
    """The tokenizer object of a segmentation: ``script``, or ``mt5`` / ``reference`` with mT5's ``spiece.model``."""
    if kind == "script":
        return ScriptTokenizer()
    if kind in PIECE_SEGMENTATIONS:
        if not model_file:
            raise ValueError(f"ROUGE-L {kind} needs mT5's spiece.model (evaluation.sum.mt5_spiece)")
        return PieceTokenizer(model_file) if kind == "mt5" else ReferenceTokenizer(model_file)
    raise ValueError(
        f"unknown ROUGE-L segmentation {kind!r} (evaluation.sum.rouge_tokenizer: {', '.join(ROUGE_METRICS)})"
    )


def rouge_l(prediction: str, reference: str, tokenizer: RougeTokenizer | None = None) -> float:
    """ROUGE-L F1 (0-100) of one summary against its reference, on ``tokenizer``'s tokens (default: ``segment``)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer or ScriptTokenizer())
    return 100.0 * scorer.score(reference, prediction)["rougeL"].fmeasure


def sentence_chrf(hypothesis: str, reference: str) -> float:
    """sacrebleu's sentence chrF (character 6-grams, beta 2) of one hypothesis."""
    from sacrebleu.metrics import CHRF

    return CHRF().sentence_score(hypothesis, [reference]).score


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu's corpus chrF over all items (statistics summed before the F-score)."""
    from sacrebleu.metrics import CHRF

    return CHRF().corpus_score(list(hypotheses), [list(references)]).score


def first_argmax(values: Sequence[float]) -> int:
    """Index of the largest value; the first one on ties (``numpy.argmax``'s rule)."""
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def choice_accuracy(logprobs: Sequence[float], gold: int, lengths: Sequence[int] | None = None) -> int:
    """1 if the gold choice has the highest (length-normalized when ``lengths`` is given) log-likelihood, else 0."""
    if lengths is not None:
        if any(n <= 0 for n in lengths):
            raise ValueError(f"choice lengths must be positive, got {list(lengths)}")
        logprobs = [lp / n for lp, n in zip(logprobs, lengths, strict=True)]
    return int(first_argmax(logprobs) == gold)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; an empty sequence is an error (a task without items has no score)."""
    if not values:
        raise ValueError("no items to average")
    return sum(values) / len(values)
