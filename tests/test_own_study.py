"""A study of your own from the config alone: a language outside the paper's ten (Khmer), your own text and MT pairs
with their labels, and models of other shapes than the paper's (a Qwen2-style byte-level BPE model with untied
embeddings and padded rows, a Mistral-style SentencePiece model with byte fallback)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from safetensors import safe_open

from tests.conftest import REPO, l10n_pairs, planned_jobs, require_tokenizer_package, snakemake, tiny_config

KM_DEB = REPO / "resources/l10n/libreoffice-l10n-km_4_7.4.7-1+deb12u14_all.deb"


def test_the_example_study_plans_offline(tmp_path):
    """configs/example-own-study.yaml (Qwen2.5-7B, Mistral-7B-v0.3; Khmer, Amharic; your own files) plans with no
    network, saying what it inferred and which prompt is a template."""
    plan = snakemake(["-n", "--quiet", "rules", "--configfile", str(REPO / "configs/example-own-study.yaml")], REPO)
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = planned_jobs(plan.stdout)
    # 2 models x 2 languages x (Source, CPT-only, Mean, Align); own data: sample_text and own_mt per language
    assert jobs["sample_cc100"] == 2 and jobs["own_mt"] == 2 and jobs["lapt"] == 2 * 2 * 3
    assert "extract_l10n_pairs" not in jobs and "flores_mt" not in jobs
    assert "languages.km: name Khmer, script Khmr, flores khm_Khmr inferred from the code (CLDR)" in plan.stderr
    assert "languages.km: mt prompts with the English-instruction template 'Translate English to Khmer:'" in plan.stderr
    assert "languages.am: mt prompts" not in plan.stderr  # its config gives its own


def _own_files(folder: Path, lang: str = "km") -> tuple[Path, Path]:
    """Your text (gzip) and your English<TAB>target pairs, disjoint, from the LibreOffice pairs of ``lang``."""
    pairs = l10n_pairs(lang)
    text, tsv = folder / f"{lang}.txt.gz", folder / f"en-{lang}.tsv"
    with gzip.open(text, "wt", encoding="utf-8") as f:
        f.write("".join(t + "\n" for _, t in pairs[40:600]))
    tsv.write_text("".join(f"{en}\t{t}\n" for en, t in pairs[:40]), encoding="utf-8")
    return text, tsv


def _study(tmp_path: Path, models: dict, **changes) -> Path:
    text, tsv = _own_files(tmp_path)
    languages = {
        "km": {
            "corpus": {"kind": "text", "path": str(text), "label": "Khmer UI text (test)"},
            "mt": {"kind": "tsv", "path": str(tsv), "label": "our English-Khmer pairs (test)"},
        }
    }
    return tiny_config(tmp_path, models=models, languages=languages, **changes)


def test_a_missing_prompt_is_refused_at_planning(tmp_path):
    """Amharic has XL-Sum data but no sum prompt of the paper: a grid with sum is refused before any job, naming the
    key to give."""
    am = l10n_pairs("am")
    tsv = tmp_path / "en-am.tsv"
    tsv.write_text("".join(f"{en}\t{t}\n" for en, t in am[:20]), encoding="utf-8")
    config = tiny_config(tmp_path)
    settings = yaml.safe_load(config.read_text())
    deb = str(REPO / "resources/l10n/libreoffice-l10n-am_4_7.4.7-1+deb12u14_all.deb")
    settings["languages"] = {"am": {"corpus": {"kind": "l10n", "deb": deb}, "mt": {"kind": "tsv", "path": str(tsv)}}}
    settings["evaluation"]["tasks"] = ["mt", "ppl", "sum"]
    config.write_text(yaml.safe_dump(settings))
    plan = snakemake(["-n", "--configfile", str(config)], tmp_path)
    out = plan.stdout + plan.stderr
    assert plan.returncode != 0
    assert "languages.am.prompts.sum: language 'am' (Amharic) has no sum prompt of the paper" in out
    assert "Traceback" not in out


# the shape of both tiny models (2x2 LS needs at least 4 layers)
_TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
)


def _qwen2_style(tokenizer_dir: Path, out: Path, layers: int = 4) -> Path:
    """A tiny Qwen2 model on SmolLM2's byte-level BPE: untied input and output embeddings, and more embedding rows
    than the tokenizer has tokens (Qwen pads its 151,665 tokens to 152,064 rows)."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = (len(tok) // 64 + 2) * 64  # at least 64 rows no token uses
    config = Qwen2Config(
        vocab_size=rows,
        tie_word_embeddings=False,
        **{**_TINY, "num_hidden_layers": layers},
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _mistral_style(out: Path) -> Path:
    """A tiny Mistral model on Mistral's own SentencePiece BPE tokenizer with byte fallback (32,000 pieces)."""
    import torch
    from transformers import AutoTokenizer, MistralConfig, MistralForCausalLM

    from workflow_scripts.tokenizer_assets import write_folder

    write_folder("mistral", out / "tokenizer")
    tok = AutoTokenizer.from_pretrained(out / "tokenizer")
    config = MistralConfig(
        vocab_size=len(tok),
        tie_word_embeddings=False,
        **_TINY,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = MistralForCausalLM(config)
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    return out / "model"


@pytest.mark.slow  # a tiny model saved, and a dry run
def test_a_model_too_shallow_for_its_procedure_is_refused_at_planning(tmp_path, smollm2_tokenizer_dir):
    """2x2 LS trains the bottom two and the top two layers: a 2-layer model is refused before any job, from the
    layer count in its config.json, not in its LAPT job after the data, tokenizer and initialization steps."""
    shallow = _qwen2_style(smollm2_tokenizer_dir, tmp_path / "shallow", layers=2)
    config = _study(tmp_path, {"shallow": {"kind": "local", "path": str(shallow)}})
    plan = snakemake(["-n", "--configfile", str(config)], tmp_path)
    out = plan.stdout + plan.stderr
    assert plan.returncode != 0
    assert "models.shallow: 2 transformer layers, but procedure 2x2LS needs at least 4" in out, out[-2000:]


@pytest.mark.e2e
def test_own_study_end_to_end(tmp_path, smollm2_tokenizer_dir):
    """Khmer (not one of the paper's ten) from a text file and TSV pairs, on a Qwen2-style and a Mistral-style model:
    Source and Mean + 2x2 LS run to the results page, which shows the labels and the language's name, and the paper's
    tables say in one line that this is not the paper's grid."""
    require_tokenizer_package("mistral")
    qwen = _qwen2_style(smollm2_tokenizer_dir, tmp_path / "qwen2-tiny")
    mistral = _mistral_style(tmp_path / "mistral-tiny")
    models = {"qwen2": {"kind": "local", "path": str(qwen)}, "mistral": {"kind": "local", "path": str(mistral)}}
    settings = yaml.safe_load((REPO / "configs/test.yaml").read_text())
    config = _study(
        tmp_path,
        models,
        methods=[{"init": "none", "procedure": "none"}, {"init": "Mean"}],
        # one evaluation job a cell, greedy speed only: the run's cost is start-up, not the tiny models
        evaluation={
            **settings["evaluation"],
            "tasks": ["mt", "ppl", "speed"],
            "one_job_per_cell": True,
            "speed": {**settings["evaluation"]["speed"], "decodings": ["greedy"]},
        },
        data={**settings["data"], "n_train": 400, "n_heldout": 40},
        training={**settings["training"], "max_steps": 2, "checkpoint_every": 2},
    )
    run = snakemake(["--cores", "2", "--configfile", str(config)], tmp_path)
    assert run.returncode == 0, run.stderr[-4000:]
    results = tmp_path / "results/default"
    table = pd.read_csv(results / "tables/results.csv")
    assert set(table["model"]) == {"qwen2", "mistral"} and set(table["language"]) == {"km"}
    assert set(table["label"]) == {"Source", "Mean"}
    for model in ("qwen2", "mistral"):
        cell = table[(table.model == model) & (table.label == "Mean")]
        assert {"chrF", "bits_per_char", "paired_speedup@teacher_forced.greedy.b1"} <= set(cell["metric"]), model
        # 50 new Khmer tokens: fewer tokens per held-out sentence than Source's
        tps = table[(table.model == model) & (table.metric == "tokens_per_sentence")].set_index("label")["value"]
        assert tps["Mean"] < tps["Source"], (model, tps.to_dict())
    page = (results / "tables/results.md").read_text(encoding="utf-8")
    assert "Khmer UI text (test)" in page and "our English-Khmer pairs (test)" in page
    assert "mt prompt: English-instruction template" in page
    assert "Khmer" in page and "CC-100" not in page and "FLORES-200" not in page
    findings = (results / "findings/findings.md").read_text(encoding="utf-8")
    assert "stand in for the paper" not in findings and "stands in for the paper" not in findings
    assert "Not the paper's grid" in (results / "paper/tables.md").read_text(encoding="utf-8")
    assert "not comparable to the paper's" not in page  # said of the embedded default's stand-in data only
    # the Qwen2-style model keeps its padded rows: the expanded model has 50 more rows than Source, embedding and head
    source = json.loads((results / "models/qwen2/source_info.json").read_text())
    assert source["vocab_size"] % 64 == 0 and not source["tied_embeddings"]
    adapted = results / "qwen2/km/Mean.k50.2x2LS.clm.L64/model"
    tokens = len(json.loads((adapted / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    with safe_open(str(next(adapted.glob("*.safetensors"))), "pt") as f:
        rows = {k: f.get_slice(k).get_shape()[0] for k in f.keys() if "embed_tokens" in k or "lm_head" in k}
    assert len(set(rows.values())) == 1 and next(iter(rows.values())) >= tokens, (rows, tokens)
    mt = (results / "data/km/tsv/mt.tsv").read_text(encoding="utf-8").splitlines()
    assert len(mt) == 40
    # the adapted model is a product of the run: deleted after its evaluation, it is planned again
    shutil.rmtree(adapted)
    again = snakemake(["-n", "--quiet", "rules", "--configfile", str(config)], tmp_path)
    assert again.returncode == 0 and planned_jobs(again.stdout)["lapt"] == 1, again.stdout[-2000:]
