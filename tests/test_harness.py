"""The paper's evaluation tasks through LightEval (workflow_scripts/harness): metrics on hand cases, prompts, the
embedded default's data, and (slow: LightEval imports in ~15 s) runs on a tiny model checked against recomputations."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import REPO, l10n_pairs, run_harness_jobs
from workflow_scripts import prompts
from workflow_scripts.harness import datasets, metrics
from workflow_scripts.tasks import gmmlu

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)


def test_rouge_l_thai_and_sinhala_hand_counts():
    # Thai has no spaces: grapheme clusters. pred แ ม ว กิ น ข้ า ว, ref แ ม ว กิ น ป ล า: LCS 6 of 8 and 8 -> F 0.75
    assert metrics.segment("แมวกินปลา") == ["แ", "ม", "ว", "กิ", "น", "ป", "ล", "า"]
    assert metrics.rouge_l("แมวกินข้าว", "แมวกินปลา") == pytest.approx(75.0)
    # Sinhala has spaces: words, vowel signs stay in them. LCS 2 of 3 and 3 -> F 2/3
    assert metrics.segment("මම ගෙදර යනවා.") == ["මම", "ගෙදර", "යනවා"]
    assert metrics.rouge_l("මම ගෙදර යනවා", "මම පාසල් යනවා") == pytest.approx(200 / 3)
    # rouge-score's own tokenizer deletes the non-Latin text: the reason for ours
    from rouge_score import rouge_scorer

    assert rouge_scorer.RougeScorer(["rougeL"]).score("แมวกินปลา", "แมวกินปลา")["rougeL"].fmeasure == 0


def test_chrf_equals_sacrebleu():
    from sacrebleu.metrics import CHRF

    hyp, ref = "the cat sat on the mat", "the cat is on the mat"
    assert metrics.sentence_chrf(hyp, ref) == CHRF().sentence_score(hyp, [ref]).score
    assert metrics.corpus_chrf([hyp, "a"], [ref, "b"]) == CHRF().corpus_score([hyp, "a"], [[ref, "b"]]).score


def test_accuracy_ties_and_normalization():
    assert metrics.choice_accuracy([-1.0, -2.0, -3.0, -4.0], 0) == 1
    assert metrics.choice_accuracy([-2.0, -2.0, -3.0, -4.0], 0) == 1  # tie: the first tied choice wins
    assert metrics.choice_accuracy([-2.0, -2.0, -3.0, -4.0], 1) == 0
    # token-normalized: -4 over 4 tokens beats -2 over 1 token
    assert metrics.choice_accuracy([-2.0, -4.0], 1, lengths=[1, 4]) == 1
    assert metrics.choice_accuracy([-2.0, -4.0], 1) == 0


def test_paper_prompts():
    assert prompts.mt_query("Hello.", "th") == "แปลภาษาอังกฤษเป็นไทย:\nHello. ="
    assert prompts.sum_query("A\nB", "en") == "Summarize the following text in English: A B Summary:"
    assert set(prompts.prompt_table()["mt"]) == {"ar", "my", "de", "el", "hi", "ja", "si", "sw", "te", "th"}
    assert gmmlu.instruction("college_mathematics", "de") == (
        "Es folgen Multiple-Choice-Fragen (mit Antworten) zu college mathematics."
    )


def test_sinhala_prompts_keep_the_zero_width_joiner():
    # Sinhala writes "consonant + al-lakuna + ra" (the rakaaraansaya of ඉංග්‍රීසි "English", ප්‍රශ්න "questions") with a
    # zero-width joiner between al-lakuna (U+0DCA) and ra (U+0DBB), as the reference's prompts do
    assert prompts.mt_query("Hi.", "si").encode("utf-8") == (
        b"\xe0\xb6\x89\xe0\xb6\x82\xe0\xb6\x9c\xe0\xb7\x8a\xe2\x80\x8d\xe0\xb6\xbb\xe0\xb7\x93\xe0\xb7\x83\xe0\xb7\x92 "
        b"\xe0\xb7\x83\xe0\xb7\x92\xe0\xb6\x82\xe0\xb7\x84\xe0\xb6\xbd\xe0\xb6\xba\xe0\xb6\xa7 "
        b"\xe0\xb6\xb4\xe0\xb6\xbb\xe0\xb7\x92\xe0\xb7\x80\xe0\xb6\xbb\xe0\xb7\x8a\xe0\xb6\xad\xe0\xb6\xb1\xe0\xb6\xba "
        b"\xe0\xb6\x9a\xe0\xb6\xbb\xe0\xb6\xb1\xe0\xb7\x8a\xe0\xb6\xb1:\nHi. ="
    )
    assert prompts.mt_query("Hi.", "si")[:8] == "\u0d89\u0d82\u0d9c\u0dca\u200d\u0dbb\u0dd3\u0dc3"
    instruction = gmmlu.instruction("anatomy", "si")
    assert instruction.index("\u200d") == 28
    assert instruction[:33] == (
        "anatomy \u0db4\u0dd2\u0dc5\u0dd2\u0db6\u0db3 \u0db6\u0dc4\u0dd4 \u0dc0\u0dd2\u0d9a\u0dbd\u0dca\u0db4 "
        "\u0db4\u0dca\u200d\u0dbb\u0dc1\u0dca\u0db1"
    )
    assert instruction[26:33].encode("utf-8") == (
        b"\xe0\xb6\xb4\xe0\xb7\x8a\xe2\x80\x8d\xe0\xb6\xbb\xe0\xb7\x81\xe0\xb7\x8a\xe0\xb6\xb1"
    )


def test_no_other_prompt_holds_an_invisible_character():
    # every format or control character (ZWJ, ZWNJ, BOM, ...) and non-plain space of prompts.yaml, where it stands;
    # checked codepoint for codepoint against the reference's prompts (docs/evaluation.md, "Prompt strings")
    import unicodedata

    found = []
    for task, table in prompts.prompt_table().items():
        for lang, entry in table.items():
            for part, text in {"": entry}.items() if isinstance(entry, str) else entry.items():
                found += [
                    (task, lang, part, i, f"U+{ord(c):04X}")
                    for i, c in enumerate(text)
                    if unicodedata.category(c) in ("Cf", "Cc", "Zs", "Zl", "Zp") and c != " "
                ]
    assert found == [("mt", "si", "", 4, "U+200D"), ("gmmlu", "si", "", 30, "U+200D")]


def test_mc_proxy_items_are_seeded_and_hold_the_translation():
    pairs = l10n_pairs("th")[:30]
    items = datasets.proxy_items(pairs, 10, seed=3)
    assert items == datasets.proxy_items(pairs, 10, seed=3)
    for (en, tgt), item in zip(pairs, items, strict=False):
        answers = [item[f"mc_answer{i}"] for i in range(1, 5)]
        assert item["flores_passage"] == en and answers[int(item["correct_answer_num"]) - 1] == tgt
        assert len(set(answers)) == 4


def test_gmmlu_has_no_thai_and_missing_mirror_names_the_rule(tmp_path):
    with pytest.raises(datasets.Unavailable, match="no th subset"):
        datasets.task_source("gmmlu", "th")
    with pytest.raises(FileNotFoundError, match=r"dataset belebele .*download_dataset"):
        datasets.resolve("belebele", "facebook/belebele", downloads=tmp_path)


# ---- LightEval runs (slow) -------------------------------------------------------------------------------------------


def belebele_fixture(folder, lang: str = "th", n: int = 8):
    """A local folder in Belebele's hub layout (README configs, one subset, split test), from real l10n pairs."""
    items = datasets.proxy_items(l10n_pairs(lang)[200:240], n, seed=0)
    return datasets.write_hub_layout(folder, {datasets.flores_subset(lang): {"test": items}})


