"""The configured languages: their facts (name, script, FLORES code: given or inferred, workflow_scripts.languages) and
what each configured task needs of a language (a prompt, a dataset subset), checked at planning so that no job fails
on them after training."""

from __future__ import annotations

from workflow_scripts import languages
from workflow_scripts.io import UserError


def language_problems(config: dict) -> list[str]:
    """Each language's facts, made what this process knows (``languages.declare``), one line per language whose code
    or facts are unknown; then each configured task's prompt for each language."""
    problems = []
    for code, entry in config["languages"].items():
        try:
            languages.declare({code: entry})
        except UserError as e:
            problems.append(f"languages.{code}: {e}")
    if problems:
        return problems
    return prompt_problems(config)


def _data_of(task: str, lang: str) -> str | None:
    """None where ``task`` has data for ``lang`` (always for a task without a hub dataset: mt's pairs are the
    config's), else why it has none."""
    from workflow_scripts.tasks import TASKS
    from workflow_scripts.tasks.base import Unavailable

    if TASKS[task].source is None:
        return None
    try:
        TASKS[task].source(lang)
    except Unavailable as e:
        return str(e)
    return None


def prompt_problems(config: dict) -> list[str]:
    """A configured task whose prompt (``prompt`` in its spec) a language with data for it lacks (outside the paper's
    languages; mt has a template), naming the key to give."""
    from workflow_scripts import prompts
    from workflow_scripts.tasks import TASKS

    tasks = [t for t, spec in TASKS.items() if spec.prompt and t in config["evaluation"]["tasks"]]
    return [
        f"languages.{lang}.prompts.{task}: language {lang!r} ({languages.language(lang).name}) has no {task} prompt "
        f'of the paper, and evaluation.tasks has {task}; give one (docs/your-study.md, "Prompts") or remove {task} '
        "from evaluation.tasks"
        for lang in config["languages"]
        for task in tasks
        if prompts.prompt_source(task, lang) is None and _data_of(task, lang) is None
    ]


def language_notes(config: dict) -> list[str]:
    """What planning says of the languages: the facts inferred from CLDR, and the prompts that are templates."""
    from workflow_scripts import prompts
    from workflow_scripts.tasks import TASKS

    notes = []
    for code in config["languages"]:
        lang = languages.language(code)
        if lang.inferred:
            facts = ", ".join(f"{k} {getattr(lang, k)}" for k in lang.inferred)
            notes.append(
                f"languages.{code}: {facts} inferred from the code (CLDR); give languages.{code}."
                f"{{{','.join(lang.inferred)}}} where they are not what you mean"
            )
        if "mt" in config["evaluation"]["tasks"] and prompts.prompt_source("mt", code) == "template":
            notes.append(
                f"languages.{code}: mt prompts with the English-instruction template "
                f"{prompts.MT_TEMPLATE.format(name=lang.name)!r}, labelled so in the results; "
                f"languages.{code}.prompts.mt gives your own"
            )
        if not lang.is_paper:
            for task in (t for t, spec in TASKS.items() if spec.source is not None):
                why = _data_of(task, code) if task in config["evaluation"]["tasks"] else None
                if why:
                    notes.append(f'languages.{code}: no {task} data ({why}): its {task} cells are reported as "–"')
    return notes
