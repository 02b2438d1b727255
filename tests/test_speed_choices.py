"""Speed on the log-likelihood tasks (mc, gmmlu), per-task records saved as they finish (a killed run resumes), and
the speed step's memory and time plan against the GPU (mechanics on tiny models; no timing is asserted)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import yaml

from workflow_scripts.plan import speed as plan
from workflow_scripts.speed import __main__ as speed_cli
from workflow_scripts.speed import choices
from workflow_scripts.speed import job as speed_job
from workflow_scripts.speed.decoders import HFDecoder

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)

PAIRS = [
    ("Open the file.", "เปิดแฟ้ม"),
    ("Save the document as a new file.", "บันทึกเอกสารเป็นแฟ้มใหม่"),
    ("The selected cells are protected.", "เซลล์ที่เลือกถูกป้องกัน"),
    ("Insert a new row above.", "แทรกแถวใหม่ด้านบน"),
    ("Close the window.", "ปิดหน้าต่าง"),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory, smollm2_tokenizer_dir):
    """A tiny model whose vocabulary adds Thai tokens, and a tiny Source on SmolLM2's own tokenizer."""
    from conftest import SMOL_MERGES, expand_tokenizer, hand_rows, tiny_model
    from transformers import AutoTokenizer

    tmp = tmp_path_factory.mktemp("speed_models")
    tok_dir = expand_tokenizer(smollm2_tokenizer_dir, tmp / "tok", SMOL_MERGES)
    n_target = len(AutoTokenizer.from_pretrained(tok_dir))
    n_source = len(AutoTokenizer.from_pretrained(smollm2_tokenizer_dir))
    model_dir = tiny_model(tok_dir, tmp / "model", hand_rows(n_target, 16, 3, 7) / 7, None)
    source_dir = tiny_model(smollm2_tokenizer_dir, tmp / "source", hand_rows(n_source, 16, 3, 7) / 7, None)
    return model_dir, source_dir


@pytest.fixture(scope="module")
def mc_folder(tmp_path_factory):
    """The default's mc proxy in Belebele's hub layout, from hand-made pairs."""
    from workflow_scripts.harness.datasets import flores_subset, proxy_items, write_hub_layout

    folder = tmp_path_factory.mktemp("mc") / "mc_proxy"
    return write_hub_layout(folder, {flores_subset("th"): {"test": proxy_items(PAIRS, 3, seed=0)}})


def _loaded(model_dir):
    from workflow_scripts.inference import load_model

    model, tok = load_model(model_dir)
    return model, tok, HFDecoder(model, tok)


def test_choice_items_are_the_harness_prompts(mc_folder):
    """The timed text is LightEval's plain-text prompt of the harness's Doc, the choices the Doc's."""
    import datasets
    from lighteval.tasks.prompt_manager import PromptManager

    from workflow_scripts.harness.tasks import task_config

    items = choices.choice_items("mc", "th", mc_folder, 2)
    config = task_config("mc", "th", mc_folder)
    rows = datasets.load_dataset(str(mc_folder), config.hf_subset, split="test")
    docs = [config.prompt_function(rows[i], config.name) for i in range(2)]
    assert [i.context for i in items] == [PromptManager().prepare_prompt(d) for d in docs]
    assert [i.choices for i in items] == [list(d.choices) for d in docs]
    assert PAIRS[0][0] in items[0].context and PAIRS[0][1] in items[0].context  # passage and the right option


def test_gmmlu_items_by_subject(tmp_path):
    from workflow_scripts.harness.datasets import write_hub_layout

    rows = [
        {
            "question": "2 + 2 = ?",
            "option_a": "3",
            "option_b": "4",
            "option_c": "5",
            "option_d": "6",
            "answer": "B",
            "subject": "elementary_mathematics",
        },
        {
            "question": "H2O คือ?",
            "option_a": "น้ำ",
            "option_b": "ไฟ",
            "option_c": "ลม",
            "option_d": "ดิน",
            "answer": "A",
            "subject": "high_school_chemistry",
        },
    ]
    folder = write_hub_layout(tmp_path / "gmmlu", {"si": {"test": rows, "dev": rows}})
    items = choices.choice_items("gmmlu", "si", folder, None)
    assert len(items) == 2 and all(len(i.choices) == 4 for i in items)
    assert "H2O" in items[1].context and "น้ำ" in items[1].context