def xlsum_fixture(folder):
    pairs = l10n_pairs("th")[300:310]
    rows = [
        {"id": str(i), "url": "", "title": "", "text": " ".join(t for _, t in pairs[i : i + 3]), "summary": t}
        for i, (_, t) in enumerate(pairs[:6])
    ]
    return datasets.write_hub_layout(folder, {"thai": {"train": rows[:2], "test": rows[2:]}})


def gmmlu_fixture(folder):
    rows = [
        {
            "question": f"{i} + 1 = ?",
            "option_a": "1",
            "option_b": str(i + 1),
            "option_c": "0",
            "option_d": "9",
            "answer": "B",
            "subject": "college_mathematics",
        }
        for i in range(8)
    ]
    return datasets.write_hub_layout(folder, {"si": {"dev": rows[:5], "test": rows[5:]}})


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    from workflow_scripts.inference import load_model

    model, tokenizer = load_model(tiny_llama_dir, "float32", "cpu")
    return model, tokenizer, str(tiny_llama_dir)


@pytest.mark.slow
def test_lighteval_choice_loglikelihood_equals_transformers(tiny, tmp_path):
    import torch

    from workflow_scripts.harness.run import run_task
    from workflow_scripts.harness.tasks import task_config

    model, tokenizer, model_dir = tiny
    config = task_config("mc", "th", belebele_fixture(tmp_path / "bele", n=3))
    config.num_fewshots = 0
    result = run_task(model, model_dir, config, n=3, decoding="greedy", seed=0, batch_size=4, max_length=2048)
    assert torch.is_grad_enabled(), "LightEval's import switched gradients off for the rest of the process"
    detail = result.details[0]
    context = detail.doc.query
    for choice, reported in zip(detail.doc.choices, detail.model_response.logprobs, strict=True):
        ctx = tokenizer(context)["input_ids"]
        whole = tokenizer(context + choice)["input_ids"]
        assert whole[: len(ctx)] == ctx
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([whole])).logits[0].float(), -1)
        direct = sum(logp[i - 1, whole[i]].item() for i in range(len(ctx), len(whole)))
        assert reported == pytest.approx(direct, abs=1e-4)
    # LightEval's accuracy is our recomputation from its details
    # LightEval's prompt function gives the gold as a one-element list
    recomputed = [metrics.choice_accuracy(d.model_response.logprobs, d.doc.gold_index[0]) for d in result.details]
    assert result.scores["acc"] == pytest.approx(sum(recomputed) / len(recomputed))


