"""mc and gmmlu through LightEval's own multilingual multiple-choice prompt function (paper 002 §6.4; docs/evaluation.md
"Multiple choice"): the prompts equal LightEval's, Global-MMLU runs by subject with LightEval's row filter and average,
and English MMLU runs in the prompt of LightEval's leaderboard MMLU tasks. Importing LightEval takes about 15 s:
every test here needs it."""

from __future__ import annotations

import json
from string import ascii_uppercase

import pytest
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function
from lighteval.tasks.templates.utils.formulation import MCFFormulation
from lighteval.utils.language import Language

from tests.conftest import l10n_pairs
from workflow_scripts.harness import datasets
from workflow_scripts.tasks import gmmlu, mc

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)

tasks = prompting = None  # workflow_scripts.harness.tasks and .prompting, bound by _import_tasks


@pytest.fixture(scope="module", autouse=True)
def _import_tasks():
    """Import the harness module (LightEval's metrics: about 6 s of CPU) when these tests run, not in every xdist
    worker that only collects this file."""
    global tasks, prompting
    from workflow_scripts.harness import prompting, tasks


def belebele_row(lang: str) -> dict:
    """One item in Belebele's layout from real l10n pairs of ``lang`` (the default's proxy builds its items so)."""
    return datasets.proxy_items(l10n_pairs(lang)[100:130], 1, seed=1)[0]


def lighteval_belebele_prompt(language: Language):
    """LightEval's own Belebele prompt function (lighteval/tasks/multilingual/tasks/belebele.py, MCF), rebuilt here
    because that module imports ``langcodes`` at import time."""
    return get_mcq_prompt_function(
        language,
        lambda line: {
            "question": line["question"],
            "context": line["flores_passage"],
            "choices": [line[f"mc_answer{i}"] for i in range(1, 5)],
            "gold_idx": int(line["correct_answer_num"]) - 1,
        },
        formulation=MCFFormulation(),
    )


def same_doc(ours, theirs) -> None:
    assert ours.query == theirs.query
    assert ours.choices == theirs.choices
    assert ours.gold_index == theirs.gold_index
    assert ours.instruction == theirs.instruction


@pytest.mark.parametrize(("lang", "language"), [("th", Language.THAI), ("de", Language.GERMAN)])
def test_mc_prompt_is_lighteval_own(lang, language, tmp_path):
    row = belebele_row(lang if lang != "de" else "th")
    ours = tasks.task_config("mc", lang, tmp_path).prompt_function(row, "mc")
    same_doc(ours, lighteval_belebele_prompt(language)(row, "mc"))
    words = {"th": ("คำถาม:", "คำตอบ:"), "de": ("Frage:", "Antwort:")}[lang]
    assert f"\n{words[0]} " in ours.query and ours.query.endswith(f"\n{words[1]}")
    assert ours.choices == [" A", " B", " C", " D"]


def test_mc_thai_prompt_text():
    row = {
        "flores_passage": "The cat sat on the mat.",
        "question": "Which sentence is the translation of the passage?",
        **{f"mc_answer{i}": a for i, a in enumerate(["แมวนั่งบนเสื่อ", "หมากิน", "ปลาว่าย", "นกบิน"], 1)},
        "correct_answer_num": "1",
    }
    doc = mc.mc_prompt_function(prompting, "th")(row, "mc_th")
    assert doc.query == (
        "The cat sat on the mat.\nคำถาม: Which sentence is the translation of the passage?\n"
        " A. แมวนั่งบนเสื่อ\n B. หมากิน\n C. ปลาว่าย\n D. นกบิน\nคำตอบ:"
    )
    assert doc.gold_index == [0]


@pytest.mark.parametrize(("lang", "language"), [("si", Language.SINHALA), ("my", Language.BURMESE)])
def test_mc_without_lighteval_words_takes_english_words_only(lang, language, tmp_path):
    """LightEval 0.13.0 has no "question"/"answer" for Sinhala and Burmese: its own function raises; ours is its
    function with English's literals, which equal every literal these languages do have."""
    row = belebele_row("si")  # the items' text does not matter here (no Burmese l10n package is committed)
    with pytest.raises(AttributeError, match="Translation for 'answer' is needed"):
        lighteval_belebele_prompt(language)(row, "mc")
    assert prompting.literals_language(language) == Language.ENGLISH
    ours = tasks.task_config("mc", lang, tmp_path).prompt_function(row, "mc")
    same_doc(ours, lighteval_belebele_prompt(Language.ENGLISH)(row, "mc"))
    assert "\nQuestion: " in ours.query and ours.query.endswith("\nAnswer:")


