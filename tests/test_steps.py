"""Where outputs lie (workflow_scripts/plan/paths.py) and each evaluation step's files and arguments
(workflow_scripts/plan/steps.py): one definition that the per-task rules, evaluate_cell and the tables read."""

from __future__ import annotations

import shlex
from types import SimpleNamespace

from workflow_scripts.plan import paths
from workflow_scripts.plan.grid import Method
from workflow_scripts.plan.steps import CELL_SHARED, Steps

SOURCE = Method(init="none", vocab="expand", k=None, procedure="none", objective=None, seq_len=None, posthoc="none")
ELCHAT = Method(init="Mean", vocab="expand", k=100, procedure="2x2LS", objective="clm", seq_len=128, posthoc="elchat")
GENERATION = {"n": 5, "max_new_tokens": 16, "batch_size": 2, "decoding": "greedy", "runs": 1}
SPEED = {
    "n": 4,
    "max_new_tokens": 8,
    "repeats": 1,
    "warmup": 0,
    "batch_size": 2,
    "decodings": ["greedy"],
    "teacher_forced": True,
    "paired": True,
    "reference_chars": None,
    "large_batch_decodings": [],
}


def steps(tmp_path, tasks=("ppl", "mt", "mc", "gmmlu", "gmmlu_en", "speed")) -> Steps:
    config = {
        "seed": 0,
        "models": {"tiny": {"size": "demo"}},
        "languages": {"th": {"corpus": {"kind": "l10n"}}},
        "tokenizer": {"aux_vocab_size": 800},
        "mumo": {"k": 3, "init": "Multi"},
        "evaluation": {
            "tasks": list(tasks),
            "items": "shuffle",
            "datasets": {"global_mmlu": str(tmp_path / "gmmlu"), "mmlu": str(tmp_path / "mmlu")},
            "ppl": {"n": 10, "batch_size": 2},
            "mt": GENERATION,
            "mc": {"source": "l10n_proxy", "fewshot": 3, "batch_size": 2, "n": 10},
            "gmmlu": {"fewshot": 5, "batch_size": 2, "n": None},
            "speed": SPEED,
        },
    }
    (tmp_path / "gmmlu").mkdir()
    (tmp_path / "mmlu").mkdir()
    layout = paths.Layout(config, {m.slug: m for m in (SOURCE, ELCHAT)}, "results/run", "results/downloads")
    return Steps(config, layout, {m.slug: m for m in (SOURCE, ELCHAT)})


def wildcards(method: Method) -> SimpleNamespace:
    return SimpleNamespace(model="tiny", lang="th", method=method.slug)


def test_a_path_function_gives_the_rule_pattern_the_job_file_and_a_glob(tmp_path):
    assert paths.eval_file(name="mt.json") == "<results>/{model}/{lang}/{method}/eval/mt.json"
    root = tmp_path / "run[1]"  # a folder whose name holds glob characters
    record = root / "tiny" / "th" / "Source" / "eval" / "speed.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    assert paths.eval_file("tiny", "th", "Source", "speed.json", str(root)) == str(record)
    assert paths.found(paths.eval_file("*", "*", "*", "speed.json", paths.glob_root(root))) == [record]


def test_evaluate_cell_passes_each_step_its_own_arguments_but_the_shared_ones(tmp_path):
    s = steps(tmp_path)
    for task in ("ppl", "mt", "mc", "speed"):
        step = s.step(task, wildcards(SOURCE))
        own, in_cell = shlex.split(step.command()), shlex.split(step.cell_command())
        assert own[own.index("--model") + 1] == step.inputs["model"]
        assert not set(CELL_SHARED) & set(in_cell)
        assert set(in_cell) <= set(own)


def test_every_input_file_of_a_step_is_an_argument(tmp_path):
    s = steps(tmp_path)
    for task in ("ppl", "mt", "mc", "gmmlu", "speed"):
        step = s.step(task, wildcards(SOURCE))
        argv = shlex.split(step.command())
        for name, value in step.inputs.items():
            files = value if isinstance(value, list) else [value]
            assert all(any(f in a for a in argv) for f in files), (task, name, files)


def test_each_log_likelihood_task_runs_as_itself(tmp_path):
    s = steps(tmp_path)
    argv = {t: shlex.split(s.step(t, wildcards(SOURCE)).command()) for t in ("mc", "gmmlu", "gmmlu_en")}
    assert {t: a[a.index("--task") + 1] for t, a in argv.items()} == {"mc": "mc", "gmmlu": "gmmlu", "gmmlu_en": "gmmlu"}
    assert argv["gmmlu_en"][argv["gmmlu_en"].index("--lang", 3) + 1] == "en"  # the retention check reads English
    assert argv["gmmlu_en"][argv["gmmlu_en"].index("--data") + 1] == str(tmp_path / "mmlu")


def test_an_elchat_cell_is_evaluated_with_its_chat_template(tmp_path):
    s = steps(tmp_path)
    assert "--chat-template" in s.step("mt", wildcards(ELCHAT)).cell_command()
    assert "--chat-template" not in s.step("mt", wildcards(SOURCE)).command()
    assert s.model(wildcards(ELCHAT)) == paths.trained_model("tiny", "th", ELCHAT.slug, "results/run")


def test_the_lapt_curve_reads_the_ppl_steps_text_n_and_batch_size(tmp_path):
    s, wc = steps(tmp_path), wildcards(ELCHAT)
    ppl, curve = s.step("ppl", wc), s.curve(wc, 4, "out dir/curve.tsv")
    assert curve.inputs == {"text": ppl.inputs["text"]}
    args = shlex.split(curve.command())
    ppl_args = shlex.split(ppl.command())
    for flag in ("--text", "--n", "--batch-size"):
        assert args[args.index(f"--curve-{flag[2:]}") + 1] == ppl_args[ppl_args.index(flag) + 1]
    assert args[args.index("--curve-points") + 1] == "4" and args[-2:] == ["--curve", "out dir/curve.tsv"]