@pytest.mark.slow
def test_chat_template_wraps_the_prompt_as_one_user_turn(tiny, tmp_path):
    """ElChat cells (--chat-template): the scored context is the chat template around the paper's prompt."""
    import torch

    from workflow_scripts.harness.run import run_task
    from workflow_scripts.harness.tasks import task_config

    model, tokenizer, model_dir = tiny
    config = task_config("mc", "th", belebele_fixture(tmp_path / "bele", n=2))
    config.num_fewshots = 0
    result = run_task(
        model, model_dir, config, n=2, decoding="greedy", seed=0, batch_size=4, max_length=2048, chat_template=True
    )
    detail = result.details[0]
    messages = [{"role": "user", "content": detail.doc.query}]
    context = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert context.startswith("<|im_start|>system") and context.endswith("คำตอบ:<|im_end|>\n<|im_start|>assistant\n")
    # LightEval moves the context's trailing whitespace (the template's "\n" after "assistant") into the continuation
    response = detail.model_response
    ctx, cont = response.input_tokens.tolist(), response.output_tokens[0].tolist()
    assert tokenizer.decode(ctx) == context.rstrip()
    assert tokenizer.decode(cont) == "\n" + detail.doc.choices[0]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ctx + cont])).logits[0].float(), -1)
    direct = sum(logp[len(ctx) + j - 1, t].item() for j, t in enumerate(cont))
    assert response.logprobs[0] == pytest.approx(direct, abs=1e-4)