def test_literals_fallback_refuses_a_language_whose_own_literals_differ():
    from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS, TranslationLiterals

    original = TRANSLATION_LITERALS[Language.SINHALA]
    TRANSLATION_LITERALS[Language.SINHALA] = TranslationLiterals(language=Language.SINHALA, full_stop="।")
    try:
        with pytest.raises(ValueError, match="full_stop"):
            prompting.literals_language(Language.SINHALA)
    finally:
        TRANSLATION_LITERALS[Language.SINHALA] = original
    assert prompting.literals_language(Language.THAI) == Language.THAI
    assert prompting.lighteval_language("ar") == Language.ARABIC
    assert prompting.lighteval_language("sw") == Language.SWAHILI


def gmmlu_row(subject: str, i: int, **options) -> dict:
    row = {
        "sample_id": f"{subject}/test/{i}",
        "subject": subject,
        "question": f"Question {i} about {subject}?",
        "option_a": f"first {i}",
        "option_b": f"second {i}",
        "option_c": f"third {i}",
        "option_d": f"fourth {i}",
        "answer": "ABCD"[i % 4],
        "cultural_sensitivity_label": "CA",
    }
    return row | options


def test_gmmlu_prompt_is_lighteval_own_under_the_subject_instruction(tmp_path):
    row = gmmlu_row("high_school_biology", 2)
    ours = tasks.task_config("gmmlu", "de", tmp_path).prompt_function(row, "gmmlu_de")
    instruction = "Es folgen Multiple-Choice-Fragen (mit Antworten) zu high school biology."
    theirs = get_mcq_prompt_function(
        Language.GERMAN,
        lambda line: {
            "question": line["question"],
            "choices": [line["option_a"], line["option_b"], line["option_c"], line["option_d"]],
            "gold_idx": ascii_uppercase.index(line["answer"]),
            "instruction": instruction,
        },
        formulation=MCFFormulation(),
    )(row, "gmmlu_de")
    same_doc(ours, theirs)
    assert ours.query.startswith(
        instruction + "\nFrage: Question 2 about high_school_biology?\n A. First 2\n"
    )  # capitalized by LightEval
    assert ours.gold_index == [2]
    si = tasks.task_config("gmmlu", "si", tmp_path).prompt_function(row, "gmmlu_si")
    assert si.instruction == "high school biology පිළිබඳ බහු විකල්ප ප්\u200dරශ්න (පිළිතුරු සමඟ) පහත දැක්වේ."


def test_gmmlu_row_filter_is_lighteval_own():
    assert gmmlu.keep_global_mmlu_row(gmmlu_row("anatomy", 0), "anatomy")
    assert not gmmlu.keep_global_mmlu_row(gmmlu_row("anatomy", 0), "astronomy")
    assert not gmmlu.keep_global_mmlu_row(gmmlu_row("anatomy", 0, option_c=None), "anatomy")
    assert not gmmlu.keep_global_mmlu_row(gmmlu_row("anatomy", 0, option_d="  "), None)
    config = tasks.task_config("gmmlu", "si", "folder", subject="anatomy")
    assert config.name == "gmmlu_si:anatomy" and config.few_shots_split == "dev"
    assert config.hf_filter(gmmlu_row("anatomy", 1)) and not config.hf_filter(gmmlu_row("anatomy", 1, option_a=None))
    assert len(gmmlu.mmlu_subjects()) == 57
    with pytest.raises(ValueError, match="not one of MMLU's 57"):
        tasks.task_config("gmmlu", "si", "folder", subject="math")


# ---- through the harness on a tiny random Llama (slow) -------------------------------------------------------------


