"""GPU fit: the estimate's corrected terms against measured tensors on tiny shapes, the planning check of every
paper-grid LAPT job against its GPU class, the mtp hook across 2-stage, checkpoints on a signal, bf16 saves."""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from tests.conftest import REPO
from tools.plan import parse_dry_run
from workflow_scripts.gpu import estimate as ge
from workflow_scripts.gpu.fit import planned
from workflow_scripts.gpu.shape import GIB
from workflow_scripts.lapt import loop, resolve_hparams
from workflow_scripts.lapt.objective import LossComputer
from workflow_scripts.plan.checks.gpu_fit import gpu_fit_problems
from workflow_scripts.plan.checks.schema import fill_defaults
from workflow_scripts.plan.grid import TRAINING_NOT_HPARAMS, expand_grid
from workflow_scripts.plan.models import describe_models
from workflow_scripts.plan.resources import GPU_CLASSES, gpu_class, sized_resources
from workflow_scripts.procedure_stages import STAGES, StageSpec

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def thai_file(tmp_path_factory, thai_lines) -> Path:
    path = tmp_path_factory.mktemp("thai") / "train.txt"
    path.write_text("\n".join(thai_lines[:20]) + "\n", encoding="utf-8")
    return path


def test_two_stage_keeps_one_mtp_hook_and_frees_a_replaced_head(tmp_path, tiny_llama_dir, thai_file):
    hp = {"batch_size": 2, "max_steps": 2, "checkpoint_every": 1000}
    run = loop.prepare_run(
        tiny_llama_dir,
        thai_file,
        procedure="2-stage",
        objective="mtp",
        seq_len=16,
        hparams=hp,
        checkpoint_dir=tmp_path / "c",
        n_source_rows=None,
    )
    state = loop.load_model(run)
    loop.enter_stage(run, state, 0)
    loop.optimizer_step(run, state)
    hooks1 = dict(state.model.get_output_embeddings()._forward_hooks)
    loop.enter_stage(run, state, 1)  # LoRA wraps the model
    head = state.model.get_output_embeddings()
    assert len(head._forward_hooks) == 1 and set(head._forward_hooks).isdisjoint(hooks1)
    loop.optimizer_step(run, state)
    # A stage that hands back another head module: the loss lets go of the old one (no hook keeps it alive).
    old = torch.nn.Linear(4, 8, bias=False)
    loss = LossComputer(SimpleNamespace(config=SimpleNamespace()), "mtp", old)
    ref = weakref.ref(old)
    loss.attach(torch.nn.Linear(4, 8, bias=False))
    del old
    gc.collect()
    assert ref() is None
    # After training no hook (holding the loss and its mtp head) is left on the saved model.
    loop.write_outputs(run, state, tmp_path / "out", None)
    assert not state.model.get_output_embeddings()._forward_hooks


# ------------------------------------------------------------------------------------------ planning


def _paper_config() -> dict:
    config = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    fill_defaults(config, REPO / "schemas" / "config.schema.yaml")
    # its own run folder: the dry runs below plan in the repository, beside any run of configs/paper.yaml there
    config["run"] = "test-gpu-fit"
    return config


@pytest.mark.parametrize("gpu_class", ["80GB", "94GB", "141GB"])
def test_every_paper_lapt_job_fits_its_gpu_class(gpu_class):
    config = _paper_config()
    assert gpu_fit_problems(config, gpu_class) == []
    # The check looked at every LAPT job of a model that needs a GPU, and each one's planned peak is within the class.
    gpu, models = GPU_CLASSES[gpu_class], describe_models(config)
    jobs = {
        (model, m.slug, m.procedure, m.objective, m.seq_len)
        for model, _, m in expand_grid(config)
        if m.trains and m.procedure in STAGES and models[model].needs_gpu
    }
    assert {p for *_, p, _, _ in jobs} >= {"LoRA", "2-stage", "2x2LS", "EEVE"}
    training = {k: v for k, v in config["training"].items() if k not in TRAINING_NOT_HPARAMS}
    hp = resolve_hparams({**training, "eeve_layers": "LoRA"})
    for model, _, procedure, objective, seq_len in jobs:
        est = planned(models[model].shape, procedure, objective, seq_len, hp, gpu)
        assert est["fits"] and est["peak_gib"] <= 0.9 * ge.GPUS[gpu]["memory_gib"]
        assert est["micro_batch"] * est["grad_accum"] == 8  # Table 13's batch, whatever the split