@pytest.mark.slow
def test_mt_score_is_recomputed_from_details_and_runs_are_seeded(tiny, tmp_path):
    from workflow_scripts.harness.run import run_task
    from workflow_scripts.harness.tasks import task_config

    model, _, model_dir = tiny
    (tmp_path / "mt.tsv").write_text("".join(f"{e}\t{t}\n" for e, t in l10n_pairs("th")[:4]), encoding="utf-8")
    config = task_config(
        "mt", "th", datasets.pairs_dataset(tmp_path / "mt.tsv", "th", tmp_path / "ds"), generation_size=6
    )

    def texts(decoding, seed):
        r = run_task(model, model_dir, config, n=4, decoding=decoding, seed=seed, batch_size=4, max_length=512)
        return r, [d.model_response.final_text[0] for d in r.details]

    greedy, g1 = texts("greedy", 0)
    hyps = [
        metrics.sentence_chrf(t.split("\n")[0].strip(), d.doc.get_golds()[0])
        for t, d in zip(g1, greedy.details, strict=True)
    ]
    assert greedy.scores["chrF"] == pytest.approx(sum(hyps) / len(hyps))
    assert texts("greedy", 1)[1] == g1
    sampled = [texts("paper", seed)[1] for seed in (0, 1, 2)]
    assert sampled[0] != sampled[1] and sampled[1] != sampled[2]
    assert texts("paper", 1)[1] == sampled[1]


@pytest.mark.slow  # two LightEval runs
def test_each_pairs_folder_is_read_afresh(tiny, tmp_path):
    """Two mt datasets in folders of the same name: the second is scored on its own rows, not on the rows ``datasets``
    cached for the first (its cache keys a local folder by name and subset: the default's Thai mt once scored 3 of its
    32 sentences)."""
    from workflow_scripts.harness.run import run_task
    from workflow_scripts.harness.tasks import task_config

    model, _, model_dir = tiny
    pairs = l10n_pairs("th")
    for i, n in enumerate((2, 5)):
        tsv = tmp_path / f"mt{i}.tsv"
        tsv.write_text("".join(f"{e}\t{t}\n" for e, t in pairs[i * 10 : i * 10 + n]), encoding="utf-8")
        folder = datasets.pairs_dataset(tsv, "th", tmp_path / str(i) / "pairs")
        config = task_config("mt", "th", folder, generation_size=2)
        run = run_task(model, model_dir, config, n=None, decoding="greedy", seed=0, batch_size=8, max_length=512)
        golds = sorted(d.doc.get_golds()[0] for d in run.details)
        assert golds == sorted(t for _, t in pairs[i * 10 : i * 10 + n])


@pytest.mark.slow
def test_cli_offline_on_hub_layout_fixtures(tiny_llama_dir, tmp_path):
    """Every task runs offline on local mirrors (HF_HUB_OFFLINE=1); gmmlu for Thai writes the reason, no score."""
    bele, xlsum, gmmlu = (
        belebele_fixture(tmp_path / "bele"),
        xlsum_fixture(tmp_path / "xlsum"),
        gmmlu_fixture(tmp_path / "g"),
    )
    (tmp_path / "mt.tsv").write_text("".join(f"{e}\t{t}\n" for e, t in l10n_pairs("th")[:3]), encoding="utf-8")
    jobs = [
        ("mt", "th", ["--pairs", tmp_path / "mt.tsv", "--runs", "2", "--decoding", "paper"]),
        ("sum", "th", ["--data", xlsum]),
        ("mc", "th", ["--data", bele, "--fewshot", "1"]),
        ("gmmlu", "si", ["--data", gmmlu, "--fewshot", "2"]),
        ("gmmlu", "th", []),
    ]
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    common = ["--model", str(tiny_llama_dir), "--n", "3", "--max-new-tokens", "4", "--cell", '{"method": "Source"}']
    argvs = [
        ["--task", task, "--lang", lang, *common, "--out", str(tmp_path / f"{task}_{lang}.json"), *map(str, extra)]
        for task, lang, extra in jobs
    ]
    run_harness_jobs(argvs, env, tmp_path)  # one process: LightEval imported once for the five jobs
    for task, lang, _ in jobs:
        result = json.loads((tmp_path / f"{task}_{lang}.json").read_text())
        if (task, lang) == ("gmmlu", "th"):
            assert result["records"] == [] and "no th subset" in result["details"]["unavailable"]
            continue
        assert result["details"]["n_items"] == 3
        if task != "gmmlu":  # gmmlu's n is per subject
            assert (result["details"]["n_requested"], result["details"]["n_used"]) == (3, 3)
        runs = {r["run"] for r in result["records"]}
        assert runs == ({0, 1} if task == "mt" else {0})
        metric = {"mt": "chrF", "sum": "rougeL_script", "mc": "acc", "gmmlu": "acc"}[task]
        assert metric in {r["metric"] for r in result["records"]}


