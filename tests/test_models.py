"""Models by their shape: each configured model's shape read from its own config.json (the committed library of
well-known hub models, the Hugging Face cache, a local folder, a GGUF header, a random Llama's dimensions), what
planning makes of it (GPU fit, resources), and the size label's stand-in where no config.json is in reach."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.conftest import REPO, snakemake, tiny_config
from tools.plan import parse_dry_run
from workflow_scripts.gpu.estimate import estimate
from workflow_scripts.gpu.fit import planned_gpus
from workflow_scripts.gpu.shape import MODELS, shape_from_config
from workflow_scripts.plan.build import gpu_problems
from workflow_scripts.plan.checks.gpu_fit import lapt_gpu_counts, lapt_jobs
from workflow_scripts.plan.checks.schema import fill_defaults
from workflow_scripts.plan.grid import ConfigError
from workflow_scripts.plan.models import STAND_IN_IDS, ModelError, describe, describe_models
from workflow_scripts.plan.resources import sized_resources

# hub id: hidden, layers, heads, KV heads, intermediate, embedding rows, tied, the parameter count its model card
# publishes, and that count in words
PUBLIC = {
    "Qwen/Qwen2.5-7B": (3584, 28, 28, 4, 18944, 152064, False, 7.62e9, "7.6B"),
    "mistralai/Mistral-7B-v0.3": (4096, 32, 32, 8, 14336, 32768, False, 7.25e9, "7.2B"),
    "meta-llama/Llama-3.1-8B": (4096, 32, 32, 8, 14336, 128256, False, 8.03e9, "8B"),
    "google/gemma-2-9b": (3584, 42, 16, 8, 14336, 256000, True, 9.24e9, "9.2B"),
}
# Llama-3.2-3B's shape: a model of a size no label of the paper names
LLAMA_3B = {
    "model_type": "llama",
    "hidden_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "tie_word_embeddings": True,
}


@pytest.fixture
def empty_hf_cache(tmp_path, monkeypatch) -> Path:
    """A Hugging Face cache without any model: hub models are read from resources/model_configs/ or not at all."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.mark.parametrize("hub_id", PUBLIC)
def test_the_shape_of_a_committed_config_json(hub_id, empty_hf_cache):
    model = describe("m", {"kind": "hub", "path": hub_id})
    hidden, layers, heads, kv_heads, ffn, vocab, tied, published, words = PUBLIC[hub_id]
    s = model.shape
    assert (s.hidden, s.layers, s.heads, s.kv_heads, s.ffn, s.vocab, s.tied) == (
        hidden,
        layers,
        heads,
        kv_heads,
        ffn,
        vocab,
        tied,
    )
    assert model.parameters == pytest.approx(published, rel=0.01)
    assert model.source == f"resources/model_configs/{hub_id}/config.json" and model.warning is None
    assert model.needs_gpu and model.label is None and model.size == words
    if hub_id.startswith("google/"):  # Gemma-2: its own head size, four norms a layer, soft-capped logits
        assert s.head_dim == 256 and s.norms_per_layer == 4 and s.logit_softcap and s.eager_attention
    else:
        assert s.head_dim == hidden // heads and s.norms_per_layer == 2 and not s.logit_softcap


def test_the_plain_json_reader_agrees_with_transformers():
    """A config.json read as a dict, defaults included (Gemma-2's leaves out tie_word_embeddings, which transformers
    then ties), gives the shape transformers' own config object gives."""
    from transformers import AutoConfig

    for path in sorted((REPO / "resources" / "model_configs").rglob("config.json")):
        config = json.loads(path.read_text())
        model_type = config.pop("model_type")
        assert shape_from_config(AutoConfig.for_model(model_type, **config)) == shape_from_config(
            {**config, "model_type": model_type}
        ), path


def test_the_estimators_shapes_are_the_committed_config_jsons(empty_hf_cache):
    for name, hub_id in STAND_IN_IDS.items():
        if (REPO / "resources" / "model_configs" / hub_id).is_dir():
            assert describe("m", {"kind": "hub", "path": hub_id}).shape == MODELS[name], name
    # every hub model of the paper's grid, its chat sibling too, plans from the library
    paper = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    hub_ids = [spec["path"] for spec in paper["models"].values()]
    hub_ids += [spec["chat"]["path"] for spec in paper["models"].values() if isinstance(spec.get("chat"), dict)]
    assert all((REPO / "resources" / "model_configs" / h / "config.json").is_file() for h in hub_ids), hub_ids


def test_the_hugging_face_cache_comes_before_the_library(empty_hf_cache):
    snapshot = empty_hf_cache / "models--Qwen--Qwen2.5-7B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    library = json.loads((REPO / "resources/model_configs/Qwen/Qwen2.5-7B/config.json").read_text())
    (snapshot / "config.json").write_text(json.dumps({**library, "vocab_size": 151936}))
    model = describe("qwen", {"kind": "hub", "path": "Qwen/Qwen2.5-7B"})
    assert model.shape.vocab == 151936 and "Hugging Face cache" in model.source