def test_a_cell_that_cannot_fit_is_refused_with_the_key_named():
    config = _paper_config()
    eeve = next(i for i, e in enumerate(config["methods"]) if e.get("procedure") == "EEVE")
    del config["methods"][eeve]["hparams"]  # EEVE's stage 6 then trains every layer fully
    problems = gpu_fit_problems(config, "141GB")
    assert problems and all(p.startswith('training.eeve_layers: "full" does not fit') for p in problems)
    assert [p.split(" needs ")[0].rsplit(" ", 1)[1] for p in problems] == [
        "llama3/EEVE.k100.EEVE.clm.L512",
        "gemma2/EEVE.k100.EEVE.clm.L512",
    ]
    assert all("Set eeve_layers: LoRA" in p for p in problems)
    # A fixed micro-batch too large for 80 GB names the key it comes from, and auto as the way out.
    config = _paper_config()
    config["models"]["gemma2"]["hparams"] = {"micro_batch": 8}
    problems = gpu_fit_problems(config, "80GB")
    assert problems and all(p.startswith("models.gemma2.hparams.micro_batch: 8 does not fit") for p in problems)
    assert gpu_fit_problems(config, "141GB") == []  # 8 blocks of Gemma-2 + mtp at 512 fit an H200


def _slurm_commands(job) -> tuple[str, str]:
    """The sbatch command the Slurm executor plugin submits for a dry run's job, and the srun of its job step."""
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm_jobstep import get_cpu_setting, get_gpu_setting, get_node_setting

    class Resources(dict):
        __getattr__ = dict.__getitem__

    res = Resources(job.resources)
    fake = SimpleNamespace(resources=res, threads=int(job.threads or 1))
    params = {
        "run_uuid": "u",
        "slurm_logfile": "log",
        "comment_str": "c",
        "account": "",
        "partition": "",
        "workdir": "",
    }
    sbatch = get_submit_command(fake, params) + set_gres_string(fake)
    gpu = bool(res.get("gpu"))
    step = f"srun -n1 {get_cpu_setting(fake, gpu)} {get_gpu_setting(fake)} {get_node_setting(fake)}"
    return sbatch, step


