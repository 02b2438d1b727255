"""The speed package: units and the token-count bound on hand-made tokenizers, teacher forcing's step count, and the
records of a measurement on the tiny random Llama (mechanics; no timing is asserted)."""

from __future__ import annotations

import pytest
import torch

from workflow_scripts import speed
from workflow_scripts.speed import __main__ as speed_cli
from workflow_scripts.speed import items as speed_items
from workflow_scripts.speed import measure, units
from workflow_scripts.speed.decoders import HFDecoder

PAIRS = [
    ("Open the file.", "เปิดแฟ้ม"),
    ("Save the document as a new file.", "บันทึกเอกสารเป็นแฟ้มใหม่"),
    ("The selected cells are protected.", "เซลล์ที่เลือกถูกป้องกัน"),
]


def char_bpe(merges: list[tuple[str, str]]):
    """A BPE over the letters a, b, c (no pre-tokenizer) with the given merges, as a transformers tokenizer."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"a": 0, "b": 1, "c": 2}
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab=vocab, merges=merges)))


def test_units_and_bound_on_hand_made_tokenizers():
    source, target = char_bpe([]), char_bpe([("a", "b")])
    text = "ababc"
    assert target(text)["input_ids"] == [3, 3, 2]
    counts = units.count_text(text, len(target(text)["input_ids"]), source)
    assert counts == units.TextCounts(chars=5, tokens=3, source_tokens=5)
    assert units.bound(counts) == pytest.approx(5 / 3)
    # 2 seconds: 2.5 characters, 2.5 source tokens and 1.5 own tokens per second
    assert units.rates(counts, 2.0) == {
        "chars_per_second": 2.5,
        "source_tokens_per_second": 2.5,
        "tokens_per_second": 1.5,
    }
    assert counts + counts == units.TextCounts(10, 6, 10)
    # ids 3 and up are new (the source has 3 tokens): 2 of 5
    assert units.new_token_share([[0, 3], [3, 2, 1]], 3) == pytest.approx(0.4)
    assert units.summary([3.0, 1.0, 2.0]) == {"value": 2.0, "min": 1.0, "max": 3.0}
    assert units.ratio_range({"value": 4, "min": 3, "max": 6}, {"value": 2, "min": 1.5, "max": 3}) == (2.0, 1.0, 4.0)
    with pytest.raises(ValueError, match="nothing was timed"):
        units.rates(counts, 0.0)


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    from workflow_scripts.inference import load_model

    torch.set_num_threads(1)
    model, tok = load_model(tiny_llama_dir)
    return model, tok, HFDecoder(model, tok)


def test_teacher_forcing_runs_one_step_per_target_token(tiny):
    model, tok, decoder = tiny
    calls = []  # an independent count: the inner decoder's forward passes and their input widths
    hook = model.model.register_forward_pre_hook(
        lambda m, args, kwargs: calls.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        prompt = tok("แปลภาษาอังกฤษเป็นไทย:\nOpen the file. =")["input_ids"]
        target = tok(" เปิดแฟ้ม", add_special_tokens=False)["input_ids"]
        forced = decoder.teacher_force(prompt, target)
    finally:
        hook.remove()
    assert len(target) > 3
    assert forced.steps == len(target)
    assert calls == [len(prompt)] + [1] * len(target)  # one prefill, then one token per step
    assert forced.seconds > 0 and forced.prefill_seconds > 0
    assert 0 <= forced.matches <= len(target)


def test_greedy_generation_steps_equal_generated_tokens(tiny):
    _, tok, decoder = tiny
    prompts = [tok(speed.measure.Item(f"{en} =", th).prompt)["input_ids"] for en, th in PAIRS]
    for prompt in prompts:
        (ids,), steps = decoder.generate([prompt], 6, decoding="greedy", seed=0)
        assert 1 <= len(ids) <= 6 and steps == len(ids)
    # the paper's decoding is sampled, and seeded: the same seed gives the same output
    first = decoder.generate(prompts[:2], 5, decoding="paper", seed=3)
    assert decoder.generate(prompts[:2], 5, decoding="paper", seed=3) == first


def test_run_task_records(tiny, smollm2_tokenizer_dir):
    from transformers import AutoTokenizer

    _, tok, decoder = tiny
    source = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    items = [measure.Item(f"แปลภาษาอังกฤษเป็นไทย:\n{en} =", th) for en, th in PAIRS]
    settings = measure.Settings(max_new_tokens=4, repeats=2, warmup=1, batch_sizes=(1, 2), decodings=("greedy",))
    records = measure.run_task(decoder, tok, source, "mt", items, settings)
    assert all(r["task"] == "mt" and {"metric", "value", "mode", "decoding", "batch_size"} <= set(r) for r in records)
    variants = {(r["mode"], r["decoding"], r["batch_size"]) for r in records}
    assert variants == {("generate", "greedy", 1), ("generate", "greedy", 2), ("teacher_forced", "greedy", 1)}
    by = {(r["mode"], r["batch_size"], r["metric"]): r for r in records}
    for mode, bs in variants and [("generate", 1), ("generate", 2), ("teacher_forced", 1)]:
        seconds = by[(mode, bs, "seconds")]["repeats"]
        assert len(seconds) == 2  # every repeat recorded
        for metric, total in units.UNITS.items():
            rec = by[(mode, bs, metric)]
            count = by[(mode, bs, f"total_{total}")]["value"]
            assert rec["repeats"] == pytest.approx([count / s for s in seconds])
            assert rec["min"] <= rec["value"] <= rec["max"]
    # Source measured against itself: the same tokenizer, so the bound is 1 on the references
    assert by[("teacher_forced", 1, "token_ratio_bound")]["value"] == 1.0
    targets = [tok(f" {th}", add_special_tokens=False)["input_ids"] for _, th in PAIRS]
    assert by[("teacher_forced", 1, "total_tokens")]["value"] == sum(map(len, targets))
    assert by[("teacher_forced", 1, "model_steps")]["value"] == sum(map(len, targets))
    assert by[("teacher_forced", 1, "total_chars")]["value"] == sum(len(f" {th}") for _, th in PAIRS)
    # greedy at batch size 1: one forward pass per generated token
    assert by[("generate", 1, "model_steps")]["value"] == by[("generate", 1, "total_tokens")]["value"]
    assert by[("generate", 1, "input_new_token_share")]["value"] == 0.0  # no new tokens in the source vocabulary


@pytest.mark.slow  # the speed command line, all tasks: 2-6 s of CPU
def test_cli_on_an_expanded_model(tmp_path, smollm2_tokenizer_dir):
    """The rule's command line on a model whose vocabulary adds Thai tokens: the bound on the references is the
    source ÷ expanded token count of the same text, and the new-token share of the prompts counts ids >= 49,152."""
    import json

    from conftest import SMOL_MERGES, expand_tokenizer, hand_rows, tiny_model
    from transformers import AutoTokenizer

    from workflow_scripts.prompts import mt_query

    tok_dir = expand_tokenizer(smollm2_tokenizer_dir, tmp_path / "tok", SMOL_MERGES)
    target_tok, source_tok = (
        AutoTokenizer.from_pretrained(tok_dir),
        AutoTokenizer.from_pretrained(smollm2_tokenizer_dir),
    )
    model_dir = tiny_model(tok_dir, tmp_path / "model", hand_rows(len(target_tok), 16, 3, 7) / 7, None)
    source_dir = tiny_model(smollm2_tokenizer_dir, tmp_path / "source", hand_rows(len(source_tok), 16, 3, 7) / 7, None)
    pairs = tmp_path / "mt.tsv"
    pairs.write_text("".join(f"{en}\t{th}\n" for en, th in PAIRS), encoding="utf-8")
    cell = {"model": "tiny", "language": "th", "method": "Mean", "label": "Mean"}
    speed_cli.main(
        [
            "--model",
            str(model_dir),
            "--source-tokenizer",
            str(source_dir),
            "--pairs",
            str(pairs),
            "--lang",
            "th",
            "--n",
            "2",
            "--max-new-tokens",
            "3",
            "--repeats",
            "2",
            "--batch-size",
            "2",
            "--decodings",
            "greedy",
            "paper",
            "--paired",
            "--cell",
            json.dumps(cell),
            "--threads",
            "1",
            "--out",
            str(tmp_path / "speed.json"),
        ]
    )
    result = json.loads((tmp_path / "speed.json").read_text(encoding="utf-8"))
    assert result["cell"] == cell and result["details"]["n"] == 2 and result["details"]["repeats"] == 2
    assert (result["details"]["n_requested"], result["details"]["n_used"]) == (2, 2)
    assert {"device", "torch_threads", "torch", "cpu_count"} <= set(result["details"]["hardware"])
    by = {(r["mode"], r["decoding"], r["batch_size"], r["metric"]): r for r in result["records"]}
    assert {k[:3] for k in by} == {("generate", d, b) for d in ("greedy", "paper") for b in (1, 2)} | {
        ("teacher_forced", "greedy", 1)
    }
    targets = [f" {th}" for _, th in PAIRS[:2]]
    source_n = sum(len(source_tok(t, add_special_tokens=False)["input_ids"]) for t in targets)
    target_n = sum(len(target_tok(t, add_special_tokens=False)["input_ids"]) for t in targets)
    assert target_n < source_n  # กา and ก are one token each now
    assert by[("teacher_forced", "greedy", 1, "token_ratio_bound")]["value"] == pytest.approx(source_n / target_n)
    prompts = [target_tok(mt_query(en, "th"))["input_ids"] for en, _ in PAIRS[:2]]
    new = sum(i >= len(source_tok) for p in prompts for i in p)
    assert new > 0  # อังกฤษ has ก
    share = by[("generate", "greedy", 1, "input_new_token_share")]["value"]
    assert share == pytest.approx(new / sum(map(len, prompts)))
    assert all(len(by[(*k[:3], "seconds")]["repeats"]) == 2 for k in by)
    # --paired: Source (the source folder's model) teacher-forced next to this one, one ratio per repeat
    paired = by[("teacher_forced", "greedy", 1, "paired_speedup")]
    assert len(paired["repeats"]) == 2 and paired["min"] <= paired["value"] <= paired["max"]
    assert not any(k[3] == "paired_speedup" and k[0] == "generate" for k in by)


def _speed_file(path, method: str, chars: list[float], tokens: list[float], bound: float, generate_bound=None):
    """A speed.json of one cell: both modes share ``bound`` unless ``generate_bound`` sets the free generation's."""
    import json

    cell = {"model": "m", "language": "th", "method": method, "label": method}
    records = []
    for mode in ("generate", "teacher_forced"):
        variant = {"mode": mode, "decoding": "greedy", "batch_size": 1}
        for metric, reps in (
            ("chars_per_second", chars),
            ("source_tokens_per_second", chars),
            ("tokens_per_second", tokens),
        ):
            summary = units.summary(reps)
            records.append({"task": "mt", "metric": metric, **summary, "repeats": reps, **variant})
        own = generate_bound if mode == "generate" and generate_bound is not None else bound
        records.append({"task": "mt", "metric": "token_ratio_bound", "value": own, **variant})
        if mode == "teacher_forced" and method != "Source":
            records.append({"task": "mt", "metric": "paired_speedup", **units.summary([2.0, 2.25, 2.5]), **variant})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cell": cell, "records": records, "details": {}}), encoding="utf-8")
    return path


