"""Vocabulary-independent units, the token-count bound, new-token shares and repeat statistics (paper 002 §6.5, Fig. 4).

A rate in each model's own tokens cannot show the speed-up of an expanded vocabulary (it emits fewer, longer tokens at
about the same rate); characters per second and source-tokenizer tokens per second (the same text re-tokenized with the
SOURCE model's tokenizer) can. The bound of the speed-up is the token-count ratio on the same text: source tokens ÷
model tokens. A model that spends the same time per step can at best be that much faster.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class TextCounts:
    """What one pass over some items produced, in each unit: characters, model tokens, source-tokenizer tokens."""

    chars: int
    tokens: int
    source_tokens: int

    def __add__(self, other: TextCounts) -> TextCounts:
        return TextCounts(
            self.chars + other.chars, self.tokens + other.tokens, self.source_tokens + other.source_tokens
        )


def count_text(text: str, tokens: int, source_tokenizer) -> TextCounts:
    """Counts of one piece of text that a model produced (or was fed) as ``tokens`` of its own vocabulary."""
    return TextCounts(len(text), tokens, len(source_tokenizer(text, add_special_tokens=False)["input_ids"]))


UNITS = {"chars_per_second": "chars", "source_tokens_per_second": "source_tokens", "tokens_per_second": "tokens"}


def rates(counts: TextCounts, seconds: float) -> dict[str, float]:
    """Characters, source-tokenizer tokens and own tokens per second."""
    if seconds <= 0:
        raise ValueError(f"timed {seconds} s: nothing was timed")
    return {metric: getattr(counts, field) / seconds for metric, field in UNITS.items()}


def bound(counts: TextCounts) -> float:
    """The token-count bound of the speed-up on this text: source-tokenizer tokens ÷ model tokens."""
    if counts.tokens == 0:
        raise ValueError("no model tokens: the bound is undefined")
    return counts.source_tokens / counts.tokens


def new_token_share(ids: list[list[int]], source_vocab_size: int) -> float:
    """Share of ids that are new tokens (id >= the source vocabulary size), over all rows (paper Figure 4)."""
    flat = [i for row in ids for i in row]
    return sum(i >= source_vocab_size for i in flat) / len(flat) if flat else 0.0


def summary(repeats: list[float]) -> dict[str, float]:
    """Median and spread (min, max) of the repeats of one measurement."""
    if not repeats:
        raise ValueError("no repeats")
    return {"value": statistics.median(repeats), "min": min(repeats), "max": max(repeats)}


def ratio_range(model: dict[str, float], source: dict[str, float]) -> tuple[float, float, float]:
    """A speed-up with its spread: (median ÷ median, min ÷ Source's max, max ÷ Source's min).

    Both sides' worst and best repeats bound the range, so a speed-up whose range includes 1 may be noise.
    """
    return model["value"] / source["value"], model["min"] / source["max"], model["max"] / source["min"]
