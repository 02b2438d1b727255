"""The prepared GPU checks fail loudly: tools/gpu_fsdp_check.py, tools/gpu_bench.py and tools/gpu_corrections.py exit
non-zero on any failed run or mismatch, and gpu_fsdp_check's documented CPU rehearsal passes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tools import gpu_bench, gpu_corrections, gpu_fsdp_check

REPO = Path(__file__).resolve().parents[1]


def _rehearsal_command() -> list[str]:
    """The CPU rehearsal command of gpu_fsdp_check's docstring, as written there."""
    lines = [ln.strip() for ln in gpu_fsdp_check.__doc__.splitlines() if ln.strip().startswith("python -m tools.")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def _row(procedure: str = "EEVE", **changes) -> dict:
    """One procedure's results as gpu_fsdp_check records them, all passing unless changed."""
    row = {
        "procedure": procedure,
        "objective": "clm",
        "plain": {"returncode": 0},
        "sharded": {"returncode": 0},
        "killed": {"returncode": 1},  # torchrun reports its SIGKILLed worker as a failure
        "resumed": {"returncode": 0, "stats": {"resumed_from": [4]}},
        "difference": {"max_abs": 2e-6},
        "resumed_difference": {"max_abs": 0.0},
    }
    return {**row, **changes}


def test_fsdp_check_failures_name_each_kind_of_failure():
    assert gpu_fsdp_check.failures({"runs": [_row()]}, 1e-4) == []
    runs = [
        _row("2x2LS", difference={"max_abs": 3e-4}),
        _row("full", killed={"returncode": 0}, resumed={"returncode": 0, "stats": {"resumed_from": []}}),
        _row("EEVE", sharded={"returncode": 1, "stderr": "Traceback\nValueError: 4 steps\n"}, difference={}),
    ]
    assert gpu_fsdp_check.failures({"runs": runs}, 1e-4) == [
        "2x2LS + clm: the sharded model differs from the plain one by 0.0003 > 0.0001",
        "full + clm: the run to kill at step 4 finished instead (exit 0)",
        "full + clm: the resumed run resumed from [], not [4]",
        "EEVE + clm: the sharded run exited 1: ValueError: 4 steps",
        "EEVE + clm: no sharded difference (a run failed)",
    ]


def test_fsdp_check_exits_1_when_a_run_fails(tmp_path, monkeypatch, capsys):
    """A failing LAPT run makes the whole check exit 1 and print why, after writing its results."""
    monkeypatch.setattr(gpu_fsdp_check, "build_model", lambda folder, *a: (folder / "model", folder / "train.txt"))
    monkeypatch.setattr(gpu_fsdp_check, "predicted", lambda *a: {"per_stage": [{"weights": 0}]})
    failed = {"returncode": 1, "seconds": 0.1, "stderr": "ValueError: 7 optimizer steps cannot be split\n"}
    monkeypatch.setattr(gpu_fsdp_check, "lapt", lambda *a, **k: failed)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "tokenizer.json").write_text(json.dumps({"model": {"vocab": dict.fromkeys("ab" * 50)}}))
    assert gpu_fsdp_check.main(["--out", str(tmp_path), "--steps", "7"]) == 1
    printed = capsys.readouterr().out
    assert "FAILED: 2x2LS + mtp: the plain run exited 1: ValueError: 7 optimizer steps cannot be split" in printed
    assert "passed" not in printed
    assert len(json.loads((tmp_path / "results.json").read_text())["failures"]) == 3 * 5


