"""The GPU check of sharded LAPT (workflow_scripts/lapt/shard.py): FSDP on CUDA with NCCL, against one plain process.

For a machine with a GPU lent for minutes (needs torch, transformers, peft; not Snakemake): builds a small random
Llama and a BPE tokenizer from the repository's own docs, then for 2x2 LS + mtp, full and EEVE runs LAPT once as a
plain process and once under ``torchrun --nproc-per-node G`` (G = the GPUs visible; with one GPU that is FSDP over a
single process: the sharded code path, NCCL, DTensor row masks, gathered checkpoints and the saved folder), kills a
torchrun run after the checkpoint of step 4 and resumes it as a plain process. It writes, per run, the largest
parameter difference to the plain run, the peak CUDA memory and the tensor bytes each process held against
workflow_scripts.gpu for the same shape and G, as JSON (rewritten after every run, so a cut run keeps what it measured)
and Markdown::

    PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 python3 -m tools.gpu_fsdp_check --out "$OUT/fsdp" 2>&1 | tee "$OUT/fsdp.log"

It exits 1 when any run fails, the killed run was not killed at step 4, the resumed run did not resume from step 4,
or a sharded or resumed model differs from the plain one by more than ``--tolerance`` in any parameter (default: the
learning rate, the most one Adam step moves an element); the failures are the last lines it prints. ``--steps`` must
be at least EEVE's 7 stages (every stage takes a step) and above the kill step 4; ``--procedures`` runs some of the
three. On the CPU (no GPU: two gloo processes) this is a quick rehearsal of the same script::

    python -m tools.gpu_fsdp_check --hidden 64 --layers 4 --steps 7 --vocab 2000 --out /tmp/fsdp
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = (("2x2LS", "mtp"), ("full", "clm"), ("EEVE", "clm"))
KILL_AT = 4  # the torchrun run is killed after this step's checkpoint (checkpoint_every 2), then resumed


def build_model(folder: Path, hidden: int, layers: int, vocab: int) -> tuple[Path, Path]:
    """A random untied Llama with a BPE tokenizer trained on the repository's Markdown, and a corpus of its lines."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    lines = [ln.strip() for p in sorted(REPO.rglob("*.md")) for ln in p.read_text(encoding="utf-8").splitlines()]
    lines = [ln for ln in lines if len(ln) > 20]
    corpus = folder / "train.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<eos>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=hidden,
        intermediate_size=hidden * 11 // 4,
        num_hidden_layers=layers,
        num_attention_heads=max(hidden // 64, 1),
        num_key_value_heads=max(hidden // 128, 1),
        tie_word_embeddings=False,
        eos_token_id=fast.eos_token_id,
    )
    model_dir = folder / "model"
    LlamaForCausalLM(config).save_pretrained(model_dir)
    fast.save_pretrained(model_dir)
    return model_dir, corpus


def lapt(
    work: Path,
    model: Path,
    corpus: Path,
    procedure: str,
    objective: str,
    hp: dict,
    n_proc: int,
    n_source_rows: int,
    kill_at: int | None = None,
) -> dict:
    """One LAPT command line (plain when ``n_proc`` is 0, else torchrun with ``n_proc`` processes)."""
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n_proc}"] if n_proc else []
    cmd = [
        sys.executable,
        *launcher,
        "-m",
        "workflow_scripts.lapt",
        "--model",
        str(model),
        "--train",
        str(corpus),
        "--procedure",
        procedure,
        "--objective",
        objective,
        "--seq-len",
        "128",
        "--hparams",
        json.dumps(hp),
        "--out",
        str(work / "out"),
        "--stats",
        str(work / "stats.json"),
        "--loss-curve",
        str(work / "loss.tsv"),
        "--checkpoint-dir",
        str(work / "ckpt"),
    ]
    if procedure == "EEVE":
        cmd += ["--n-source-rows", str(n_source_rows)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if kill_at is not None:
        env["LAPT_TEST_KILL_AT_STEP"] = str(kill_at)
    t0 = time.time()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    out = {"returncode": done.returncode, "seconds": round(time.time() - t0, 1)}
    if done.returncode and kill_at is None:
        out["stderr"] = done.stderr[-3000:]
    elif (work / "stats.json").exists():
        out["stats"] = json.loads((work / "stats.json").read_text())
    return out


def difference(a: Path, b: Path) -> dict:
    """Largest absolute parameter difference between two saved models, and the share of elements within 1e-3."""
    import torch
    from transformers import AutoModelForCausalLM

    sa = AutoModelForCausalLM.from_pretrained(a, dtype=torch.float32).state_dict()
    sb = AutoModelForCausalLM.from_pretrained(b, dtype=torch.float32).state_dict()
    diffs = [(sa[k] - sb[k]).abs() for k in sa]
    return {
        "max_abs": max(float(d.max()) for d in diffs),
        "within_1e-3": sum(int((d <= 1e-3).sum()) for d in diffs) / sum(d.numel() for d in diffs),
    }


def predicted(model: Path, procedure: str, objective: str, hp: dict, shards: int) -> dict:
    """workflow_scripts.gpu's weights, gradients and Adam bytes per process and peak GiB for this shape."""
    from transformers import AutoConfig

    from workflow_scripts.gpu.estimate import estimate
    from workflow_scripts.gpu.shape import shape_from_config

    shape = shape_from_config(AutoConfig.from_pretrained(model))
    est = estimate(shape, procedure, 128, hp["batch_size"], objective=objective, shards=shards, gpu="H200")
    return {
        "per_stage": [{k: st[k] for k in ("weights", "gradients", "optimizer")} for st in est["per_stage"]],
        "peak_gib": est["peak_gib"],
        "memory_gib": est["memory_gib"],
    }


def failures(results: dict, tolerance: float) -> list[str]:
    """What failed in ``results``: a run that exited non-zero, a kill that did not happen, a resume that did not
    resume from the kill step, a difference to the plain run that is missing or above ``tolerance``."""
    out = []
    for r in results["runs"]:
        name = f"{r['procedure']} + {r['objective']}"
        for run in ("plain", "sharded", "resumed"):
            if r[run]["returncode"]:
                tail = r[run].get("stderr", "").strip().splitlines()[-1:] or ["no stderr"]
                out.append(f"{name}: the {run} run exited {r[run]['returncode']}: {tail[0]}")
        if not r["killed"]["returncode"]:
            out.append(f"{name}: the run to kill at step {KILL_AT} finished instead (exit 0)")
        resumed_from = r["resumed"].get("stats", {}).get("resumed_from")
        if not r["resumed"]["returncode"] and resumed_from != [KILL_AT]:
            out.append(f"{name}: the resumed run resumed from {resumed_from}, not [{KILL_AT}]")
        for key, what in (("difference", "sharded"), ("resumed_difference", "resumed")):
            diff = r.get(key, {}).get("max_abs")
            if diff is None:
                out.append(f"{name}: no {what} difference (a run failed)")
            elif diff > tolerance:
                out.append(f"{name}: the {what} model differs from the plain one by {diff:.3g} > {tolerance:g}")
    return out


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[tuple[str, str]]]:
    """The options and the (procedure, objective) runs they select; a usage error when ``--steps`` is too few for
    the longest procedure or the kill step."""
    p = argparse.ArgumentParser(
        prog="python -m tools.gpu_fsdp_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", required=True, help="output folder (results.json, results.md, the runs)")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--steps", type=int, default=14, help="optimizer steps per run (at least 7: EEVE's stages)")
    p.add_argument(
        "--procedures",
        nargs="+",
        choices=[proc for proc, _ in RUNS],
        default=[proc for proc, _ in RUNS],
        help="the procedures to run (default: all three, each with its objective above)",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="largest parameter difference to the plain run that passes (default: the lr)",
    )
    a = p.parse_args(argv)
    from workflow_scripts.lapt.procedures import PROCEDURES

    runs = [(proc, objective) for proc, objective in RUNS if proc in a.procedures]
    longest = max((proc for proc, _ in runs), key=lambda proc: len(PROCEDURES[proc].stages))
    n_stages = len(PROCEDURES[longest].stages)
    least = max(n_stages, KILL_AT + 1)
    if a.steps < least:
        stages = f"{n_stages} stage{'s' * (n_stages > 1)}"
        p.error(
            f"--steps {a.steps}: every run needs at least {least} optimizer steps ({longest} has {stages} of "
            f"at least one step each, and the kill is after step {KILL_AT})"
        )
    return a, runs


def check_procedure(
    base: Path, model: Path, corpus: Path, procedure: str, objective: str, hp: dict, n_proc: int, n_src: int
) -> dict:
    """One procedure's row: its plain, sharded, killed and resumed runs under ``base``, the differences of the sharded
    and resumed models to the plain one, and the predicted bytes for one process and for ``n_proc``."""
    row = {"procedure": procedure, "objective": objective}
    row["plain"] = lapt(base / "plain", model, corpus, procedure, objective, hp, 0, n_src)
    row["sharded"] = lapt(base / "sharded", model, corpus, procedure, objective, hp, n_proc, n_src)
    if not row["plain"]["returncode"] and not row["sharded"]["returncode"]:
        row["difference"] = difference(base / "plain" / "out", base / "sharded" / "out")
    row["predicted_plain"] = predicted(model, procedure, objective, hp, 1)
    row["predicted_sharded"] = predicted(model, procedure, objective, hp, n_proc)
    # killed after the checkpoint of step KILL_AT under torchrun, resumed as a plain process
    row["killed"] = lapt(base / "resumed", model, corpus, procedure, objective, hp, n_proc, n_src, kill_at=KILL_AT)
    row["resumed"] = lapt(base / "resumed", model, corpus, procedure, objective, hp, 0, n_src)
    if not row["plain"]["returncode"] and not row["resumed"]["returncode"]:
        row["resumed_difference"] = difference(base / "plain" / "out", base / "resumed" / "out")
    return row


def report_lines(results: dict, bad: list[str], tolerance: float) -> list[str]:
    """The Markdown report: a table row per procedure (differences, peaks, held and predicted bytes), then the
    failures ``bad`` or the line that every difference passed."""
    lines = [
        "| procedure | max diff sharded | max diff resumed | peak GiB plain | peak GiB sharded (rank 0) "
        "| held MiB sharded (w/g/Adam) | predicted MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    mib = 2**20
    for r in results["runs"]:
        st = r["sharded"].get("stats", {})
        held = max(
            (s.get("measured_bytes", {}) for s in st.get("stages", [])), key=lambda d: sum(d.values()), default={}
        )
        pred = max(r["predicted_sharded"]["per_stage"], key=lambda d: sum(d.values()))
        lines.append(
            f"| {r['procedure']} | {r.get('difference', {}).get('max_abs', 'failed')} "
            f"| {r.get('resumed_difference', {}).get('max_abs', 'failed')} "
            f"| {r['plain'].get('stats', {}).get('peak_memory_bytes', 0) / 2**30:.2f} "
            f"| {st.get('peak_memory_bytes', 0) / 2**30:.2f} "
            f"| {'/'.join(f'{v / mib:.0f}' for v in held.values())} "
            f"| {'/'.join(f'{v / mib:.0f}' for v in pred.values())} |"
        )
    lines += ["", *(f"FAILED: {f}" for f in bad)] if bad else ["", f"passed: every difference within {tolerance:g}"]
    return lines


def main(argv: list[str] | None = None) -> int:
    a, runs = parse_args(argv)
    import torch

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n_proc = torch.cuda.device_count() or 2
    model, corpus = build_model(out, a.hidden, a.layers, a.vocab)
    n_src = len(json.loads((model / "tokenizer.json").read_text())["model"]["vocab"]) - 64
    hp = {
        "batch_size": 4,
        "grad_accum": 2,
        "lr": 1e-4,
        "warmup_steps": 0,
        "max_steps": a.steps,
        "checkpoint_every": 2,
        "log_every": 1,
    }
    tolerance = hp["lr"] if a.tolerance is None else a.tolerance
    results = {
        "gpus": torch.cuda.device_count(),
        "processes": n_proc,
        "hparams": hp,
        "tolerance": tolerance,
        "runs": [],
    }
    for procedure, objective in runs:
        base = out / f"{procedure}.{objective}"
        row = check_procedure(base, model, corpus, procedure, objective, hp, n_proc, n_src)
        results["runs"].append(row)
        results["failures"] = failures(results, tolerance)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(json.dumps({k: v for k, v in row.items() if k in ("procedure", "difference", "resumed_difference")}))
    bad = failures(results, tolerance)
    lines = report_lines(results, bad, tolerance)
    (out / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
