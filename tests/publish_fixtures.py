"""A finished tiny run without its computation: results.csv with a row set per cell, and each adapted cell's model
folder and training stats, so that the model_card and publish rules run alone (``--allowed-rules``) in seconds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml

from tests.conftest import tiny_config
from workflow_scripts.plan import paths
from workflow_scripts.plan.grid import expand_grid
from workflow_scripts.tables import COLUMNS

PAIRED = "paired_speedup@teacher_forced.greedy.b1"
BOUND = "token_ratio_bound@teacher_forced.greedy.b1"


def cell_rows(cell: dict, source: bool, i: int) -> list[dict]:
    """The rows a cell's evaluation writes into results.csv (a few of them), with values of full float precision."""
    base = {c: "" for c in COLUMNS} | {k: ("" if v is None else v) for k, v in cell.items() if k in COLUMNS}

    def row(task: str, metric: str, value: float, **extra) -> dict:
        return base | {"task": task, "metric": metric, "value": repr(value), "seed": 42} | extra

    bpc = 1.2345678901234567 + (0 if source else 0.1 * i - 0.15)
    rows = [
        row("ppl", "bits_per_char", bpc),
        row("ppl", "tokens_per_sentence", 30.5 - 4 * i),
        row("mt", "chrF", 11.0 + i / 3, run=1),
    ]
    if not source:
        rows += [row("mt", PAIRED, 1.0 + i / 7, min=0.9 + i / 7, max=1.1 + i / 7), row("mt", BOUND, 1.0 + i / 5)]
    return rows


def fake_run(tmp_path: Path, source: str = "configs/test.yaml", **changes) -> tuple[Path, Path, list]:
    """A shipped config (with ``changes``) in ``tmp_path``, and its run folder filled as a finished run leaves it;
    returns the config file, the run folder and the grid's cells."""
    config_path = tiny_config(tmp_path, source, **changes)
    config = yaml.safe_load(config_path.read_text())
    cells = expand_grid(config)
    run = tmp_path / "results" / "default"
    rows = []
    for i, (model, lang, m) in enumerate(cells):
        aux = config["languages"][lang].get("aux_vocab_size", config["tokenizer"]["aux_vocab_size"])
        rows += cell_rows(m.cell(model, lang, aux), m.slug == "Source", i)
        if m.slug == "Source":
            continue
        if m.is_mumo:
            model_dir = Path(paths.mumo_head(model, lang, m.init if m.init != "none" else "Multi", str(run)))
            stats = model_dir.parent / "train_stats.json"
        elif m.trains or m.posthoc != "none":
            model_dir = Path(paths.trained_model(model, lang, m.slug, str(run)))
            stats = Path(paths.train_stats(model, lang, m.adapted.slug, str(run)))
        else:
            model_dir = Path(paths.initialized_model(model, lang, m.init, f"aux{aux}.k{m.k}", str(run)))
            stats = None
        model_dir.mkdir(parents=True, exist_ok=True)
        (model_dir / "config.json").write_text(json.dumps({"model_type": "llama"}))
        (model_dir / "tokenizer.json").write_text("{}")
        (model_dir / "model.safetensors").write_bytes(bytes(range(256)) * (12 + i))
        (model_dir / ".snakemake_timestamp").write_text("")
        if stats:
            stats.parent.mkdir(parents=True, exist_ok=True)
            stats.write_text(json.dumps({"steps": 6, "tokens_seen": 1536, "hparams": {"lr": 0.001}}))
    table = run / "tables" / "results.csv"
    table.parent.mkdir(parents=True)
    with open(table, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return config_path, run, cells