def test_local_gguf_and_random_models_have_their_own_shapes(tmp_path):
    folder = tmp_path / "llama-3b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_3B))
    local = describe("small", {"kind": "local", "path": str(folder), "size": "3B"})
    assert local.shape.vocab == 128256 and local.shape.tied and local.parameters == pytest.approx(3.21e9, rel=0.01)
    assert local.size == "3B" and local.needs_gpu
    default = describe_models(yaml.safe_load((REPO / "config.yaml").read_text()))["smollm2"]
    assert default.shape == MODELS["smollm2-135m"] and "GGUF header" in default.source and not default.needs_gpu
    tiny = describe_models(yaml.safe_load((REPO / "configs" / "test.yaml").read_text()))["tiny"]
    # configs/test.yaml's random Llama: 6 layers of 64, tied, sized to SmolLM2's 49,152-token tokenizer
    assert (tiny.shape.layers, tiny.shape.hidden, tiny.shape.vocab, tiny.shape.tied) == (6, 64, 49152, True)
    assert tiny.parameters == 3_392_320 and tiny.size == "demo"
    (folder / "config.json").write_text("{}")
    with pytest.raises(
        ModelError, match=r"^models\.broken: cannot read the model's shape: config\.json has no integer"
    ):
        describe("broken", {"kind": "local", "path": str(folder)})


def test_without_a_config_json_the_size_label_stands_in_or_planning_stops(empty_hf_cache):
    spec = {"kind": "hub", "path": "someone/new-7b", "size": "7B"}
    model = describe("new", spec)
    assert model.shape == MODELS["llama2-7b"] and model.warning.startswith(
        "models.new: no config.json of someone/new-7b in the Hugging Face cache or resources/model_configs/: planned "
        "with the shape of meta-llama/Llama-2-7b-hf, which size 7B stands for"
    )
    assert "`snakemake download_all`" in model.warning and "`hf download someone/new-7b config.json`" in model.warning
    for size in ("3B", None):
        with pytest.raises(ModelError, match=r"^models\.new: no config\.json of hub model 'someone/new-7b'") as e:
            describe("new", {**spec, "size": size} if size else {"kind": "hub", "path": "someone/new-7b"})
        assert "resources/model_configs/someone/new-7b/config.json" in str(e.value)


def _grid(models: dict) -> dict:
    """configs/paper.yaml with ``models`` and only the paper's LAPT default (Align, 2x2 LS, clm, 2048) and its 2x2 LS
    recipe (mtp, 512), on two languages."""
    config = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    config["models"] = models
    config["languages"] = {lang: config["languages"][lang] for lang in ("th", "si")}
    config["methods"] = [
        {"init": "Align", "procedure": "2x2LS", "objective": "clm", "seq_len": 2048},
        {"init": "Align", "procedure": "2x2LS", "objective": "mtp", "seq_len": 512},
    ]
    fill_defaults(config, REPO / "schemas" / "config.schema.yaml")
    return config


def _settings(**lapt) -> SimpleNamespace:
    return SimpleNamespace(default_resources=None, overwrite_resources={"lapt": lapt} if lapt else {})


def test_qwen_is_planned_by_its_own_shape_not_llama2s(empty_hf_cache):
    config = _grid({"qwen": {"kind": "hub", "path": "Qwen/Qwen2.5-7B", "size": "7B"}})
    jobs = {m.slug: (shape, hp) for _, m, shape, hp, _ in lapt_jobs(config)}
    assert jobs["Align.k100.2x2LS.mtp.L512"][0].vocab == 152064 + 100  # the expanded embedding, Qwen's padded rows
    planned = {
        slug: planned_gpus(shape, slug.split(".")[2], slug.split(".")[3], int(slug.split(".L")[1]), hp, "H100")
        for slug, (shape, hp) in jobs.items()
    }
    # The paper's 2x2 LS recipe (mtp, 512, 8 blocks a step, frozen weights bf16) on an 80 GB card: what "7B" meant
    # (Llama-2-7B's shape) against Qwen2.5-7B's own (3.4M more embedding rows and an untied head).
    hp = jobs["Align.k100.2x2LS.mtp.L512"][1]
    llama2 = planned_gpus(dataclasses.replace(MODELS["llama2-7b"], vocab=32100), "2x2LS", "mtp", 512, hp, "H100")
    assert llama2["peak_gib"] == 39.3 and planned["Align.k100.2x2LS.mtp.L512"]["peak_gib"] == 69.2
    assert estimate(MODELS["llama2-7b"], "2x2LS", 512, 8, objective="mtp", weights_dtype="bf16")["peak_gib"] == 39.3
    qwen = describe("qwen", {"kind": "hub", "path": "Qwen/Qwen2.5-7B"}).shape
    assert estimate(qwen, "2x2LS", 512, 8, objective="mtp", weights_dtype="bf16")["peak_gib"] == 69.1
    # clm at 2048: 4 blocks at a time fit the 80 GB card (Llama-2's shape took all 8)
    clm = planned["Align.k100.2x2LS.clm.L2048"]
    assert (clm["micro_batch"], clm["grad_accum"], clm["peak_gib"]) == (4, 2, 68.1) and clm["fits"]
    # Its jobs ask for the resources of its 7.6B parameters, not of the label.
    assert sized_resources("lapt", describe_models(config)["qwen"].parameters)["mem_mb"] == 68000