def _harness_contexts(model_dir, configs, monkeypatch) -> dict[tuple[str, str], str]:
    """The context LightEval builds for every document of a harness run (``run.run_task``), keyed by (task, row)."""
    from lighteval.tasks.prompt_manager import PromptManager

    from workflow_scripts.harness.run import run_task
    from workflow_scripts.inference import load_model

    seen: dict[tuple[str, str], set[str]] = {}
    original = PromptManager.prepare_prompt

    def record(self, doc):
        text = original(self, doc)
        seen.setdefault((doc.task_name.split("|")[0], doc.id), set()).add(text)
        return text

    monkeypatch.setattr(PromptManager, "prepare_prompt", record)
    model, _ = load_model(model_dir, "float32", "cpu")
    run_task(model, str(model_dir), configs, n=None, decoding="greedy", seed=0, batch_size=4)
    monkeypatch.setattr(PromptManager, "prepare_prompt", original)
    assert all(len(texts) == 1 for texts in seen.values())  # one context per document, however often it is built
    return {key: texts.pop() for key, texts in seen.items()}


@pytest.mark.slow  # three LightEval runs on a 1-layer model: about 20 s
@pytest.mark.parametrize("fewshot", [0, 3])
def test_timed_mc_contexts_are_the_harness_contexts(models, tmp_path, monkeypatch, fewshot):
    """The speed step's mc contexts equal, byte for byte, the contexts LightEval scored in the harness's run (few-shot
    examples with their answers, then the item), item by item in the order of the evaluation split."""
    from tests.conftest import l10n_pairs
    from workflow_scripts.harness.datasets import flores_subset, proxy_items, write_hub_layout
    from workflow_scripts.harness.tasks import task_config

    rows = proxy_items(l10n_pairs("th")[200:240], 8, seed=0)
    folder = write_hub_layout(tmp_path / "bele", {flores_subset("th"): {"test": rows}})
    config = task_config("mc", "th", folder)
    config.num_fewshots = fewshot
    harness = _harness_contexts(models[1], [config], monkeypatch)
    items = choices.choice_items("mc", "th", folder, None, fewshot)
    assert [i.context for i in items] == [harness[("mc_th", str(row))] for row in range(8)]
    # each context holds the few-shot examples, each with its answer letter, and ends in the item's own question
    assert all(i.context.count("\nคำตอบ:") == fewshot + 1 for i in items)
    assert all(i.context.endswith(f"{rows[k]['mc_answer4']}\nคำตอบ:") for k, i in enumerate(items))
    assert choices.choice_items("mc", "th", folder, 3, fewshot) == items[:3]