@pytest.mark.slow  # Snakemake dry runs of the paper grid
def test_the_dry_run_refuses_a_cell_that_cannot_fit(tmp_path):
    config = _paper_config()
    eeve = next(i for i, e in enumerate(config["methods"]) if e.get("procedure") == "EEVE")
    del config["methods"][eeve]["hparams"]
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(config))
    one_gpu = ["--set-resources", "lapt:node_gpus=1"]  # nodes of one GPU: nothing to shard over
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-q", "--configfile", str(path), *one_gpu],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "LAPT jobs do not fit the GPU" in text and "training.eeve_layers" in text
    assert "node_gpus: 4" in text  # the other way out: 4 GPUs of a node
    # With the default of up to 8 GPUs a node, the EEVE job is planned on 4 of 80 GB and launched by torchrun.
    target = "results/test-gpu-fit/llama3/my/EEVE.k100.EEVE.clm.L512/train_stats.json"
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", target, "-n", "-p", "--configfile", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    lapt_job = text[text.index("rule lapt:") :]
    assert "torchrun --standalone --nproc-per-node 4 -m workflow_scripts.lapt" in lapt_job
    job = next(j for j in parse_dry_run(text) if j.rule == "lapt")
    assert job.gpus == 4  # what tools.plan counts: GPU-hours are 4 x the time limit
    sbatch, step = _slurm_commands(job)
    # One node, 4 GPUs and 8 CPUs each, the host memory of 4 processes; the job step is one task holding all 4 GPUs,
    # in which torchrun starts the 4 processes.
    mem = 4 * sized_resources("lapt", describe_models(config)["llama3"].parameters)["mem_mb"]  # 4 x 71 GB
    assert {"--gpus=4", "--nodes=1", "--cpus-per-gpu=8", "--mem", str(mem), "--signal=USR1@600"} <= set(sbatch.split())
    assert {"-n1", "--gpus=4", "--nodes=1", "--cpus-per-gpu=8"} <= set(step.split())
    # The GPU class follows the profile: Gemma-2's 8 blocks at once fit an H200 the profile asks for, not 80 GB.
    config = _paper_config()
    config["models"]["gemma2"]["hparams"] = {"micro_batch": 8}
    path.write_text(yaml.safe_dump(config))
    plan = [sys.executable, "-m", "snakemake", "-n", "-q", "--configfile", str(path)]
    out = subprocess.run(plan, cwd=REPO, capture_output=True, text=True)
    assert out.returncode != 0 and "models.gemma2.hparams.micro_batch: 8 does not fit" in out.stdout + out.stderr
    # planning's checks run whatever the target: one small target spares building the whole grid's DAG
    target = "results/test-gpu-fit/models/gemma2/source_info.json"
    h200 = [*plan[:3], target, *plan[3:], "--set-resources", "lapt:gpu_model=h200"]
    out = subprocess.run(h200, cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and "prepare_source_model" in out.stdout + out.stderr, (out.stdout + out.stderr)[-3000:]


def test_gpu_class_follows_the_profile():
    assert gpu_class({"gpu_model": "h200"}) == "141GB" and gpu_class({"gres": "gpu:h200:1"}) == "141GB"
    assert gpu_class({"gpu_model": "a100"}) == gpu_class({}) == gpu_class({"gres": "gpu:1"}) == "80GB"
    # the memory a name states, as sites write it, else its family's
    for forty in ("a100-40gb", "a100_40gb", "A100-SXM4-40GB", "nvidia_a100-pcie-40gb"):
        assert gpu_class({"gpu_model": forty}) == "40GB", forty
    assert gpu_class({"gres": "gpu:a100_40g:1"}) == "40GB" and gpu_class({"gpu_model": "a100-sxm4-80gb"}) == "80GB"
    assert gpu_class({"gpu_model": "l40s"}) == gpu_class({"gpu_model": "rtx_a6000"}) == "48GB"
    assert gpu_class({"gpu_model": "h100-nvl"}) == gpu_class({"gres": "gpu:h100_nvl:2"}) == "94GB"
    # every class's GPU is named so that its lower-cased name plans as that class (fit_problem suggests them so)
    assert all(gpu_class({"gpu_model": gpu.lower()}) == cls for cls, gpu in GPU_CLASSES.items())


def test_an_unknown_gpu_model_is_planned_as_80gb_with_a_warning():
    from workflow_scripts.plan.resources import gpu_model_warnings

    settings = SimpleNamespace(default_resources=None, overwrite_resources={"lapt": {"gpu_model": "v100"}})
    assert gpu_class({"gpu_model": "v100"}) == "80GB"
    (warning,) = gpu_model_warnings(settings)
    assert warning.startswith(
        "set-resources lapt: GPU model 'v100' is not one workflow_scripts/plan/resources.py knows"
    )
    assert "lapt is planned as the 80GB class (H100)" in warning
    known = SimpleNamespace(default_resources=None, overwrite_resources={"lapt": {"gpu_model": "a100-40gb"}})
    assert gpu_model_warnings(known) == []


# ------------------------------------------------------------------------------------------ estimate vs tensors


def test_micro_batch_resplits_the_same_step(tmp_path, tiny_llama_dir, thai_file):
    # micro_batch re-splits each step's blocks: the same step (losses, weights) as batch_size x grad_accum.
    kw = dict(procedure="2x2LS", objective="clm", seq_len=16, n_source_rows=None)
    out = {}
    for name, hp in {"whole": {"batch_size": 4}, "split": {"batch_size": 4, "micro_batch": 1}}.items():
        hp = {**hp, "max_steps": 2}
        run = loop.prepare_run(tiny_llama_dir, thai_file, hparams=hp, checkpoint_dir=tmp_path / name, **kw)
        state = loop.load_model(run)
        loop.enter_stage(run, state, 0)
        loop.optimizer_step(run, state)
        loop.optimizer_step(run, state)
        loop.flush_losses(state)
        out[name] = ([h["loss"] for h in state.history], state.model.model.embed_tokens.weight.detach().clone(), run)
    assert out["split"][2].micro == 1 and out["whole"][2].micro == 4
    assert out["split"][0] == pytest.approx(out["whole"][0], rel=1e-5)
    torch.testing.assert_close(out["split"][1], out["whole"][1], rtol=1e-4, atol=1e-6)
    with pytest.raises(
        ValueError, match="micro_batch must be null, 'auto' or a divisor of batch_size x grad_accum = 4"
    ):
        resolve_hparams({"batch_size": 4, "micro_batch": 3})


def _tiny_gemma2(weights: torch.dtype):
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(
        vocab_size=512,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        final_logit_softcapping=30.0,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    return Gemma2ForCausalLM(config).to(weights)


def _saved_vocab_bytes(loss_fn, ids, vocab: int) -> int:
    """Bytes of the (token, vocabulary)-shaped tensors autograd keeps for backward while computing the loss (not the
    bf16 copy of the head's weight, which is the estimate's autocast_cache term)."""
    saved: dict[int, int] = {}
    positions = ids.shape[0] * (ids.shape[1] - 2)

    def pack(t):
        if t.shape and t.shape[-1] == vocab and t.numel() >= positions * vocab:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss_fn(ids, ids.numel(), ids.numel())
    return sum(saved.values())


class _LivePeak(TorchDispatchMode):
    """The peak bytes of live (token, vocabulary)-shaped tensors over every op run inside it, backward included."""

    def __init__(self, vocab: int, min_numel: int):
        super().__init__()
        self.vocab, self.min_numel, self.live, self.peak = vocab, min_numel, {}, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.dim() and t.shape[-1] == self.vocab and t.numel() >= self.min_numel:
                storage = t.untyped_storage()
                self.live[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())
        self.live = {k: v for k, v in self.live.items() if not v[0].expired()}
        self.peak = max(self.peak, sum(n for _, n in self.live.values()))
        return out


@pytest.mark.parametrize("objective", ["clm", "mtp"])
@pytest.mark.parametrize("arch", ["llama", "gemma2"])
def test_logit_term_matches_measured_tensor_bytes(objective, arch, tiny_llama_dir):
    """The estimate's logits bytes per (position, vocabulary entry) against a tiny model's real loss under bf16
    autocast, trainable head in fp32 as lapt keeps it: what autograd keeps, and the peak of live tensors."""
    from transformers import AutoModelForCausalLM

    if arch == "gemma2":
        model = _tiny_gemma2(torch.bfloat16)
    else:
        model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir, dtype=torch.bfloat16)
    model.requires_grad_(False)
    head = model.get_output_embeddings()
    head.float().requires_grad_(True)
    vocab, batch, seq = model.config.vocab_size, 2, 64
    loss_fn = LossComputer(model, objective, head)
    if loss_fn.extra_head is not None:
        loss_fn.extra_head.float()
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))
    expected = ge.logit_bytes(objective, softcap=arch == "gemma2")
    kept = _saved_vocab_bytes(loss_fn, ids, vocab) / (batch * seq * vocab)
    assert kept == pytest.approx(expected["kept"], rel=2 / seq)  # the estimate counts s positions, the heads s-1, s-2
    peak = _LivePeak(vocab, batch * (seq - 2) * vocab)
    with peak:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(ids, ids.numel(), ids.numel())
        loss.backward()
    assert peak.peak / (batch * seq * vocab) == pytest.approx(expected["kept"] + expected["transient"], rel=2 / seq)