def global_mmlu_fixture(folder):
    """Global-MMLU's layout (subset si, splits dev and test) with two subjects and rows with a None or empty option."""
    dev = [gmmlu_row(s, 10 + i) for s in ("anatomy", "astronomy") for i in range(3)]
    test = [
        gmmlu_row("anatomy", 0),
        gmmlu_row("anatomy", 1, option_b=None),  # dropped: raised AttributeError in the old template
        gmmlu_row("anatomy", 2),
        gmmlu_row("astronomy", 3, option_a=""),  # dropped
        gmmlu_row("astronomy", 4),
    ]
    return datasets.write_hub_layout(folder, {"si": {"dev": dev, "test": test}})


def run_harness(task, lang, data, model_dir, out, fewshot):
    from workflow_scripts.harness.__main__ import main

    main(
        [
            *(
                "--task",
                task,
                "--lang",
                lang,
                "--model",
                str(model_dir),
                "--data",
                str(data),
                "--fewshot",
                str(fewshot),
            ),
            *("--cell", '{"method": "Source"}', "--out", str(out)),
        ]
    )
    return json.loads(out.read_text())


@pytest.mark.slow
def test_global_mmlu_runs_by_subject_filtered_and_averaged_over_subjects(tiny_llama_dir, tmp_path, monkeypatch):
    from workflow_scripts.harness import run

    captured = []
    original = run._group_run
    monkeypatch.setattr(run, "_group_run", lambda *a: captured.append(original(*a)) or captured[-1])
    result = run_harness("gmmlu", "si", global_mmlu_fixture(tmp_path / "g"), tiny_llama_dir, tmp_path / "g.json", 2)

    subjects = result["details"]["subjects"]
    assert {s: v["n_items"] for s, v in subjects.items()} == {"anatomy": 2, "astronomy": 1}
    assert result["details"]["n_items"] == 3
    records = {r["metric"]: r["value"] for r in result["records"]}
    assert all(r["task"] == "gmmlu" for r in result["records"])
    # LightEval's average over subjects, and the mean over items next to it
    assert records["acc"] == pytest.approx((subjects["anatomy"]["acc"] + subjects["astronomy"]["acc"]) / 2)
    per_item = [d.metric["acc"] for d in captured[0].details]
    assert records["acc_items"] == pytest.approx(sum(per_item) / 3)
    for detail in captured[0].details:
        doc = detail.doc
        subject = doc.task_name.split(":", 1)[1].split("|")[0]
        assert doc.instruction == gmmlu.instruction(subject, "si")
        assert "None" not in doc.query and "\n A. \n" not in doc.query
        # the few-shot examples are the same subject's dev rows
        assert len(doc.fewshot_samples) == 2
        assert all(f"about {subject}?" in shot.query for shot in doc.fewshot_samples)


def mmlu_row(subject: str, i: int, question: str | None = None) -> dict:
    """A row of lighteval/mmlu: fields question, subject, choices, answer (an int)."""
    return {
        "question": question if question is not None else f"Q{i} on {subject}",
        "subject": subject,
        "choices": [f"c{i}{k}" for k in "abcd"],
        "answer": i % 4,
    }


def mmlu_fixture(folder):
    """lighteval/mmlu's layout: subset ``all`` (every subject)."""
    dev = [mmlu_row(s, i) for s in ("college_physics", "virology") for i in range(4)]
    test = [mmlu_row("college_physics", 10), mmlu_row("college_physics", 11), mmlu_row("virology", 12)]
    return datasets.write_hub_layout(folder, {"all": {"dev": dev, "test": test}}), dev, test


def leaderboard_context(subject: str, shots: list[dict], item: dict) -> str:
    """The context of LightEval's leaderboard ``mmlu:{subject}`` task (the reference's; LightEval <= 0.8), written
    from its definition: the header and a blank line, then each shot's question, options and "Answer:" with its
    letter, and the item's, joined by blank lines; nothing stripped."""

    def text(row):
        options = "".join(f"{k}. {c}\n" for k, c in zip("ABCD", row["choices"], strict=True))
        return f"{row['question']}\n{options}Answer:"

    header = f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}.\n\n"
    return header + "\n\n".join([text(r) + " " + "ABCD"[r["answer"]] for r in shots] + [text(item)])


