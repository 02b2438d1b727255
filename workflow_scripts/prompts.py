"""The paper's prompts (``prompts.yaml``, from its Table 12 as used in its LightEval tasks) and the multiple-choice
template, as plain string functions (paper 002 §6.4).

mc and gmmlu use LightEval's multiple-choice "MCF" formulation (lettered options, the answer scored as the letter);
we write the template ourselves with English keywords for every language, since LightEval's own template lacks the
translation literals of Sinhala and Burmese (PITFALLS).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

LETTERS = "ABCD"


@cache
def prompt_table() -> dict:
    """The prompt strings of ``prompts.yaml`` (mt instructions; sum instructions and anchors), by language."""
    return yaml.safe_load((Path(__file__).with_name("prompts.yaml")).read_text(encoding="utf-8"))


def _lookup(task: str, lang: str):
    table = prompt_table()[task]
    if lang not in table:
        raise ValueError(f"no {task} prompt for language {lang!r}; prompts.yaml has {sorted(table)}")
    return table[lang]


def mt_query(source: str, lang: str) -> str:
    """English→target translation prompt: ``"{instruction}\\n{source} ="`` (the model continues after "=")."""
    return f"{_lookup('mt', lang)}\n{source} ="


def sum_query(text: str, lang: str) -> str:
    """Summarization prompt on one line: ``"{instruction} {text} {anchor}"``."""
    entry = _lookup("sum", lang)
    return f"{entry['instruction']} {' '.join(text.split())} {entry['anchor']}"


def mcf_query(question: str, options: list[str], passage: str | None = None) -> str:
    """Lettered multiple-choice prompt ending in "Answer:"; the choices scored are " A" ... " D"."""
    lines = [passage.strip()] if passage else []
    lines.append(f"Question: {question.strip()}")
    lines += [f"{LETTERS[i]}. {option.strip()}" for i, option in enumerate(options)]
    lines.append("Answer:")
    return "\n".join(lines)


def mcf_choices(n: int) -> list[str]:
    """The scored continuations: a space and the letter (the space belongs to the answer token)."""
    return [f" {LETTERS[i]}" for i in range(n)]
