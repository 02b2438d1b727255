"""The pilot's grid (configs/pilot.yaml) end to end at the tiny model's size: initializations with their held-out
learning curves, the |V_new| series, and the findings page those fill."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO, snakemake

PILOT = yaml.safe_load((REPO / "configs/pilot.yaml").read_text(encoding="utf-8"))
TEST = yaml.safe_load((REPO / "configs/test.yaml").read_text(encoding="utf-8"))


def cut_down(tmp_path):
    """configs/pilot.yaml with the test config's model, Thai l10n data (no download) and sizes: the pilot's curve and
    findings as they are, on five of its nine methods entries."""
    config = {**PILOT, "models": TEST["models"], "data": TEST["data"], "tokenizer": TEST["tokenizer"]}
    deb = str(REPO / TEST["languages"]["th"]["corpus"]["deb"])
    config["languages"] = {"th": {"corpus": {"kind": "l10n", "deb": deb}, "mt": {"kind": "l10n"}}}
    config["method_defaults"] = {**PILOT["method_defaults"], "seq_len": 64}
    # Random, Mean, FOCUS and TokenDistillation (with the pilot's settings: the rule that passes them) of its seven
    # initializations (Merge, Align and OMP run the same rule with another --method, and tests/test_initialize*.py
    # check each), and the k series at two sizes (k 100 and 500 of the pilot, as 40 and 80): enough for every figure
    # and bullet of the page
    skipped = ("Merge", "Align", "OMP")
    methods = [m for m in PILOT["methods"] if m.get("k") != 50 and m["init"] not in skipped]
    config["methods"] = [{**m, "k": {100: 40, 500: 80}[m["k"]]} if "k" in m else m for m in methods]
    # the pilot's training seeds on Random only, two of them: its seeded initialization and training run end to end
    config["methods"] = [{k: v for k, v in m.items() if k != "seed"} for m in config["methods"]]
    random = next(m for m in config["methods"] if m["init"] == "Random")
    random["seed"] = [PILOT["seed"], PILOT["seed"] + 1]
    config["method_defaults"]["k"] = 40
    config["training"] = {
        **PILOT["training"],
        "max_steps": 4,
        "batch_size": 4,
        "checkpoint_every": 2,
        "curve_points": 3,
    }
    # ppl (the curves' sentences) and speed; mt's chrF reaches the page in tests/test_findings.py, and mt runs end to
    # end in the default's tests: here it would only add a LightEval start to every cell
    evaluation = {**PILOT["evaluation"], "tasks": ["ppl", "speed"], "ppl": {"n": 20, "batch_size": 8}}
    # speed: one timed greedy pass at batch size 1, no warm-up (timings are not checked here)
    speed = {**TEST["evaluation"]["speed"], "decodings": ["greedy"], "batch_size": 1, "repeats": 1, "warmup": 0}
    config["evaluation"] = {**evaluation, "speed": speed}
    path = tmp_path / "pilot.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path, config


def job_priorities(log: str) -> dict[str, set[int]]:
    """The priorities Snakemake's log gives each rule's jobs ("priority: N" in a job's block; 0 where it names none)."""
    out: dict[str, set[int]] = {}
    for block in re.split(r"\n\s*\n", log):
        rule = re.search(r"^(?:local)?rule (\w+):$", block, re.M)
        if rule:
            priority = re.search(r"^\s+priority: (\d+)$", block, re.M)
            out.setdefault(rule.group(1), set()).add(int(priority.group(1)) if priority else 0)
    return out


@pytest.mark.e2e
def test_pilot_grid_runs_and_fills_the_findings_page(tmp_path):
    path, config = cut_down(tmp_path)
    run = snakemake(["--cores", "2", "--configfile", str(path)], tmp_path)
    assert run.returncode == 0, run.stderr[-4000:]
    root = tmp_path / "results" / "pilot"

    # every trained cell measured its curve on the ppl step's sentences: step 0 (the initialized model) to the end;
    # Random's second seed (a cell of its own, evaluation.other_seeds: ppl) its step 0 alone, and bits per character
    # alone
    curves = sorted(root.glob("tiny/th/*/curve.tsv"))
    trained = [m for m in config["methods"] if m.get("procedure") != "none"]
    assert len(curves) == len(trained) + 1 == 7
    seed = root / f"tiny/th/Random.k40.2x2LS.clm.L64.s{PILOT['seed'] + 1}"
    assert list(pd.read_csv(seed / "curve.tsv", sep="\t")["step"]) == [0]
    assert sorted(p.name for p in (seed / "eval").iterdir()) == ["ppl.json"]
    curves.remove(seed / "curve.tsv")
    for curve in curves:
        rows = pd.read_csv(curve, sep="\t")
        assert list(rows["step"]) == [0, 2, 4] and set(rows["n_sentences"]) == {20}, curve
        assert rows["tokens"].iloc[0] == 0 and rows["tokens"].is_monotonic_increasing
    table = pd.read_csv(root / "tables/results.csv")
    bpc = table[(table.task == "ppl") & (table.metric == "bits_per_char")]
    for curve in curves:  # the curve's last point is the ppl step's number on the saved model
        last = pd.read_csv(curve, sep="\t")["bits_per_char"].iloc[-1]
        cell = bpc[bpc["method"] == curve.parent.name]["value"]
        assert len(cell) == 1 and abs(float(cell.iloc[0]) - last) < 0.05, (curve, last, cell)

    # Token Distillation ran with the pilot's settings (initialization.TokenDistillation), passed on by its own rule
    report = json.loads((root / "tiny/th/init/TokenDistillation.aux1000.k40.report.json").read_text(encoding="utf-8"))
    stats = report["method_stats"]["token_distillation"]
    assert (stats["snippets_per_token"], stats["lr"]) == (8, 1e-3) and 0 < stats["snippets"] <= 8 * 40

    # the page: its bullets, quality against speed, the learning curves and the k series
    findings = root / "findings"
    for figure in ("quality_speed", "learning_curves", "k_tradeoff"):
        assert (findings / f"{figure}.png").stat().st_size > 0, figure
    page = (findings / "findings.md").read_text(encoding="utf-8")
    for name in ("Random", "Mean", "FOCUS", "TokenDistillation", "CPT-only"):
        assert name in page, name
    assert "## At a glance" in page and "- **Initializations ranked" in page
    assert "Not in this run" not in page
    # training before evaluation: every job on the way to a trained model ran at the training priority, no other
    priorities = job_priorities(run.stdout + run.stderr)
    training = {
        "train_aux_tokenizer",
        "expand_tokenizer",
        "initialize",
        "initialize_seeded",
        "initialize_configured",
        "lapt",
    }
    assert {rule: priorities[rule] for rule in training} == {rule: {1} for rule in training}
    assert {p for rule, found in priorities.items() if rule not in training for p in found} == {0}
    again = snakemake(["-n", "--configfile", str(path)], tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