def test_english_retention_runs_are_recorded_under_their_own_task():
    from workflow_scripts.harness.__main__ import record_task

    assert record_task("mc", "en") == "mc_en" and record_task("gmmlu", "en") == "gmmlu_en"
    assert record_task("mc", "th") == "mc" and record_task("mt", "si") == "mt"


# ---- the model's maximum length -------------------------------------------------------------------------------------


def test_model_max_length_is_read_from_the_config_as_lighteval_reads_it():
    from transformers import GPT2Config, LlamaConfig, PretrainedConfig

    from workflow_scripts.inference import model_max_length

    assert model_max_length(LlamaConfig(max_position_embeddings=4096)) == 4096  # Llama-2
    assert model_max_length(LlamaConfig(max_position_embeddings=8192)) == 8192  # Llama-3
    assert model_max_length(GPT2Config(n_positions=1024)) == 1024  # LightEval's first key
    with pytest.raises(ValueError, match="none of n_positions, max_position_embeddings, n_ctx"):
        model_max_length(PretrainedConfig())


@pytest.fixture(scope="module")
def llama_1100(tiny_llama_dir, tmp_path_factory):
    """The tiny Llama with max_position_embeddings 1,100: above every zero-shot prompt of ``belebele_fixture`` in
    SmolLM2's tokenizer (336-1,050 tokens), below every 3-shot one (2,644-3,358)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tmp_path_factory.mktemp("llama_1100")
    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    model.config.max_position_embeddings = 1100
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_llama_dir).save_pretrained(folder)
    return folder


def test_harness_model_config_takes_the_model_maximum(llama_1100, tmp_path, monkeypatch):
    import torch

    from workflow_scripts.harness.run import lighteval_model_config
    from workflow_scripts.inference import load_model

    # LightEval's backend turns gradients off for the whole process when it is imported: imported afresh here, and
    # the caller's mode must survive it, or training later in the same process fails
    monkeypatch.delitem(sys.modules, "lighteval.models.transformers.transformers_model", raising=False)
    model, _ = load_model(llama_1100, "float32", "cpu")
    common = {"batch_size": 1, "decoding": "greedy", "chat_template": False, "cache_dir": tmp_path}
    assert lighteval_model_config(model, str(llama_1100), max_length=None, **common).max_length == 1100
    assert lighteval_model_config(model, str(llama_1100), max_length=512, **common).max_length == 512  # --max-length
    assert torch.is_grad_enabled()


@pytest.mark.slow
@pytest.mark.parametrize(("fewshot", "truncated"), [(0, 0), (3, 8)])
def test_result_records_max_length_and_truncated_prompts(llama_1100, tmp_path, fewshot, truncated):
    """mc on a model of 1,100 positions: the result records that maximum, and LightEval cut every 3-shot prompt
    (2,644-3,358 tokens) and no zero-shot one (at most 1,050)."""
    from workflow_scripts.harness.__main__ import main

    out = tmp_path / "mc.json"
    main(
        [
            "--task",
            "mc",
            "--lang",
            "th",
            "--model",
            str(llama_1100),
            "--data",
            str(belebele_fixture(tmp_path / "b")),
            "--fewshot",
            str(fewshot),
            "--cell",
            '{"method": "Source"}',
            "--out",
            str(out),
        ]
    )
    details = json.loads(out.read_text())["details"]
    assert (details["n_items"], details["fewshot"], details["max_length"]) == (8, fewshot, 1100)
    assert details["prompts_truncated"] == truncated
    assert "generations_shortened" not in details  # a log-likelihood task generates nothing
