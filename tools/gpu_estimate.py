"""The command line of the LAPT GPU estimate (workflow_scripts.gpu): memory and time per model, procedure and
sequence length as a Markdown table or JSON, or with ``--plan CONFIG`` the LAPT job kinds of a config's grid as the
workflow plans them on each GPU class. A model is one of the estimator's names (llama2-7b, ...), a hub id whose
config.json is in the Hugging Face cache or resources/model_configs/ (Qwen/Qwen2.5-7B), or a config.json or model
folder. ``--help`` prints what the estimate counts."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from workflow_scripts.gpu import estimate as memory_model
from workflow_scripts.gpu.estimate import GPUS, estimate, fitting_micro_batch
from workflow_scripts.gpu.fit import planned_gpus
from workflow_scripts.gpu.shape import ALIASES, MODELS, ModelShape, shape_from_config
from workflow_scripts.io import setup_logging, write_text
from workflow_scripts.procedure_stages import STAGES


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The estimates as a Markdown table (one row per model, procedure, objective, sequence length, weights dtype)."""
    head = (
        "| model | procedure | seq | weights | trainable | weights GiB | grads+Adam GiB | activ. GiB | logits GiB "
        "| peak GiB (batch 8) | fits 80 GB | micro-batch that fits | s/step | hours (5M tokens, 2 ep.) |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        full, fit = r["batch8"], r["fit"]
        mem = full["memory_gib"]
        fit_text = f"{fit['micro_batch']} ({fit['peak_gib']:.0f} GiB)" if fit["fits"] else "none"
        lines.append(
            f"| {r['model']} | {r['procedure']}{'+mtp' if full['objective'] == 'mtp' else ''} | {full['seq_len']} "
            f"| {full['weights_dtype']} | {full['trainable_parameters'] / 1e9:.2f}B | {mem['weights']:.1f} "
            f"| {mem['gradients'] + mem['optimizer']:.1f} | {mem['activations_layers']:.1f} | {mem['logits']:.1f} "
            f"| {full['peak_gib']:.0f} | {'yes' if full['fits'] else 'no'} "
            f"| {fit_text} "
            f"| {fit['step_seconds']:.2f} | {fit['train_hours']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def model_shape(name: str) -> str | ModelShape:
    """A --models entry: an estimator name as it is, else the shape of a config.json file or folder, or of a hub id's
    config.json (workflow_scripts.plan.models.hub_config). Raises ValueError for anything else."""
    from workflow_scripts.plan.models import hub_config

    if name in MODELS or name in ALIASES:
        return name
    path = Path(name)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return shape_from_config(json.loads(path.read_text(encoding="utf-8")))
    found = hub_config(name) if "/" in name else None
    if found is None:
        raise ValueError(
            f"model {name!r}: not one of {', '.join(MODELS)}, a config.json or a hub id whose config.json is in the "
            "Hugging Face cache or resources/model_configs/"
        )
    return shape_from_config(found[0])


def grid(
    models: list[str], procedures: list[str], seq_lens: list[int], weights_dtypes: list[str], **kw
) -> list[dict[str, Any]]:
    """Estimates for every combination, at micro-batch 8 and at the largest micro-batch that fits."""
    rows = []
    for model in models:
        shape = model_shape(model)
        for name in procedures:
            # "EEVE+LoRA" is EEVE with lapt's hparam eeve_layers="LoRA".
            proc, extra = ("EEVE", {"eeve_layers": "LoRA"}) if name == "EEVE+LoRA" else (name, {})
            for wd in weights_dtypes:
                for s in seq_lens:
                    rows.append(
                        {
                            "model": model,
                            "procedure": name,
                            "batch8": estimate(shape, proc, s, 8, weights_dtype=wd, **extra, **kw),
                            "fit": fitting_micro_batch(shape, proc, s, 8, weights_dtype=wd, **extra, **kw),
                        }
                    )
    return rows


def _fill_schema_defaults(config: dict) -> None:
    """The config schema's defaults (with the registries' names and keys), as the workflow fills them; skipped where
    jsonschema is not installed (a lent GPU machine), since the grid's own defaults (workflow_scripts.plan.grid) cover
    what the LAPT jobs need."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        return
    from workflow_scripts.plan.checks.schema import fill_defaults

    fill_defaults(config, Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml")


def plan_table(
    configfile: str, corpus_tokens: int = 5_000_000, node_gpus: int | None = None, classes: list[str] | None = None
) -> str:
    """The LAPT job kinds of a config's grid as the workflow plans them on each GPU class
    (workflow_scripts.plan.resources GPU_CLASSES, or those of ``classes``) with at most ``node_gpus`` GPUs a job: GPUs,
    micro-batch, estimated peak per GPU, step time and GPU-hours (training hours x GPUs), and the time limit the job
    asks for."""
    import yaml

    from workflow_scripts.plan.checks.gpu_fit import lapt_jobs
    from workflow_scripts.plan.models import describe_models
    from workflow_scripts.plan.resources import DEFAULT_NODE_GPUS, GPU_CLASSES, sized_resources

    config = yaml.safe_load(open(configfile, encoding="utf-8"))
    _fill_schema_defaults(config)
    models = describe_models(config)
    kinds: dict[tuple, tuple] = {}
    for model, m, shape, hp, _ in lapt_jobs(config, models):
        key = (model, m.procedure, m.objective, m.seq_len, hp["eeve_layers"] if m.procedure == "EEVE" else "")
        kinds.setdefault(key, (model, m, shape, hp, []))[4].append(m.slug)
    classes = classes or list(GPU_CLASSES)
    head = ["model", "procedure", "objective", "seq", "methods"]
    for cls in classes:
        head += [f"{cls} GPUs", f"{cls} micro-batch", f"{cls} peak GiB", f"{cls} s/step", f"{cls} GPU-hours"]
    lines = ["| " + " | ".join([*head, "time limit (min)"]) + " |", "|" + "---|" * (len(head) + 1)]
    for (model, proc, obj, seq, eeve), (_, _, shape, hp, slugs) in kinds.items():
        row = [model, proc + (f" ({eeve} layers)" if eeve else ""), obj, str(seq), str(len(slugs))]
        for gpu in (GPU_CLASSES[cls] for cls in classes):
            est = planned_gpus(
                shape, proc, obj, seq, hp, gpu, node_gpus or DEFAULT_NODE_GPUS, corpus_tokens=corpus_tokens
            )
            fit = "" if est["fits"] else " (does not fit)"
            row += [
                str(est["gpus"]),
                f"{est['micro_batch']} x {est['grad_accum']}",
                f"{est['peak_gib']:.0f}{fit}",
                f"{est['step_seconds']:.2f}",
                f"{est['gpu_hours']:.2f}",
            ]
        row.append(str(sized_resources("lapt", models[model].parameters)["runtime"]))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m tools.gpu_estimate",
        description=memory_model.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--models",
        nargs="+",
        default=["llama2-7b", "llama3-8b", "gemma2-9b"],
        help=f"{', '.join(MODELS)}, a hub id (Qwen/Qwen2.5-7B) or a config.json",
    )
    p.add_argument("--procedures", nargs="+", default=[*STAGES, "EEVE+LoRA"], choices=[*STAGES, "EEVE+LoRA"])
    p.add_argument("--seq-lens", nargs="+", type=int, default=[512, 2048])
    p.add_argument("--weights-dtypes", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--objective", default="clm", choices=["clm", "mtp"])
    p.add_argument("--gpu", default="H100", choices=list(GPUS))
    p.add_argument("--mfu", type=float, default=0.35, help="assumed share of the GPU's bf16 dense peak")
    p.add_argument("--corpus-tokens", type=int, default=5_000_000, help="tokens of D under T_t (sets the steps)")
    p.add_argument(
        "--plan", metavar="CONFIG", help="print the LAPT job kinds of CONFIG's grid as planned per GPU class"
    )
    p.add_argument("--node-gpus", type=int, help="with --plan: GPUs a LAPT job may shard over (the workflow's default)")
    p.add_argument("--gpu-classes", nargs="+", help="with --plan: the GPU classes to plan for (default: every one)")
    p.add_argument("--markdown", help="output Markdown table")
    p.add_argument("--json", help="output JSON with every estimate")
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    if a.plan:
        sys.stdout.write(plan_table(a.plan, a.corpus_tokens, a.node_gpus, a.gpu_classes))
        return
    kw = {"objective": a.objective, "gpu": a.gpu, "mfu": a.mfu, "corpus_tokens": a.corpus_tokens}
    rows = grid(a.models, a.procedures, a.seq_lens, a.weights_dtypes, **kw)
    table = markdown_table(rows)
    if a.markdown:
        write_text(a.markdown, table)
    if a.json:
        write_text(a.json, json.dumps(rows, indent=1) + "\n")
    if not a.markdown and not a.json:
        sys.stdout.write(table)


if __name__ == "__main__":
    sys.exit(main())
