"""What the tasks' LightEval definitions (their modules in ``workflow_scripts/tasks/``) are given: the harness passes
this module to each (``TaskSpec.lighteval(kit, ...)``), so that the task modules never import the harness. It holds
the multiple-choice formulation (MCF), the LightEval language and translation literals of a project language, a
log-likelihood task's config (``choice_config``) and the metrics (``lighteval_metrics``)."""

from __future__ import annotations

from dataclasses import fields

from lighteval.tasks.templates.utils.formulation import MCFFormulation
from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS, TranslationLiterals
from lighteval.utils.language import Language, iso_639_3_ind_to_iso_639_3_macro

from workflow_scripts.harness import lighteval_metrics
from workflow_scripts.languages import flores_subset

__all__ = ["MCF", "choice_config", "lighteval_language", "lighteval_metrics", "literals_language"]

# The reference's formulation (docs/evaluation.md "Multiple choice"): lettered options, the answer scored as the letter.
MCF = MCFFormulation()


def lighteval_language(lang: str) -> Language:
    """LightEval's ``Language`` of a project language, mapped as LightEval's Belebele tasks map their subset: the
    FLORES code's individual ISO 639-3 code, as its macrolanguage where it has one (arb -> ara, swh -> swa)."""
    code = flores_subset(lang).split("_")[0]
    return iso_639_3_ind_to_iso_639_3_macro.get(code) or Language(code)


def _literal(literals: TranslationLiterals, name: str):
    return object.__getattribute__(literals, name)  # its __getattribute__ raises on a missing literal


def literals_language(language: Language) -> Language:
    """The language whose ``TRANSLATION_LITERALS`` the MCF prompt takes: ``language`` itself, or English where
    LightEval 0.13.0 lacks the words for "question" and "answer" (Sinhala, Burmese: its own prompt function then
    raises AttributeError). English is chosen only where every literal the language does have (punctuation, spaces,
    option letters) equals English's, so only the two missing words change (docs/evaluation.md, "Multiple choice")."""
    own = TRANSLATION_LITERALS.get(language)
    if own is None:
        raise ValueError(f"LightEval has no translation literals for {language}")
    if _literal(own, "question_word") is not None and _literal(own, "answer") is not None:
        return language
    english = TRANSLATION_LITERALS[Language.ENGLISH]
    differing = [
        f.name
        for f in fields(TranslationLiterals)
        if f.name != "language"
        and _literal(own, f.name) is not None
        and _literal(own, f.name) != _literal(english, f.name)
    ]
    if differing:
        raise ValueError(
            f"LightEval lacks the MCF words of {language}, and its other literals {differing} differ from English's: "
            "no faithful stand-in (docs/evaluation.md)"
        )
    return Language.ENGLISH


def choice_config(name: str, folder, data, prompt_function, **extra):
    """A log-likelihood task's LightEval config: ``data`` (a ``tasks.base.Source``) read from ``folder``, one token
    generated, accuracy."""
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    return LightevalTaskConfig(
        name=name,
        hf_repo=str(folder),
        hf_avail_splits=["train", "dev", "test"],
        prompt_function=prompt_function,
        hf_subset=data.subset,
        evaluation_splits=[data.split],
        few_shots_split=data.fewshot_split or data.split,  # Belebele has only test
        metrics=lighteval_metrics.accuracy_metrics(),
        generation_size=1,
        **extra,
    )
