"""Serving speed with vLLM (export.speed.engine vllm, docs/serving.md), tested without vLLM: the engine is a test
double (``FakeLLM``, ``fake_vllm``) standing in for ``vllm.LLM`` and ``vllm.SamplingParams``, so these tests check the
project's side (sampling parameters, pairing with Source, records, planning), not that vLLM runs. The run on a GPU is
tools/gpu_vllm.sh."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import snakemake, tiny_config
from workflow_scripts.plan.build import vllm_problems
from workflow_scripts.serve import speed as S
from workflow_scripts.speed.measure import Item
from workflow_scripts.speed.table import flatten, variant_name


class Clock:
    """A fake perf_counter: the engines advance it by the seconds their steps cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeLLM:
    """A test double of vllm.LLM: ``generate`` returns ``max_tokens`` ids (token 4000) per prompt, whatever the EOS,
    and advances the clock by ``step`` seconds a token; it records the calls."""

    def __init__(self, clock: Clock, step: float, name: str, calls: list, **kwargs) -> None:
        self.clock, self.step, self.name, self.calls, self.kwargs = clock, step, name, calls, kwargs

    def generate(self, prompts, params, use_tqdm=True):
        assert use_tqdm is False and len(prompts) == 1
        self.calls.append((self.name, tuple(prompts[0]["prompt_token_ids"])))
        self.clock.now += self.step * params.max_tokens
        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=(4000,) * params.max_tokens)])]


class CharTokenizer:
    """Each id decodes to ``width`` characters; text tokenizes to one id per character (Source's tokenizer)."""

    def __init__(self, width: int) -> None:
        self.width = width

    def decode(self, ids, skip_special_tokens=False) -> str:
        return "ก" * self.width * len(ids)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict:
        return {"input_ids": list(range(len(text)))}


def params(n: int) -> SimpleNamespace:
    return SimpleNamespace(temperature=0, max_tokens=n, ignore_eos=True)


def test_sampling_params_are_fixed_length_greedy():
    fake_vllm = SimpleNamespace(SamplingParams=lambda **kw: kw)
    assert S.sampling_params(fake_vllm, 32) == {"temperature": 0, "max_tokens": 32, "ignore_eos": True}


@pytest.mark.parametrize(("cell_step", "paired"), [(0.01, 2.0), (0.02, 1.0)])
def test_fixed_generation_pairs_the_cell_with_source_item_by_item(monkeypatch, cell_step, paired):
    clock, calls = Clock(), []
    monkeypatch.setattr(S.time, "perf_counter", clock)
    cell = S.VllmDecoder(FakeLLM(clock, cell_step, "cell", calls), params(8))
    source = S.VllmDecoder(FakeLLM(clock, 0.01, "source", calls), params(8))
    prompts, source_prompts = [[1], [2], [3]], [[11], [12], [13]]
    timing = S.time_fixed_generation(
        cell, source, CharTokenizer(2), CharTokenizer(1), prompts, source_prompts, repeats=2, warmup=1
    )
    # warm-up: one item each; then per repeat r, item i: Source first when i + r is odd
    order = [name for name, _ in calls[2:]]
    assert order[:6] == ["cell", "source", "source", "cell", "cell", "source"]
    assert order[6:] == ["source", "cell", "cell", "source", "source", "cell"]
    assert {p for name, p in calls if name == "source"} == {(11,), (12,), (13,)}
    # the cell's 24 tokens are 48 characters, 48 Source tokens: twice Source's text per step
    assert timing["paired"] == pytest.approx([paired, paired])
    records = S.fixed_generation_records(timing, 8)
    by = {r["metric"]: r for r in records}
    assert by["token_ratio_bound"]["value"] == 2.0 and by["total_tokens"]["value"] == 24
    assert by["model_steps"]["value"] == 24 and by["max_new_tokens"]["value"] == 8
    assert by["paired_speedup"]["value"] == pytest.approx(paired)
    assert by["seconds"]["value"] == pytest.approx(24 * cell_step)
    assert {variant_name(r) for r in records} == {"vllm.generate_fixed.greedy.b1"}


def test_vllm_records_stay_under_their_own_variant_in_the_tables():
    timing = {"per_repeat": [(S.TextCounts(10, 4, 8), 1.0)], "steps": 4, "paired": [1.9]}
    rows = flatten(S.fixed_generation_records(timing, 4))
    assert all(r["metric"].endswith("@vllm.generate_fixed.greedy.b1") for r in rows)  # no plain headline rows
    assert {"paired_speedup@vllm.generate_fixed.greedy.b1", "token_ratio_bound@vllm.generate_fixed.greedy.b1"} <= {
        r["metric"] for r in rows
    }


def test_measure_vllm_opens_both_folders_and_times_the_mt_prompts(monkeypatch, smollm2_tokenizer_dir, tmp_path):
    clock, calls, engines = Clock(), [], []
    monkeypatch.setattr(S.time, "perf_counter", clock)

    def llm(**kwargs):
        engines.append(kwargs)
        return FakeLLM(clock, 0.01, kwargs["model"], calls, **kwargs)

    fake_vllm = SimpleNamespace(LLM=llm, SamplingParams=lambda **kw: SimpleNamespace(**kw))
    source = Path(smollm2_tokenizer_dir)
    items = [Item("English: cat\nThai:", "แมว"), Item("English: dog\nThai:", "หมา")]
    records = S.measure_vllm(source, source, items, max_new_tokens=4, repeats=2, warmup=0, vllm=fake_vllm)
    assert [e["model"] for e in engines] == [str(source), str(source)]
    assert all(e["gpu_memory_utilization"] == S.VLLM_MEMORY_SHARE for e in engines)
    assert len(calls) == 2 * 2 * 2  # 2 items x 2 engines x 2 repeats
    by = {r["metric"]: r for r in records}
    assert by["total_tokens"]["value"] == 8 and by["paired_speedup"]["value"] == pytest.approx(1.0)
    assert {r["engine"] for r in records} == {"vllm"} and "gguf" not in records[0]


def test_planning_refuses_vllm_without_vllm_or_a_gpu():
    config = {"export": {"speed": {"engine": "vllm"}}}
    local = SimpleNamespace(default_resources=None, overwrite_resources={})
    problems = vllm_problems(config, local, installed=False, local_gpu=False)
    assert len(problems) == 2
    assert "vllm is not installed in this environment" in problems[0]
    assert "rule serve_speed has no GPU" in problems[1] and "set-resources: serve_speed" in problems[1]
    cluster = SimpleNamespace(default_resources=None, overwrite_resources={"serve_speed": {"gpu": 1}})
    assert vllm_problems(config, cluster, installed=True, local_gpu=False) == []
    assert vllm_problems(config, local, installed=True, local_gpu=True) == []
    assert vllm_problems({"export": {"speed": {"engine": "llama.cpp"}}}, local, installed=False, local_gpu=False) == []


@pytest.mark.slow
def test_a_dry_run_with_vllm_here_is_refused_with_the_reason(tmp_path):
    config = tiny_config(tmp_path, export={"speed": {"engine": "vllm"}})
    done = snakemake(["-n", "--configfile", str(config)], cwd=tmp_path)
    message = done.stdout + done.stderr
    assert done.returncode != 0
    assert "serving speed cannot run on vLLM here" in message and "rule serve_speed has no GPU" in message
