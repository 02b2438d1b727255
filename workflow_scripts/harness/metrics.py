"""The scores of the paper's evaluation (paper 002 §6.5), as plain functions of strings and numbers.

- chrF (mt): sacrebleu's sentence chrF per item, averaged (the paper's number), and corpus chrF as an extra.
- ROUGE-L F1 (sum): ``rouge-score``'s LCS F-measure on a script-aware segmentation (``segment``). The library's own
  tokenizer lowercases and deletes everything outside [a-z0-9], so Thai or Sinhala text becomes empty and scores 0.
  The paper split text into mT5 SentencePiece pieces; that model is not available offline, so we segment into words
  where a script separates words with spaces and into grapheme clusters where it does not (Thai, Lao, Burmese, Khmer,
  Chinese, Japanese kana). Absolute ROUGE-L therefore differs from the paper's; comparisons between methods hold.
- Log-likelihood accuracy (mc, gmmlu): the choice with the highest log-likelihood is the answer, raw (token-normalized
  = mean over the choice's tokens) and character-normalized (sum / characters of the choice). Ties go to the first
  tied choice (``numpy.argmax``, as LightEval does): a tie counts as correct only when the gold choice comes first.

The LightEval wrappers of these functions are in ``lighteval_metrics`` (LightEval is imported only there).
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

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


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F1 (0-100) of one summary against its reference, on ``segment`` tokens."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=ScriptTokenizer())
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
