"""The paper's prompts (``prompts.yaml``, from its Table 12 as used in its LightEval tasks), as plain string functions
(paper 002 §6.4).

mc and gmmlu have no template here: their prompts are LightEval's own multilingual multiple-choice prompt function
(``harness/tasks.py``); ``prompts.yaml`` holds only Global-MMLU's instruction naming the subject.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

MAX_PROMPT_TOKENS = 4096  # Table 13: prompts truncated at 4,096 tokens


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


def truncate_article(text: str, tokenizer, max_tokens: int) -> str:
    """The article's first ``max_tokens`` tokens of ``tokenizer`` (the evaluated model's), so that the whole prompt
    with its instruction and anchor stays within the paper's 4,096 tokens; unchanged without a tokenizer."""
    if tokenizer is None:
        return text
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return text if len(ids) <= max_tokens else tokenizer.decode(ids[:max_tokens])


def sum_prompt(article: str, lang: str, tokenizer=None) -> str:
    """The sum prompt the harness evaluates and the speed step times: the article cut so that the whole prompt
    (instruction, article, anchor; special tokens included) is at most ``MAX_PROMPT_TOKENS`` of ``tokenizer``.

    The room the instruction and anchor take is measured, not assumed: in a byte-level English vocabulary the Thai
    instruction and anchor alone take more than 64 tokens."""
    if tokenizer is None:
        return sum_query(article, lang)
    budget = MAX_PROMPT_TOKENS - len(tokenizer(sum_query("", lang))["input_ids"])
    while True:  # joining the cut article with the anchor can re-merge a token or two: cut again by the excess
        prompt = sum_query(truncate_article(article, tokenizer, budget), lang)
        excess = len(tokenizer(prompt)["input_ids"]) - MAX_PROMPT_TOKENS
        if excess <= 0 or budget <= 0:
            return prompt
        budget -= excess


def gmmlu_instruction(subject: str, lang: str) -> str:
    """Global-MMLU's instruction naming the MMLU subject (``_`` shown as a space) in ``lang``."""
    return _lookup("gmmlu", lang).format(subject=subject.replace("_", " "))
