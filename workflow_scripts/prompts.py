"""The paper's prompts (``prompts.yaml``, from its Table 12 as used in its LightEval tasks), as plain string functions
(paper 002 §6.4); a language outside the paper's ten takes the prompts its config entry gives
(``languages.<code>.prompts``), and for mt, where none is given, an English instruction naming it (``MT_TEMPLATE``).

The log-likelihood tasks have no template here: their prompts are LightEval's own multilingual multiple-choice prompt
function (their modules in ``workflow_scripts/tasks/``); ``prompts.yaml`` holds only the instruction one of them puts
above its items.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from workflow_scripts.io import UserError
from workflow_scripts.languages import language

MAX_PROMPT_TOKENS = 4096  # Table 13: prompts truncated at 4,096 tokens


@cache
def prompt_table() -> dict:
    """The prompt strings of ``prompts.yaml`` (mt instructions; sum instructions and anchors), by language."""
    return yaml.safe_load((Path(__file__).with_name("prompts.yaml")).read_text(encoding="utf-8"))


# The mt instruction of a language that has no prompt of the paper and none given (languages.<code>.prompts.mt): an
# English instruction naming the language, in the paper's mt format (docs/your-study.md, "Prompts").
MT_TEMPLATE = "Translate English to {name}:"
# Where a language's prompt for a task comes from, as the results show it.
PROMPT_SOURCES = {
    "paper": "the paper's prompt",
    "config": "the config's prompt",
    "template": "English-instruction template",
}


def prompt_source(task: str, lang: str) -> str | None:
    """Where ``lang``'s ``task`` prompt comes from: ``config`` (languages.<code>.prompts), ``paper`` (prompts.yaml),
    ``template`` (mt only: MT_TEMPLATE), or None where there is none."""
    if task in language(lang).prompts:
        return "config"
    if lang in prompt_table().get(task, {}):
        return "paper"
    return "template" if task == "mt" else None


def lookup(task: str, lang: str):
    """``lang``'s prompt entry for ``task`` (``prompt_source`` says from where); an error naming the key to give where
    it has none."""
    source = prompt_source(task, lang)
    if source == "config":
        return language(lang).prompts[task]
    if source == "paper":
        return prompt_table()[task][lang]
    if source == "template":
        return MT_TEMPLATE.format(name=language(lang).name)
    raise UserError(
        f"no {task} prompt for language {lang!r}: give languages.{lang}.prompts.{task} in the config "
        f'(the paper has prompts for {sorted(prompt_table()[task])}; docs/your-study.md, "Prompts")'
    )


def mt_query(source: str, lang: str) -> str:
    """English→target translation prompt: ``"{instruction}\\n{source} ="`` (the model continues after "=")."""
    return f"{lookup('mt', lang)}\n{source} ="


def sum_query(text: str, lang: str) -> str:
    """Summarization prompt on one line: ``"{instruction} {text} {anchor}"``."""
    entry = lookup("sum", lang)
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