def test_a_generation_without_text_has_no_ratio_to_its_bound(tmp_path):
    """A model that ends its free generation at once decodes to no text: its bound (Source tokens ÷ its tokens) is 0,
    and the table leaves that unit's ÷ bound out instead of dividing by it; the teacher-forced unit keeps its own."""
    from workflow_scripts import tables

    focus = _speed_file(tmp_path / "focus.json", "FOCUS", [0.0, 0.0, 0.0], [4.0, 4.5, 5.0], 2.5, generate_bound=0.0)
    source = _speed_file(tmp_path / "source.json", "Source", [10.0, 8.0, 12.0], [20.0, 16.0, 24.0], 1.0)
    frame, _ = tables.build_tables([source, focus])
    rows = frame[frame["method"] == "FOCUS"].set_index("metric")
    assert rows.loc["token_ratio_bound@generate.greedy.b1", "value"] == 0.0
    assert rows.loc["speedup_source_tokens@generate.greedy.b1", "value"] == 0.0
    assert "speedup_over_bound@generate.greedy.b1" not in rows.index
    assert rows.loc["paired_speedup_over_bound@teacher_forced.greedy.b1", "value"] == pytest.approx(2.25 / 2.5)


def test_tables_speedups_with_spread_and_bound(tmp_path):
    from workflow_scripts import tables

    files = [
        _speed_file(tmp_path / "source.json", "Source", [10.0, 8.0, 12.0], [20.0, 16.0, 24.0], 1.0),
        _speed_file(tmp_path / "mean.json", "Mean", [20.0, 18.0, 24.0], [10.0, 9.0, 12.0], 2.5),
    ]
    frame, md = tables.build_tables(files)
    mean = frame[frame["method"] == "Mean"].set_index("metric")
    tf = "@teacher_forced.greedy.b1"
    # median 20 / 10; range: 18 / 12 .. 24 / 8
    assert mean.loc["speedup_chars" + tf, ["value", "min", "max"]].tolist() == pytest.approx([2.0, 1.5, 3.0])
    assert mean.loc["speedup" + tf, "value"] == pytest.approx(10 / 20)
    assert mean.loc["speedup_over_bound" + tf, "value"] == pytest.approx(2.0 / 2.5)
    assert mean.loc["paired_speedup_over_bound" + tf, "value"] == pytest.approx(2.25 / 2.5)
    # the headline (generation, batch 1) also under the plain names the paper views read
    assert mean.loc["speedup_chars", "value"] == pytest.approx(2.0)
    assert mean.loc["chars_per_second", ["value", "min", "max"]].tolist() == [20.0, 18.0, 24.0]
    assert "chars_per_second" + tf in mean.index and "chars_per_second@generate.greedy.b1" in mean.index
    assert "| Thai | Mean |" in md
    assert (
        "| m | Thai | Mean | translation | teacher-forced, greedy, batch 1 | 20.0 [18.0–24.0] | 2.00x [1.50–3.00] |"
        in md
    )