def test_a_lapt_job_that_does_not_fit_a_40gb_card_is_refused_at_planning(empty_hf_cache):
    config = _grid(
        {
            "qwen": {"kind": "hub", "path": "Qwen/Qwen2.5-7B"},
            "mistral": {"kind": "hub", "path": "mistralai/Mistral-7B-v0.3"},
        }
    )
    gpu_problems(config, _settings())  # an 80 GB card holds both
    with pytest.raises(ConfigError) as e:
        gpu_problems(config, _settings(gpu_model="a100-40gb", node_gpus=1))
    lines = str(e.value).splitlines()
    assert lines[0] == "LAPT jobs do not fit the GPU:"
    qwen = next(line for line in lines if "qwen/Align.k100.2x2LS.clm.L2048" in line)
    assert qwen.startswith(
        "  - LAPT job qwen/Align.k100.2x2LS.clm.L2048 needs 52 GiB at micro-batch 1 by tools.gpu_estimate; a GPU of "
        "the A100-40GB class (40 GiB, 36 usable) cannot hold it"
    )
    assert "sharded over 4 GPUs of a node (set-resources lapt: {node_gpus: 4}" in qwen
    assert "or on a larger GPU (set-resources lapt: {gpu_model: h100})" in qwen
    # Mistral-7B-v0.3 misses by a hair at micro-batch 1 (36.1 GiB of 36 usable); every paper 2x2 LS job of both models
    assert any("mistral/Align.k100.2x2LS.clm.L2048" in line and "needs 36 GiB" in line for line in lines)
    assert sum(line.startswith("  - ") for line in lines) == 4
    # On nodes of up to 8 such GPUs the jobs are sharded instead: Qwen's clm 2048 over 4, Mistral's over 2.
    counts = lapt_gpu_counts(config, "40GB", 8)
    assert counts[("qwen", "Align.k100.2x2LS.clm.L2048")] == 4
    assert counts[("mistral", "Align.k100.2x2LS.clm.L2048")] == 2


def test_a_model_of_any_size_plans(tmp_path, empty_hf_cache):
    folder = tmp_path / "llama-3b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_3B))
    bare = {"kind": "local", "path": str(folder)}
    for spec, size in (({**bare, "size": "3B"}, "3B"), (bare, "3.2B")):  # the label, else the count in words
        config = _grid({"small": spec})
        gpu_problems(config, _settings())
        model = describe_models(config)["small"]
        assert model.size == size and model.needs_gpu
        assert {m.slug for _, m, *_ in lapt_jobs(config)} == {"Align.k100.2x2LS.clm.L2048", "Align.k100.2x2LS.mtp.L512"}
        assert sized_resources("lapt", model.parameters) == {"mem_mb": 33000, "runtime": 115, "cpus_per_gpu": 8}


@pytest.mark.slow  # a dry run
def test_a_model_with_a_label_or_none_plans_as_its_shape(tmp_path):
    config = yaml.safe_load(tiny_config(tmp_path).read_text())
    tiny = config["models"]["tiny"]
    config["models"] = {"labelled": {**tiny, "size": "3B"}, "bare": {k: v for k, v in tiny.items() if k != "size"}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    run = snakemake(["-n", "--configfile", str(path)], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    lapt = [job for job in parse_dry_run(run.stdout) if job.rule == "lapt"]
    assert {job.wildcards["model"] for job in lapt} == {"labelled", "bare"}
    # the label says 3B, the shape 3.4M parameters: both ask for the test models' resources
    assert all((job.resources["mem_mb"], job.resources["runtime"]) == (2000, 20) for job in lapt)


@pytest.mark.slow  # a dry run
def test_the_dry_run_refuses_qwen_on_a_40gb_card(tmp_path):
    config = copy.deepcopy(_grid({"qwen": {"kind": "hub", "path": "Qwen/Qwen2.5-7B", "size": "7B"}}))
    config["run"] = "test-models"
    path = tmp_path / "qwen.yaml"
    path.write_text(yaml.safe_dump(config))
    forty = ["--set-resources", "lapt:gpu_model=a100-40gb", "lapt:node_gpus=1"]
    env = {"HF_HUB_CACHE": str(tmp_path / "hf-cache")}  # not cached: resources/model_configs/ has its config.json
    run = snakemake(["-n", "-q", "--configfile", str(path), *forty], REPO, env=env)
    text = run.stdout + run.stderr
    assert run.returncode != 0 and "LAPT jobs do not fit the GPU" in text
    assert "LAPT job qwen/Align.k100.2x2LS.clm.L2048" in text and "A100-40GB class" in text
    unknown = ["--set-resources", "lapt:gpu_model=v100"]
    target = "results/test-models/models/qwen/source_info.json"
    run = snakemake(["-n", target, "--configfile", str(path), *unknown], REPO, env=env)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "profile warning: set-resources lapt: GPU model 'v100' is not one" in run.stderr
