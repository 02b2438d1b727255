"""Broken configs through the real Snakefile (`snakemake -n --configfile`): planning stops with one message naming
the key (and the line, for a duplicate key), before any job, and without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, snakemake, tiny_config

pytestmark = pytest.mark.slow  # each test is a Snakemake dry run (3-9 s)


def plan(tmp_path: Path, text: str | None = None, mutate=None) -> tuple[int, str]:
    """Dry-run the test config (mutated, or replaced by ``text``) in a fresh working directory: (exit code, stderr)."""
    path = tiny_config(tmp_path)
    if mutate is not None:
        config = yaml.safe_load(path.read_text())
        mutate(config)
        path.write_text(yaml.safe_dump(config))
    if text is not None:
        path.write_text(text)
    run = snakemake(["-n", "-q", "--configfile", str(path)], tmp_path)
    return run.returncode, run.stdout + run.stderr


def refused(tmp_path: Path, *needles: str, **kwargs) -> str:
    code, out = plan(tmp_path, **kwargs)
    assert code != 0, out
    assert "Traceback" not in out, out
    for needle in needles:
        assert needle in out, out
    return out


def test_the_shipped_default_still_plans():
    # in the repository: its package and corpus paths are relative to it (configs/paper.yaml, all hub names, plans
    # in tests/test_plan.py and tests/test_runs.py)
    run = snakemake(["-n", "-q", "--configfile", str(REPO / "config.yaml")], REPO)
    assert run.returncode == 0, run.stderr


def all_of(*mutations):
    """One mutation that applies each of ``mutations``: cases the schema reports independently share one dry run."""

    def mutate(config: dict) -> None:
        for m in mutations:
            m(config)

    return mutate


WHOLE_NUMBER_FLOATS = [
    (lambda c: c["data"].update(n_train=1000.0), "data.n_train", "(1000, not 1000.0)"),
    (lambda c: c["evaluation"]["ppl"].update(batch_size=8.0), "evaluation.ppl.batch_size", "(8, not 8.0)"),
    (lambda c: c["training"].update(max_steps=6.0), "training.max_steps", "(6, not 6.0)"),
    (lambda c: c["training"].update(micro_batch=2.0), "training.micro_batch", "(2, not 2.0)"),
    (lambda c: c["methods"][1].update(k=50.0), "methods[1].k", "(50, not 50.0)"),
]


def test_whole_number_floats_are_refused_where_an_integer_is_expected(tmp_path):
    out = refused(tmp_path, mutate=all_of(*(m for m, _, _ in WHOLE_NUMBER_FLOATS)))
    # one line each, naming the key and the value to write instead
    lines = [line for line in out.splitlines() if "without a decimal point" in line]
    assert len(lines) == len(WHOLE_NUMBER_FLOATS), out
    for _, key, shown in WHOLE_NUMBER_FLOATS:
        assert any(f"{key}: " in line and shown in line for line in lines), (key, out)


def test_true_is_not_an_integer(tmp_path):
    refused(tmp_path, "seed: True is not of type 'integer'", mutate=lambda c: c.update(seed=True))


def two_stage(config: dict, split: list[float]) -> None:
    config["method_defaults"]["procedure"] = "2-stage"
    config["training"]["stage_split"] = split


@pytest.mark.parametrize(("split", "total"), [([0.5, 0.6], "1.1"), ([0.2, 0.2], "0.4")])
def test_stage_split_must_sum_to_one(tmp_path, split, total):
    refused(
        tmp_path,
        f"training.stage_split: {split} sums to {total}",
        "must sum to 1",
        mutate=lambda c: two_stage(c, split),
    )


def with_duplicate(tmp_path: Path, block: str) -> str:
    """The test config's text (its package paths absolute) with ``block`` appended at the end; returns the text."""
    return tiny_config(tmp_path).read_text() + block


@pytest.mark.parametrize(
    ("block", "key"),
    [("seed: 7\n", "seed"), ("data: {n_train: 300, n_heldout: 40, n_mt: 8, l10n_min_english_words: 3}\n", "data")],
)
def test_a_key_given_twice_is_refused_with_both_lines(tmp_path, block, key):
    text = with_duplicate(tmp_path, block)
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines, 1) if line.startswith(f"{key}:"))
    out = refused(tmp_path, f"key {key!r} is given twice", f"(line {first} and line {len(lines)})", text=text)
    assert "config.yaml" in out