@pytest.mark.slow
def test_gpu_bench_tiny(tmp_path):
    """The prepared H200 script runs end to end in its tiny CPU mode and writes what the README reads."""
    import json

    from tools import gpu_bench

    out = tmp_path / "bench.json"
    gpu_bench.main(
        [
            "--tiny",
            "--out",
            str(out),
            "--models",
            "llama3-8b",
            "gemma2-9b",
            "--procedures",
            "2-stage",
            "--seq-lens",
            "8",
            "--repeats",
            "1",
        ]
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    decoding = [(d["model"], d["vocab_size"], d["steps"]) for d in result["decoding"]]
    assert decoding == [(m, 512 + k, 16) for m in ("llama3-8b", "gemma2-9b") for k in (0, 100, 5000)]
    training = [(t["model"], t["stage"], t["objective"], t["seq_len"]) for t in result["training"]]
    assert training == [
        (m, s, o, 8) for m in ("llama3-8b", "gemma2-9b") for s in ("embeddings", "LoRA") for o in ("clm", "mtp")
    ]
    assert all(t["step_seconds"] > 0 and t["estimate_step_seconds"] > 0 for t in result["training"])
    # 2-stage's first stage trains only the embeddings and the head (tied in Gemma-2): (512 + 100) x 64 each
    first = {
        t["model"]: t["trainable_parameters"]
        for t in result["training"]
        if t["stage"] == "embeddings" and t["objective"] == "clm"
    }
    assert first == {"llama3-8b": 2 * 612 * 64, "gemma2-9b": 612 * 64}
    if not torch.cuda.is_available():  # the real shapes refuse to run on the CPU
        with pytest.raises(SystemExit):
            gpu_bench.main(["--out", str(out)])


def test_job_settings_parse_the_command_line_once(capsys):
    """The command line becomes one checked settings object: the timing settings ``measure`` takes, a wrong count
    refused naming its option, and the fingerprint of a partial file (every option that changes a record, under its
    command-line name, as the options parsed)."""
    import json

    from workflow_scripts.speed.settings import JobSettings

    base = ["--model", "m", "--source-tokenizer", "s", "--pairs", "p", "--lang", "th", "--cell", "{}", "--out", "o"]
    job = speed_cli.parse_args([*base, "--batch-size", "8", "--decodings", "greedy", "paper", "--no-teacher-forced"])
    assert job.timing == measure.Settings(batch_sizes=(1, 8), decodings=("greedy", "paper"), teacher_forced=False)
    assert speed_cli.parse_args([*base, "--batch-size", "1"]).timing.batch_sizes == (1,)
    large = speed_cli.parse_args([*base, "--large-batch-decodings", "greedy"])
    assert large.large_batch_decodings == ("greedy",) and large.timing.large_batch_decodings == ("greedy",)

    options = vars(speed_cli.parser().parse_args([*base, "--threads", "2", "--log", "l"]))
    fingerprint = JobSettings.from_options(options).fingerprint()
    assert list(fingerprint) == sorted(fingerprint)
    parsed = {k: v for k, v in options.items() if k not in ("log", "threads", "out")}
    assert json.loads(json.dumps(fingerprint)) == {**parsed, "choice_data": {}, "choice_fewshot": {}}

    for key, value, message in (
        ("repeats", 0, "--repeats must be at least 1, got 0"),
        ("batch_size", 0, "--batch-size must be at least 1, got 0"),
        ("warmup", -1, "--warmup and --reference-chars must be at least 0, got -1, 0"),
        ("choice_data", ["sum=x"], "--choice-data takes TASK=FOLDER with TASK one of"),
    ):
        with pytest.raises(ValueError, match=message):
            JobSettings.from_options({**options, key: value})
    with pytest.raises(SystemExit):
        speed_cli.parse_args([*base, "--max-new-tokens", "0"])
    assert "--max-new-tokens must be at least 1, got 0" in capsys.readouterr().err


def test_mt_items_use_the_harness_prompt_and_cut_references(tmp_path):
    pairs = tmp_path / "mt.tsv"
    pairs.write_text("Open the file\tเปิดแฟ้ม\nSave all\tบันทึกทั้งหมด\n", encoding="utf-8")
    from workflow_scripts.prompts import mt_query

    full = speed_items.mt_items(pairs, "th", None)
    cut = speed_items.mt_items(pairs, "th", 1, reference_chars=5)
    assert [i.target for i in full] == ["เปิดแฟ้ม", "บันทึกทั้งหมด"]
    assert [(i.prompt, i.target) for i in cut] == [(mt_query("Open the file", "th"), "เปิดแ")]


@pytest.mark.slow  # the speed command line on sum: 2-6 s of CPU
def test_sum_items_and_records_from_a_local_xlsum_folder(tmp_path, smollm2_tokenizer_dir):
    """sum is timed on the harness's sum prompts (the article cut to the prompt budget of the evaluated tokenizer),
    the summaries as references; its records carry task sum next to mt's."""
    import json

    from conftest import hand_rows, tiny_model
    from transformers import AutoTokenizer

    from workflow_scripts.harness.datasets import task_source, write_hub_layout
    from workflow_scripts.prompts import MAX_PROMPT_TOKENS, sum_query

    source = task_source("sum", "th")
    long_article = "ภาษาไทย " * 5000  # over the 4,096-token prompt budget
    rows = [{"text": "ข่าวสั้น วันนี้", "summary": "สรุปข่าว"}, {"text": long_article, "summary": "ยาว"}]
    folder = write_hub_layout(tmp_path / "xlsum", {source.subset: {source.split: rows}})
    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    items = speed_items.sum_items(folder, "th", None, reference_chars=4, tokenizer=tok)
    assert [i.target for i in items] == ["สรุป", "ยาว"]
    assert items[0].prompt == sum_query("ข่าวสั้น วันนี้", "th")
    assert MAX_PROMPT_TOKENS - 64 < len(tok(items[1].prompt)["input_ids"]) <= MAX_PROMPT_TOKENS
    assert len(speed_items.sum_items(folder, "th", 1)) == 1

    write_hub_layout(tmp_path / "short", {source.subset: {source.split: rows[:1]}})
    model_dir = tiny_model(smollm2_tokenizer_dir, tmp_path / "m", hand_rows(len(tok), 16, 3, 7) / 7, None)
    pairs = tmp_path / "mt.tsv"
    pairs.write_text("".join(f"{en}\t{th}\n" for en, th in PAIRS[:1]), encoding="utf-8")
    speed_cli.main(
        [
            "--model",
            str(model_dir),
            "--source-tokenizer",
            str(model_dir),
            "--pairs",
            str(pairs),
            "--lang",
            "th",
            "--max-new-tokens",
            "2",
            "--repeats",
            "1",
            "--batch-size",
            "1",
            "--cell",
            "{}",
            "--sum-data",
            str(tmp_path / "short"),
            "--out",
            str(tmp_path / "speed.json"),
        ]
    )
    result = json.loads((tmp_path / "speed.json").read_text(encoding="utf-8"))
    assert result["details"]["n_items"] == {"mt": 1, "sum": 1}
    tasks = {(r["task"], r["mode"]) for r in result["records"] if r["metric"] == "chars_per_second"}
    assert tasks == {(t, m) for t in ("mt", "sum") for m in ("generate", "teacher_forced")}


def test_paired_teacher_forcing_alternates_which_model_goes_first():
    from workflow_scripts.speed.decoders import Forced

    calls = []

    class Fake:
        def __init__(self, name, seconds):
            self.name, self.seconds = name, seconds

        def own_tokens(self, ids):
            return len(ids)

        def teacher_force(self, prompt, target):
            calls.append((self.name, prompt[0]))
            return Forced(steps=len(target), seconds=self.seconds, prefill_seconds=0.0, matches=0)

    class Tok:
        def decode(self, ids, skip_special_tokens=True):
            return "x" * len(ids)

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [0] * len(text)}

    model, source = Fake("model", 1.0), Fake("source", 3.0)
    timing = measure.time_teacher_forced(
        model, Tok(), Tok(), [[0], [1]], [[5, 6], [7]], repeats=2, warmup=0, baseline=(source, [[0], [1]], [[5], [7]])
    )
    assert calls == [
        ("model", 0),
        ("source", 0),
        ("source", 1),
        ("model", 1),  # repeat 0: item 1 Source first
        ("source", 0),
        ("model", 0),
        ("model", 1),
        ("source", 1),  # repeat 1: item 0 Source first
    ]
    assert timing["paired"] == [3.0, 3.0]  # Source's seconds ÷ the model's, per repeat


def test_newline_mask_marks_newline_tokens(tiny):
    from workflow_scripts.speed.decoders import newline_token_mask

    model, tok, _ = tiny
    mask = newline_token_mask(tok, model.get_output_embeddings().weight.shape[0])
    hello = tok(" Hello", add_special_tokens=False).input_ids[0]
    assert mask[198] and mask[tok.convert_tokens_to_ids("ĊĊ")]  # SmolLM2's "\n" (id 198) and "\n\n"
    assert not mask[hello]
    # the backend's decoding marks exactly the tokens transformers' own decoding does
    texts = tok.batch_decode([[i] for i in range(len(tok))], skip_special_tokens=False)
    assert mask[: len(tok)].tolist() == ["\n" in t for t in texts]