@pytest.mark.slow
def test_timed_gmmlu_contexts_are_the_harness_contexts_by_subject(models, tmp_path, monkeypatch):
    """gmmlu 3-shot: each item's context (the subject's instruction and dev examples) is the one the harness's
    subject task scored; items follow the test split's order across subjects, dropped rows skipped."""
    from workflow_scripts.harness.datasets import write_hub_layout
    from workflow_scripts.harness.tasks import task_configs

    def row(subject, i, **blank):
        options = {f"option_{c}": f"{subject[:3]}{i}{c}" for c in "abcd"}
        return {"question": f"Q{i} {subject}?", **options, **blank, "answer": "ABCD"[i % 4], "subject": subject}

    dev = [row(s, 10 + i) for s in ("anatomy", "astronomy") for i in range(4)]
    test = [
        row("astronomy", 0),
        row("anatomy", 1),
        row("anatomy", 2, option_c=""),
        row("astronomy", 3),
        row("anatomy", 4),
    ]
    folder = write_hub_layout(tmp_path / "g", {"si": {"dev": dev, "test": test}})
    configs = task_configs("gmmlu", "si", folder)
    for config in configs:
        config.num_fewshots = 3
    harness = _harness_contexts(models[1], configs, monkeypatch)
    items = choices.choice_items("gmmlu", "si", folder, None, 3)
    # rows 0, 1, 3, 4 (row 2 has an empty option); a subject task numbers its own kept rows 0, 1, ...
    order = [
        ("gmmlu_si:astronomy", "0"),
        ("gmmlu_si:anatomy", "0"),
        ("gmmlu_si:astronomy", "1"),
        ("gmmlu_si:anatomy", "1"),
    ]
    assert [i.context for i in items] == [harness[key] for key in order]
    # LightEval's MCF prompt capitalizes each option's first letter
    assert items[1].context.startswith("anatomy පිළිබඳ බහු විකල්ප ප්\u200dරශ්න")  # the joiner of the reference
    assert items[1].context.endswith("\n\nQuestion: Q1 anatomy?\n A. Ana1a\n B. Ana1b\n C. Ana1c\n D. Ana1d\nAnswer:")
    assert items[1].context.count("anatomy?\n") == 4 and "astronomy?" not in items[1].context  # 3 shots + the item