def mmlu_context(subject: str, shots: list[dict], item: dict, prompt_function) -> str:
    """The plain-text context LightEval 0.13.0's prompt builder makes of ``item`` with ``shots`` before it."""
    from lighteval.tasks.prompt_manager import PromptManager

    doc = prompt_function(item, f"gmmlu_en:{subject}")
    doc.fewshot_samples = [prompt_function(r, f"gmmlu_en:{subject}") for r in shots]
    return PromptManager(use_chat_template=False).prepare_prompt(doc)


def test_english_mmlu_context_is_the_leaderboards_byte_for_byte():
    from lighteval.tasks.tasks.mmlu import mmlu_prompt

    shots = [mmlu_row("high_school_us_history", i) for i in range(5)]
    item = mmlu_row("high_school_us_history", 6, question=" Q6, with a leading space")
    ours = mmlu_context("high_school_us_history", shots, item, gmmlu.prompt_function(prompting, "en"))
    assert ours == leaderboard_context("high_school_us_history", shots, item)
    assert ours == (
        "The following are multiple choice questions (with answers) about high school us history.\n\n"
        "Q0 on high_school_us_history\nA. c0a\nB. c0b\nC. c0c\nD. c0d\nAnswer: A\n\n"
        "Q1 on high_school_us_history\nA. c1a\nB. c1b\nC. c1c\nD. c1d\nAnswer: B\n\n"
        "Q2 on high_school_us_history\nA. c2a\nB. c2b\nC. c2c\nD. c2d\nAnswer: C\n\n"
        "Q3 on high_school_us_history\nA. c3a\nB. c3b\nC. c3c\nD. c3d\nAnswer: D\n\n"
        "Q4 on high_school_us_history\nA. c4a\nB. c4b\nC. c4c\nD. c4d\nAnswer: A\n\n"
        " Q6, with a leading space\nA. c6a\nB. c6b\nC. c6c\nD. c6d\nAnswer:"
    )
    doc = gmmlu.prompt_function(prompting, "en")(item, "gmmlu_en")
    assert doc.choices == [" A", " B", " C", " D"] and doc.gold_index == 2
    assert gmmlu.prompt_function(prompting, "en")(item | {"answer": "D"}, "x").gold_index == 3
    # LightEval 0.13.0's bundled MMLU prompt is not the leaderboard's: "Question: ", and a second blank line under
    # the header (its instruction ends in one and the builder adds another)
    bundled = mmlu_context("high_school_us_history", shots, item, mmlu_prompt)
    assert bundled.startswith(
        "The following are multiple choice questions (with answers) about high school us history.\n\n\n\n"
        "Question: Q0 on high_school_us_history\nA. c0a\n"
    )


@pytest.mark.slow
def test_english_mmlu_runs_in_the_leaderboards_prompt(tiny_llama_dir, tmp_path, monkeypatch):
    from lighteval.tasks.prompt_manager import PromptManager

    from workflow_scripts.harness import run

    captured = []
    original = run._group_run
    monkeypatch.setattr(run, "_group_run", lambda *a: captured.append(original(*a)) or captured[-1])
    folder, dev, test = mmlu_fixture(tmp_path / "mmlu")
    result = run_harness("gmmlu", "en", folder, tiny_llama_dir, tmp_path / "en.json", 3)

    assert {r["task"] for r in result["records"]} == {"gmmlu_en"}
    assert {s: v["n_items"] for s, v in result["details"]["subjects"].items()} == {"college_physics": 2, "virology": 1}
    for detail in captured[0].details:
        doc = detail.doc
        subject = doc.task_name.split(":", 1)[1].split("|")[0]
        assert doc.choices == [" A", " B", " C", " D"]
        # the leaderboard's sequential few-shot: the subject's first dev rows, in order; the context LightEval
        # builds of them is the leaderboard's, byte for byte
        shots = [r for r in dev if r["subject"] == subject][:3]
        assert [shot.query for shot in doc.fewshot_samples] == [gmmlu.mmlu_leaderboard_doc(r, "x").query for r in shots]
        (item,) = [r for r in test if r["question"] == doc.query.split("\n", 1)[0]]
        assert PromptManager().prepare_prompt(doc) == leaderboard_context(subject, shots, item)