def test_a_nested_key_given_twice_is_refused(tmp_path):
    text = tiny_config(tmp_path).read_text().replace("n_train: 400\n", "n_train: 400\n  n_train: 300\n", 1)
    assert text.count("n_train:") == 2
    refused(tmp_path, "key 'n_train' is given twice", text=text)


def test_the_grid_keys_are_required(tmp_path):
    keys = ("models", "languages", "methods")
    out = refused(
        tmp_path,
        *(f"<top level>: '{key}' is a required property" for key in keys),
        mutate=all_of(*(lambda c, key=key: c.pop(key) for key in keys)),
    )
    assert "KeyError" not in out


OUT_OF_RANGE = [
    (
        lambda c: c["evaluation"]["mc"].update(fewshot=1000),
        "evaluation.mc.fewshot: 1000 is greater than the maximum of 25",
    ),
    (
        lambda c: c["evaluation"].update(gmmlu={"fewshot": 26}),
        "evaluation.gmmlu.fewshot: 26 is greater than the maximum of 25",
    ),
    (
        lambda c: c["tokenizer"].update(pad_to_multiple_of=10**9),
        "tokenizer.pad_to_multiple_of: 1000000000 is greater than the maximum of 1024",
    ),
    (lambda c: c["models"].update(hubby={"kind": "hub", "path": ""}), "models.hubby.path: '' should be non-empty"),
    (
        lambda c: c["models"]["tiny"].update(chat={"kind": "hub", "path": ""}),
        "models.tiny.chat.path: '' should be non-empty",
    ),
    (lambda c: c["models"].update({"-tiny": c["models"]["tiny"]}), "models.-tiny: '-tiny' does not match"),
]


def test_out_of_range_settings_are_refused_by_the_schema(tmp_path):
    refused(tmp_path, *(message for _, message in OUT_OF_RANGE), mutate=all_of(*(m for m, _ in OUT_OF_RANGE)))


def test_the_bounds_and_numbers_written_as_floats_are_accepted(tmp_path):
    """At the schema's bounds, floats where it asks for a number, and a two-stage split that sums to one: it plans."""

    def accepted(config):
        config["evaluation"]["mc"]["fewshot"] = 25
        config["tokenizer"]["pad_to_multiple_of"] = 1024
        config["training"].update(epochs=1.0, lr=1.0)
        two_stage(config, [0.3, 0.7])

    code, out = plan(tmp_path, mutate=accepted)
    assert code == 0, out


def test_a_high_l10n_min_english_words_is_named_rather_than_n_train(tmp_path):
    out = refused(
        tmp_path,
        "data.l10n_min_english_words: 50 leaves",
        "lower l10n_min_english_words",
        mutate=lambda c: c["data"].update(l10n_min_english_words=50),
    )
    assert "data.n_train: n_train" not in out


def with_mumo(config: dict, target: str) -> None:
    config["methods"].append({"init": "none", "procedure": "MuMo"})
    config["mumo"] = {"target_tokenizer": target}


def test_a_missing_mumo_target_tokenizer_is_named_at_planning(tmp_path):
    refused(
        tmp_path,
        "mumo.target_tokenizer: ",
        "missing/th/tokenizer.json",
        "(language th)",
        mutate=lambda c: with_mumo(c, str(tmp_path / "missing" / "{lang}" / "tokenizer.json")),
    )


def test_a_mumo_target_tokenizer_that_exists_plans(tmp_path, smollm2_tokenizer_dir):
    code, out = plan(tmp_path, mutate=lambda c: with_mumo(c, str(smollm2_tokenizer_dir / "tokenizer.json")))
    assert code == 0, out
    code, out = plan(tmp_path, mutate=lambda c: with_mumo(c, str(smollm2_tokenizer_dir)))
    assert code == 0, out


def test_no_evaluation_block_is_refused_for_a_cpu_sized_model(tmp_path):
    needles = (
        "evaluation: not set, so the schema's paper-scale defaults apply",
        "mt.n 500",
        "(models.tiny 3.4M parameters, under 1B)",
    )
    out = refused(tmp_path, *needles, mutate=lambda c: c.pop("evaluation"))
    assert "config warning" not in out
    code, out = plan(tmp_path)
    assert code == 0 and "evaluation: not set" not in out, out


