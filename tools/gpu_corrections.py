"""The corrections to workflow_scripts/gpu/estimate.py that a tools/gpu_bench.py JSON implies, printed as a report.

    python -m tools.gpu_corrections results/gpu_bench.json

For every measured LAPT entry: the tensor bytes of weights, gradients and Adam states against the estimate's terms
(they should agree exactly: the estimate's arithmetic follows what lapt allocates); on CUDA, the allocator's peak
beyond those states against the estimate's activation terms (autocast copies, EEVE's frozen-row snapshot, layer
activations, logits): their ratio is the factor to apply to those terms; the measured step time against the estimate's,
as the throughput share (``mfu``) the estimate should assume; and each 80 GB plan's peak (plus the CUDA context)
against the 80 GB class's usable memory. Out-of-memory entries are listed first: the estimate said they fit.

It exits 1 when the file holds no measured entry (nothing was checked), or when the estimate is wrong where a plan
depends on it: a state term that differs from the measured tensors, an out-of-memory entry, or an 80 GB plan over the
usable memory; the activation factor and the implied mfu are corrections to apply, not failures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from workflow_scripts.gpu.estimate import GPUS
from workflow_scripts.gpu.shape import GIB

STATES = ("weights", "gradients", "optimizer")
BEYOND = ("autocast_cache", "frozen_row_snapshot", "activations_layers", "logits")
CONTEXT_GIB = 3.0  # the estimate's cuda_overhead: the CUDA context and what the allocator does not count


def _label(e: dict[str, Any]) -> str:
    return f"{e['model']} {e['procedure']}/{e['stage']} {e['objective']} L{e['seq_len']} micro {e.get('micro_batch')}"


def corrections(bench: dict[str, Any], mfu: float = 0.35) -> dict[str, Any]:
    """Per-entry ratios and the summary corrections: state-term mismatches, the activation factor (largest measured /
    estimated beyond-state bytes), the median implied mfu per model, 80 GB plans over budget, out-of-memory entries."""
    entries = [e for e in bench.get("training", []) if "measured_bytes" in e]
    rows, factors, mfus, over = [], [], {}, []
    usable_80 = 0.9 * GPUS["H100"]["memory_gib"]
    for e in entries:
        m, est = e["measured_bytes"], e["estimate_bytes"]
        row = {"entry": _label(e), "state_mismatch": {k: [m[k], est[k]] for k in STATES if m.get(k) != est[k]}}
        if "beyond_states" in m:
            predicted = sum(est[k] for k in BEYOND)
            row["beyond_ratio"] = m["beyond_states"] / predicted if predicted else None
            if row["beyond_ratio"] is not None:
                factors.append(row["beyond_ratio"])
            peak = m["peak"] / GIB + CONTEXT_GIB
            row["peak_gib"] = round(peak, 2)
            if "80GB" in e.get("gpu_classes", []) and peak > usable_80:
                over.append(f"{_label(e)}: {peak:.1f} GiB > {usable_80:.1f} usable on 80 GB")
        if e.get("estimate_stage_step_seconds") and e.get("step_seconds"):
            implied = mfu * e["estimate_stage_step_seconds"] / e["step_seconds"]
            row["implied_mfu"] = implied
            mfus.setdefault(e["model"], []).append(implied)
        rows.append(row)
    return {
        "entries": rows,
        "out_of_memory": [
            f"{_label(e)}: {e['oom']} (estimated {e.get('estimate_peak_gib')} GiB)"
            for e in bench.get("training", [])
            if "oom" in e
        ],
        "skipped": sum(1 for e in bench.get("training", []) if "skipped" in e),
        "state_terms_exact": all(not r["state_mismatch"] for r in rows),
        "activation_factor": max(factors) if factors else None,
        "mfu_by_model": {k: statistics.median(v) for k, v in mfus.items()},
        "over_80gb": over,
    }


def failed(c: dict[str, Any]) -> list[str]:
    """Why the corrections ``c`` fail the check: no measured entry, a state-term mismatch, out-of-memory entries,
    80 GB plans over the usable memory (empty: the estimate holds where plans depend on it)."""
    out = []
    if not c["entries"]:
        out.append("no measured LAPT entry in the file (every entry skipped, or the bench stopped before the first)")
    if not c["state_terms_exact"]:
        out.append("the estimate's weights, gradients or optimizer bytes differ from the measured tensors")
    out += [f"out of memory although estimated to fit: {x}" for x in c["out_of_memory"]]
    out += [f"80 GB plan over the usable memory: {x}" for x in c["over_80gb"]]
    return out


def render(c: dict[str, Any]) -> str:
    """The report: what to change in workflow_scripts/gpu/estimate.py, then the entries."""
    lines = ["# Corrections to workflow_scripts/gpu/estimate.py", ""]
    if c["out_of_memory"]:
        lines += ["Out of memory although estimated to fit (raise the terms below, or lower headroom):"]
        lines += [f"  - {x}" for x in c["out_of_memory"]] + [""]
    if c["state_terms_exact"]:
        lines.append("weights, gradients, optimizer: the estimate's bytes equal the measured tensors (no change)")
    else:
        lines.append("weights, gradients, optimizer: MISMATCH (measured, estimated bytes):")
        lines += [f"  - {r['entry']}: {r['state_mismatch']}" for r in c["entries"] if r["state_mismatch"]]
    if c["activation_factor"] is None:
        lines.append("activations and logits: no CUDA peak in this file (a --tiny or CPU run): nothing to correct")
    else:
        lines.append(
            f"activations and logits: the measured peak beyond the states is up to {c['activation_factor']:.2f} x "
            "the estimate's autocast_cache + frozen_row_snapshot + activations_layers + logits: multiply those terms "
            "by it (or add the difference to the term that moves with micro-batch and vocabulary: logits)"
        )
    for model, v in sorted(c["mfu_by_model"].items()):
        lines.append(f"step time {model}: the measured steps imply mfu {v:.2f} (estimate assumes 0.35): pass --mfu")
    if c["over_80gb"]:
        lines.append("80 GB plans over the usable memory (lower their micro-batch):")
        lines += [f"  - {x}" for x in c["over_80gb"]]
    if c["skipped"]:
        lines.append(f"{c['skipped']} entries skipped by --budget-s: rerun with --models / --configfile for them")
    lines += ["", "| entry | beyond-states ratio | peak + context GiB | implied mfu |", "|---|---|---|---|"]
    for r in c["entries"]:
        ratio = f"{r['beyond_ratio']:.2f}" if r.get("beyond_ratio") is not None else "-"
        mfu = f"{r['implied_mfu']:.2f}" if "implied_mfu" in r else "-"
        lines.append(f"| {r['entry']} | {ratio} | {r.get('peak_gib', '-')} | {mfu} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tools.gpu_corrections",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bench", type=Path, help="the JSON of python -m tools.gpu_bench")
    p.add_argument("--json", action="store_true", help="print the corrections as JSON instead")
    a = p.parse_args(argv)
    c = corrections(json.loads(a.bench.read_text(encoding="utf-8")))
    sys.stdout.write(json.dumps(c, indent=1) + "\n" if a.json else render(c))
    bad = failed(c)
    for line in bad:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