@pytest.mark.parametrize(("embedding_trained", "weights_dtype"), [(True, "bf16"), (False, "bf16"), (False, "fp32")])
def test_residual_stream_width_matches_the_estimate(embedding_trained, weights_dtype):
    model = _tiny_gemma2(torch.bfloat16 if weights_dtype == "bf16" else torch.float32)
    if embedding_trained:  # lapt keeps trainable parameters in fp32
        model.get_input_embeddings().float()
    widths = []
    model.model.layers[1].register_forward_pre_hook(
        lambda mod, args, kw: (
            widths.append(args[0].element_size()) if args else widths.append(kw["hidden_states"].element_size())
        ),
        with_kwargs=True,
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=torch.zeros(1, 8, dtype=torch.long), use_cache=False)
    stage = StageSpec("2x2" if embedding_trained else "lora", embedding_trained, embedding_trained)
    assert widths == [ge.residual_bytes(stage, tied=True, weights_dtype=weights_dtype)]


# ------------------------------------------------------------------------------------------ saved dtype


def _saved_dtypes(folder: Path) -> set[str]:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        return {str(f.get_slice(k).get_dtype()) for k in f.keys()}


@pytest.mark.slow  # an initialization of the tiny model's 49K rows
def test_source_model_is_saved_in_the_dtype_training_keeps_frozen_weights_in(tmp_path, tiny_llama_dir):
    from workflow_scripts.initialize.apply import initialize
    from workflow_scripts.source_model import prepare

    assert _saved_dtypes(tiny_llama_dir) == {"F32"}
    spec = {"kind": "local", "path": str(tiny_llama_dir)}
    assert prepare(spec, tmp_path / "fp32")["dtype"] == "fp32" and _saved_dtypes(tmp_path / "fp32") == {"F32"}
    assert prepare({**spec, "save_dtype": "bf16"}, tmp_path / "bf16")["dtype"] == "bf16"
    assert _saved_dtypes(tmp_path / "bf16") == {"BF16"}
    with pytest.raises(ValueError, match="save_dtype 'fp16'"):
        prepare({**spec, "save_dtype": "fp16"}, tmp_path / "bad")
    # The initialize step saves in the source's dtype.
    report = initialize(tmp_path / "bf16", tmp_path / "bf16", tmp_path / "init", "Random", seed=0, pad_to_multiple_of=8)
    assert report["dtype"] == "bfloat16" and _saved_dtypes(tmp_path / "init") == {"BF16"}