def test_no_data_block_is_named_rather_than_data_n_train(tmp_path):
    needle = "data: not set, so the schema's paper-scale defaults apply (n_train 30000, n_heldout 100000, n_mt 500)"
    out = refused(tmp_path, needle, "more pairs than the l10n packages of th hold", mutate=lambda c: c.pop("data"))
    assert "data.n_train" not in out


def _unclosed(text: str) -> tuple[str, str]:
    return text + "extra: [1, 2\n", f"line {len(text.splitlines()) + 2}, column 1"


def _tab(text: str) -> tuple[str, str]:
    line = text.splitlines().index("  n_mt: 8") + 1
    return text.replace("\n  n_mt: 8", "\n\tn_mt: 8"), f"line {line}, column 1"


@pytest.mark.parametrize("edit", [_unclosed, _tab, lambda t: ("", "")], ids=["unclosed-bracket", "tab", "empty"])
def test_a_config_yaml_that_does_not_parse_is_named_with_its_line(tmp_path, edit):
    """config.yaml of the working directory, read by the Snakefile's configfile: directive."""
    path = tiny_config(tmp_path)
    text, where = edit(path.read_text())
    path.write_text(text)
    run = snakemake(["-n", "-q"], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in out, out
    assert (f"config.yaml, {where}: not valid YAML" if where else "config.yaml: the file is empty") in out, out
    assert "Config file is not valid JSON or YAML" not in out


def test_a_configfile_that_does_not_parse_is_named_by_the_check_command(tmp_path):
    """Snakemake parses --configfile before the Snakefile runs, so its own message stands there; the check command
    docs/inputs.md gives names the file and the line."""
    path = tmp_path / "grid.yaml"
    path.write_text("seed: 1\nmodels: {a: {kind: hub, path: x}\n")
    run = snakemake(["-n", "-q", "--configfile", str(path)], tmp_path)
    assert run.returncode != 0 and "Config file is not valid JSON or YAML" in run.stdout + run.stderr
    check = subprocess.run(
        [sys.executable, "-m", "workflow_scripts.plan.checks", str(path)], cwd=REPO, capture_output=True, text=True
    )
    assert check.returncode == 1
    assert f"{path}, line 3, column 1: not valid YAML: expected ',' or '}}', but got '<stream end>'" in check.stderr


def test_a_replacement_vocabulary_the_corpus_cannot_supply_is_named_at_planning(tmp_path):
    def replace_on_2000(config):
        config["data"]["n_train"] = 2000
        config["methods"].append({"init": "Mean", "vocab": "replace"})

    refused(tmp_path, "tokenizer.replace_vocab_size: 32000 is more than the corpus D", mutate=replace_on_2000)


def test_an_unwritable_output_folder_passes_the_dry_run_and_stops_a_real_run_before_any_job(tmp_path):
    # `results` a folder of /proc, where no one, root included, can create a file (the unit tests cover a
    # read-only mount and missing permissions by their errors)
    if not Path("/proc/self/fdinfo").is_dir():
        pytest.skip("needs Linux /proc")
    (tmp_path / "results").symlink_to("/proc/self/fdinfo")
    code, out = plan(tmp_path)
    assert code == 0, out
    run = snakemake(["--cores", "1", "-q", "--configfile", str(tmp_path / "config.yaml")], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "results/default: cannot write in 'results' (" in out
    assert "no job can write its outputs under 'results/default'" in out
    assert "Traceback" not in out and "rule " not in out, out  # stopped before any job


def test_an_output_path_under_a_file_is_refused_by_the_dry_run_too(tmp_path):
    (tmp_path / "results").write_text("not a folder\n")
    out = refused(
        tmp_path, "results/default: 'results' is a file, so the run cannot create its output folder 'results/default'"
    )
    assert "NotADirectoryError" not in out


def test_reference_rouge_on_a_language_not_in_latin_script_is_refused_at_planning(tmp_path):
    def reference_rouge(config):
        config["evaluation"]["tasks"] = [*config["evaluation"]["tasks"], "sum"]
        config["evaluation"]["sum"] = {**config["evaluation"].get("sum", {}), "rouge_tokenizer": "reference"}

    refused(
        tmp_path,
        "evaluation.sum.rouge_tokenizer: reference",
        "cannot score language 'th', written in Thai script",
        mutate=reference_rouge,
    )