def test_contexts_are_cut_from_the_left_to_the_model_maximum(smollm2_tokenizer_dir):
    """A context and its longest choice over ``max_length`` lose the context's first tokens, as LightEval cuts."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    whole = tok("one two three four five six")["input_ids"]
    assert len(whole) == 6
    assert choices.encode_pair(tok, "one two three four five six", [" A", " B"]) == (whole, [[330], [389]])
    assert choices.encode_pair(tok, "one two three four five six", [" A", " B"], 4) == (whole[-3:], [[330], [389]])
    assert choices.encode_pair(tok, "one two three four five six", [" A", " B"], 7) == (whole, [[330], [389]])
    items = [choices.ChoiceItem("one two three four five six", [" A"]), choices.ChoiceItem("one two", [" A"])]
    assert choices.choice_limits(items, tok, 6) == 1 and choices.choice_limits(items, tok, 7) == 0


def test_choice_fewshot_defaults_to_the_harness_and_is_checked(tmp_path):
    base = ["--model", "m", "--source-tokenizer", "s", "--pairs", "p", "--lang", "th", "--cell", "{}", "--out", "o"]
    both = [*base, "--choice-data", "mc=a", "--choice-data", "gmmlu=b"]
    assert speed_cli.parse_args(both).choice_fewshot == {"mc": 3, "gmmlu": 5}
    assert speed_cli.parse_args([*both, "--choice-fewshot", "mc=0"]).choice_fewshot == {"mc": 0, "gmmlu": 5}
    assert speed_cli.parse_args(base).choice_fewshot == {}
    for bad in ("mc", "sum=1", "gmmlu=x"):
        with pytest.raises(SystemExit):
            speed_cli.parse_args([*base, "--choice-data", "mc=a", "--choice-fewshot", bad])


@pytest.mark.parametrize("answers", [(" A", " B", " C", " D"), (" A", " B", " เปิด", " บันทึกเอกสาร")])
def test_score_choices_equals_a_full_forward_pass(models, answers):
    """The log-probabilities from the scored positions only (one pass over the context for single-token answers, a
    batch of context + choice sequences otherwise) equal those of a full forward pass, per choice; one call each."""
    model, tok, decoder = _loaded(models[0])
    context = tok("ข้อความ: เปิดแฟ้ม\nคำตอบ:")["input_ids"]
    options = [tok(c, add_special_tokens=False)["input_ids"] for c in answers]
    widths = []
    hook = model.register_forward_pre_hook(lambda m, a, k: widths.append(tuple(k["input_ids"].shape)), with_kwargs=True)
    try:
        scored = decoder.score_choices(context, options)
    finally:
        hook.remove()
    single = all(len(o) == 1 for o in options)
    assert widths == ([(1, len(context))] if single else [(4, len(context) + max(map(len, options)))])
    with torch.inference_mode():
        for choice, got in zip(options, scored.logprobs, strict=True):
            logits = model(torch.tensor([context + choice])).logits[0].float().log_softmax(-1)
            want = sum(logits[len(context) - 1 + j, t] for j, t in enumerate(choice))
            assert got == pytest.approx(float(want), rel=1e-5)
    assert scored.seconds > 0


def test_mc_forward_passes_are_counted_and_paired(models, mc_folder):
    """Every timed and warm-up pass is one forward call of each model per item; the records carry the bound on the
    text read, the paired speed-up per repeat, and counts equal to a hand count of the sequences read."""
    from transformers import AutoTokenizer

    model, tok, decoder = _loaded(models[0])
    source, _, source_decoder = _loaded(models[1])
    calls = {"model": 0, "source": 0}
    hooks = [
        m.register_forward_pre_hook(lambda *_, k=k: calls.__setitem__(k, calls[k] + 1))
        for k, m in (("model", model), ("source", source))
    ]
    items = choices.choice_items("mc", "th", mc_folder, 3)
    counter = AutoTokenizer.from_pretrained(models[1])
    try:
        records = choices.run_choice_task(
            decoder, tok, counter, "mc", items, repeats=2, warmup=1, source_decoder=source_decoder
        )
    finally:
        for h in hooks:
            h.remove()
    assert calls == {"model": 3 * 2 + 1, "source": 3 * 2 + 1}  # items x repeats + one warm-up pass each
    by = {r["metric"]: r for r in records}
    assert all(r["task"] == "mc" and r["mode"] == "loglikelihood" for r in records)
    assert len(by["paired_speedup"]["repeats"]) == 2 and len(by["items_per_second"]["repeats"]) == 2
    model_tokens = source_tokens = chars = 0
    for item in items:
        ctx, opts = choices.encode_pair(tok, item.context, item.choices)
        sctx, sopts = choices.encode_pair(counter, item.context, item.choices)
        assert all(len(o) == 1 for o in opts + sopts)  # lettered answers: one token each, scored in one pass
        model_tokens += len(ctx) + len(opts)
        source_tokens += len(sctx) + len(sopts)
        chars += len(item.context) + sum(len(c) for c in item.choices)
    assert (by["total_tokens"]["value"], by["total_source_tokens"]["value"]) == (model_tokens, source_tokens)
    assert by["total_chars"]["value"] == chars
    assert model_tokens < source_tokens  # the Thai options are shorter in the expanded vocabulary
    assert by["token_ratio_bound"]["value"] == pytest.approx(source_tokens / model_tokens)
    seconds = by["seconds"]["repeats"]
    assert by["items_per_second"]["repeats"] == pytest.approx([3 / s for s in seconds])


def _cli_args(models, pairs, mc_folder, out):
    args = ["--model", str(models[0]), "--source-tokenizer", str(models[1]), "--pairs", str(pairs), "--lang", "th"]
    args += ["--n", "2", "--max-new-tokens", "3", "--repeats", "2", "--batch-size", "2", "--decodings", "greedy"]
    return [*args, "--paired", "--choice-data", f"mc={mc_folder}", "--cell", "{}", "--threads", "1", "--out", str(out)]


class Stop(Exception):
    pass


@pytest.mark.slow  # three speed runs of the command line: 2-6 s of CPU
def test_records_saved_per_task_and_a_rerun_skips_them(tmp_path, models, mc_folder, monkeypatch):
    """Stopped after its first unit (mt's generation), the step has saved that unit's records; run again it times
    only the other units, Source is loaded for the paired phase only, and the final JSON holds the saved records."""
    pairs = tmp_path / "mt.tsv"
    pairs.write_text("".join(f"{en}\t{th}\n" for en, th in PAIRS), encoding="utf-8")
    out = tmp_path / "speed.json"
    ran, loaded = [], []
    real_generation, real_load = speed_job.run_generation, speed_job.load_model
    monkeypatch.setattr(speed_job, "run_generation", lambda *a, **k: ran.append(a[3]) or real_generation(*a, **k))
    monkeypatch.setattr(speed_job, "load_model", lambda path, *a: loaded.append(str(path)) or real_load(path, *a))

    def stop_after_first(key):
        raise Stop(key)

    monkeypatch.setattr(speed_job, "_unit_finished", stop_after_first)
    with pytest.raises(Stop, match=r"mt\.generate"):
        speed_cli.main(_cli_args(models, pairs, mc_folder, out))
    partial = speed_job.partial_path(out)
    assert not out.exists() and partial.name == "speed.partial.json"
    saved = json.loads(partial.read_text(encoding="utf-8"))["units"]
    assert list(saved) == ["mt.generate"] and {r["mode"] for r in saved["mt.generate"]} == {"generate"}
    assert ran == ["mt"] and loaded == [str(models[0])]  # Source not loaded before its phase

    monkeypatch.setattr(speed_job, "_unit_finished", lambda key: None)
    ran.clear(), loaded.clear()
    speed_cli.main(_cli_args(models, pairs, mc_folder, out))
    assert ran == [] and loaded == [str(models[0]), str(models[1])]  # mt's generation not redone
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["details"]["units"] == ["mt.generate", "mt.paired", "mc.paired"]
    assert result["details"]["choice_fewshot"] == {"mc": 3}  # the harness's default: 3-shot contexts timed
    limits = {"max_length": 2048, "source_max_length": 2048, "items_truncated": 0, "source_items_truncated": 0}
    assert result["details"]["choice_limits"] == {"mc": limits}
    assert [r for r in result["records"] if r["mode"] == "generate"] == saved["mt.generate"]
    paired = {(r["task"], r["mode"]) for r in result["records"] if r["metric"] == "paired_speedup"}
    assert paired == {("mt", "teacher_forced"), ("mc", "loglikelihood")}
    assert not partial.exists()

    # a partial file of other arguments is not reused
    partial.write_text(json.dumps({"arguments": {"n": 99}, "units": {"mt.generate": []}}), encoding="utf-8")
    speed_cli.main(_cli_args(models, pairs, mc_folder, out))
    assert ran == ["mt"]


def test_kv_cache_bytes_from_a_model_config():
    from transformers import GemmaConfig, LlamaConfig

    from workflow_scripts.gpu.shape import MODELS

    llama2 = LlamaConfig(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=32)
    assert plan.kv_bytes_per_token(llama2) == plan.kv_bytes_per_token(MODELS["llama2-7b"]) == 32 * 32 * 128 * 2 * 2
    gemma = GemmaConfig(num_hidden_layers=42, num_attention_heads=16, num_key_value_heads=8, head_dim=256)
    assert plan.kv_bytes_per_token(gemma) == plan.kv_bytes_per_token(MODELS["gemma2-9b"]) == 42 * 8 * 256 * 2 * 2
    # sum at batch 8 with 5 beams: 40 sequences of 4,096 + 128 tokens; Llama-2's KV cache alone is over 80 GiB
    memory = plan.generation_memory(MODELS["llama2-7b"], "sum", "paper", 8, 128)
    assert memory["kv_cache"] == pytest.approx(40 * 4224 * 524288 / plan.GIB) and memory["kv_cache"] > 80


def _paper_config() -> dict:
    from tests.conftest import REPO
    from workflow_scripts.plan.checks.schema import fill_defaults

    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text(encoding="utf-8"))
    fill_defaults(config, REPO / "schemas/config.schema.yaml")
    return config


def test_planning_refuses_a_speed_setting_that_cannot_fit():
    from workflow_scripts.plan.models import describe_models

    config = _paper_config()
    assert plan.problems(config) == []  # the paper grid's speed settings fit an 80 GB card
    for model in describe_models(config).values():  # Llama-2-7B, Llama-3-8B, Gemma-2-9B
        work = plan.workload(config["evaluation"]["speed"], ["mt", "sum", "mc", "gmmlu"], model.shape)
        assert work["peak_gib"] < 80
        assert plan.runtime_minutes(config, model) > work["minutes"]
    every = copy.deepcopy(config)
    every["evaluation"]["speed"]["large_batch_decodings"] = None  # the paper's 5 beams at batch 8 too
    found = plan.problems(every)
    assert found and all(
        p.startswith("evaluation.speed.batch_size or evaluation.speed.large_batch_decodings") for p in found
    )
    assert {p.split("model ")[1].split(" ")[0] for p in found} == {"llama2", "gemma2"}  # Llama-3's GQA cache fits
    assert [p.split("model ")[1].split(" ")[0] for p in plan.problems(every, "141GB")] == ["gemma2"]


def test_mc_speed_in_the_tables(tmp_path):
    """mc records (no generation) appear under the plain metric names next to mt's generation headline; Table 4b's
    speed-up of mc is the characters-per-second ratio (the time ratio on the same items), not the own-token one."""
    from workflow_scripts import tables
    from workflow_scripts.paper.specs import cell_metric
    from workflow_scripts.speed import units

    def write(method, mt_rate, mc_seconds, mc_tokens):
        cell = {"model": "m", "language": "th", "method": method, "label": method}
        gen = {"mode": "generate", "decoding": "greedy", "batch_size": 1}
        records = [{"task": "mt", "metric": "tokens_per_second", **units.summary([mt_rate]), **gen}]
        counts = units.TextCounts(chars=1000, tokens=mc_tokens, source_tokens=500)
        timing = {"seconds": mc_seconds, "paired": []}
        records += choices.choice_records("mc", timing, counts, n_items=4)
        path = tmp_path / f"{method}.json"
        path.write_text(json.dumps({"cell": cell, "records": records, "details": {}}), encoding="utf-8")
        return path

    frame, _ = tables.build_tables([write("Source", 10.0, [2.0, 2.0], 500), write("Mean", 12.0, [1.0, 1.0], 250)])
    mean = frame[(frame["method"] == "Mean") & (frame["task"] == "mc")].set_index("metric")
    assert mean.loc["speedup_chars", "value"] == pytest.approx(2.0)  # half the seconds on the same items
    assert mean.loc["speedup", "value"] == pytest.approx(1.0)  # own tokens: half as many in half the time
    assert mean.loc["items_per_second", "value"] == pytest.approx(4.0)
    assert mean.loc["token_ratio_bound", "value"] == pytest.approx(2.0)
    assert cell_metric("mc", "speedup") == cell_metric("gmmlu", "speedup") == "speedup_chars"
    assert cell_metric("mt", "speedup") == "speedup"
    plain = frame[(frame["method"] == "Mean") & (frame["task"] == "mt")].set_index("metric")
    assert plain.loc["speedup", "value"] == pytest.approx(1.2)  # mt keeps its generation headline


@pytest.mark.slow  # a Snakemake dry run: 2-6 s of CPU
def test_a_speed_setting_that_cannot_fit_stops_planning(tmp_path):
    """Planning the paper grid with the paper's 5 beams also at batch 8 stops before any job, naming the keys."""
    from tests.conftest import snakemake, tiny_config

    config = tiny_config(tmp_path, "configs/paper.yaml")
    grid = yaml.safe_load(config.read_text())
    grid["evaluation"]["speed"]["large_batch_decodings"] = None
    config.write_text(yaml.safe_dump(grid))
    result = snakemake(["-n", "--quiet", "rules", "--configfile", str(config)], tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "speed settings do not fit the GPU" in output
    assert "evaluation.speed.batch_size or evaluation.speed.large_batch_decodings" in output
    assert not (tmp_path / "results").exists()