# ------------------------------------------------------------------------------------------ gpu_bench, gpu_corrections


@pytest.mark.slow  # nine tiny LAPT stages on the CPU
def test_gpu_bench_tiny_measures_the_paper_jobs_term_by_term(tmp_path, monkeypatch, capsys):
    import json

    from tools import gpu_bench, gpu_corrections

    out = tmp_path / "bench.json"
    written = []
    real_write = gpu_bench.write_json
    monkeypatch.setattr(
        gpu_bench, "write_json", lambda path, obj: (written.append(len(obj["training"])), real_write(path, obj))
    )
    gpu_bench.main(
        ["--tiny", "--out", str(out), "--models", "gemma2-9b", "--seq-lens", "8", "--repeats", "1", "--no-decoding"]
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    # The paper grid's Gemma-2 LAPT kinds: 2x2 LS + mtp, and EEVE's seven stages with LoRA layers, bf16 frozen weights.
    jobs = {(j["model"], j["procedure"], tuple(j["objectives"]), j["hp"]["eeve_layers"]) for j in result["jobs"]}
    assert jobs == {("gemma2-9b", "2x2LS", ("mtp",), "full"), ("gemma2-9b", "EEVE", ("clm",), "LoRA")}
    training = result["training"]
    assert [(t["procedure"], t["stage_index"]) for t in training] == [("2x2LS", 0)] + [("EEVE", i) for i in range(7)]
    assert all(t["weights_dtype"] == "bf16" and t["gpu_classes"] == ["80GB", "141GB"] for t in training)
    # The estimate's weight, gradient and Adam bytes equal the tensors each stage holds (bf16 frozen, fp32 trained,
    # earlier stages' trained parameters still fp32).
    for t in training:
        assert {k: t["measured_bytes"][k] for k in ("weights", "gradients", "optimizer")} == {
            k: t["estimate_bytes"][k] for k in ("weights", "gradients", "optimizer")
        }, (t["procedure"], t["stage"])
    # Written after every entry, not per model or procedure.
    assert written == [0, *range(1, len(training) + 1), len(training)]  # at the start, per entry, at the end
    assert gpu_corrections.main([str(out)]) == 0
    report = capsys.readouterr().out
    assert "the estimate's bytes equal the measured tensors" in report and "no CUDA peak" in report


def test_gpu_corrections_from_cuda_entries():
    from tools import gpu_corrections

    def entry(beyond_factor: float, seconds: float, classes: list[str], peak_gib: float) -> dict:
        est = {
            "weights": 10 * GIB,
            "gradients": 2 * GIB,
            "optimizer": 4 * GIB,
            "autocast_cache": GIB,
            "frozen_row_snapshot": 0,
            "activations_layers": GIB,
            "logits": 2 * GIB,
        }
        held = {k: est[k] for k in ("weights", "gradients", "optimizer")}
        peak = int(peak_gib * GIB)
        measured = {**held, "peak": peak, "beyond_states": int(beyond_factor * 4 * GIB)}
        return {
            "model": "gemma2-9b",
            "procedure": "2x2LS",
            "stage": "2x2LS",
            "objective": "mtp",
            "seq_len": 512,
            "micro_batch": 4,
            "gpu_classes": classes,
            "measured_bytes": measured,
            "estimate_bytes": est,
            "step_seconds": seconds,
            "estimate_stage_step_seconds": 1.0,
        }

    bench = {
        "training": [
            entry(1.5, 2.0, ["80GB"], 60.0),
            entry(1.2, 1.0, ["141GB"], 90.0),
            {"skipped": "budget"},
            {**entry(1, 1, ["80GB"], 1), "oom": "CUDA out of memory"},
        ]
    }
    c = gpu_corrections.corrections(bench)
    assert c["activation_factor"] == pytest.approx(1.5, rel=1e-6)
    assert c["mfu_by_model"]["gemma2-9b"] == pytest.approx(statistics.median([0.35 / 2, 0.35, 0.35]))
    assert c["over_80gb"] == [] and c["skipped"] == 1 and len(c["out_of_memory"]) == 1 and c["state_terms_exact"]
    bench["training"][0]["measured_bytes"]["peak"] = int(75 * GIB)  # + 3 GiB context > 90% of 79.6 GiB
    assert len(gpu_corrections.corrections(bench)["over_80gb"]) == 1
    assert "multiply those terms by it" in gpu_corrections.render(c)


def test_a_replacement_job_is_sized_by_its_largest_language_override():
    """A language's own replace_vocab_size (grid.vocab_size) sizes the replacement job, not only the global one."""
    from workflow_scripts.plan.checks.gpu_fit import lapt_jobs

    config = _paper_config()
    config["methods"] = [{"init": "Mean", "vocab": "replace"}]
    lang = next(iter(config["languages"]))
    config["languages"][lang]["replace_vocab_size"] = 64000
    vocabs = {shape.vocab for _, m, shape, _, _ in lapt_jobs(config) if m.vocab == "replace"}
    assert vocabs == {64000}