def test_fsdp_check_refuses_too_few_steps_before_building_anything(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tools.gpu_fsdp_check", "--steps", "4", "--out", str(tmp_path / "o")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "--steps 4: every run needs at least 7 optimizer steps (EEVE has 7 stages" in done.stderr
    assert not (tmp_path / "o").exists()
    fewer = [sys.executable, "-m", "tools.gpu_fsdp_check", "--steps", "4", "--procedures", "2x2LS", "full"]
    done = subprocess.run([*fewer, "--out", str(tmp_path / "o")], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "at least 5 optimizer steps (2x2LS has 1 stage of" in done.stderr


@pytest.mark.slow  # 4 LAPT runs of a tiny Llama (plain, torchrun with two gloo processes): about 40 s
def test_fsdp_check_documented_rehearsal_passes(tmp_path):
    """The docstring's rehearsal for EEVE, the procedure of most stages and frozen rows: the check's plain, sharded,
    killed and resumed runs and its comparisons. 2x2 LS + mtp and full are sharded the same way in
    tests/test_lapt_sharded.py."""
    cmd = _rehearsal_command()
    assert cmd[:3] == ["python", "-m", "tools.gpu_fsdp_check"]
    out = cmd.index("--out") + 1
    cmd[out] = str(tmp_path / "fsdp")  # the docstring's /tmp/fsdp, kept apart per test
    done = subprocess.run([sys.executable, *cmd[1:], "--procedures", "EEVE"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "fsdp" / "results.json").read_text())
    assert [r["procedure"] for r in results["runs"]] == ["EEVE"]
    assert results["failures"] == [] and results["tolerance"] == 1e-4
    assert all(r["resumed"]["stats"]["resumed_from"] == [4] for r in results["runs"])
    assert "passed: every difference within 0.0001" in done.stdout


def test_gpu_bench_exits_1_on_an_out_of_memory_entry(tmp_path, monkeypatch, capsys):
    def oom(name, procedure, *, emit, **kw):
        emit(
            {
                "model": name,
                "procedure": procedure,
                "stage": "LoRA",
                "objective": "clm",
                "seq_len": 8,
                "micro_batch": 4,
                "oom": "CUDA out of memory",
                "estimate_peak_gib": 70.0,
            }
        )

    monkeypatch.setattr(gpu_bench, "time_training", oom)
    out = tmp_path / "bench.json"
    args = ["--tiny", "--out", str(out), "--models", "llama2-7b", "--procedures", "LoRA", "--no-decoding"]
    assert gpu_bench.main(args) == 1
    assert "FAILED: llama2-7b LoRA/LoRA clm L8 micro 4 ran out of memory (estimated peak 70.0 GiB)" in (
        capsys.readouterr().err
    )
    assert json.loads(out.read_text())["training"][0]["oom"] == "CUDA out of memory"
    monkeypatch.setattr(gpu_bench, "time_training", lambda *a, **k: None)
    assert gpu_bench.main(args) == 0


def test_gpu_corrections_exits_1_on_an_empty_or_wrong_estimate(tmp_path, capsys):
    def entry(**measured) -> dict:
        est = {
            "weights": 8,
            "gradients": 4,
            "optimizer": 8,
            "autocast_cache": 0,
            "frozen_row_snapshot": 0,
            "activations_layers": 0,
            "logits": 0,
        }
        held = {"weights": 8, "gradients": 4, "optimizer": 8, **measured}
        return {
            "model": "llama2-7b",
            "procedure": "LoRA",
            "stage": "LoRA",
            "objective": "clm",
            "seq_len": 8,
            "micro_batch": 4,
            "measured_bytes": held,
            "estimate_bytes": est,
        }

    bench = tmp_path / "bench.json"
    cases = [
        ({"training": [entry()]}, 0, ""),
        ({"training": [{"skipped": "--budget-s reached"}]}, 1, "FAILED: no measured LAPT entry"),
        ({"training": [entry(gradients=6)]}, 1, "FAILED: the estimate's weights, gradients or optimizer bytes"),
        (
            {"training": [entry(), {**entry(), "oom": "CUDA out of memory"}]},
            1,
            "FAILED: out of memory although estimated to fit: llama2-7b LoRA/LoRA clm L8 micro 4",
        ),
    ]
    for content, code, message in cases:
        bench.write_text(json.dumps(content))
        assert gpu_corrections.main([str(bench)]) == code, content
        err = capsys.readouterr().err
        assert message in err and (code or not err)
