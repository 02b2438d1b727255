"""What separates Align from Mean (paper 002 §4.3, Table 7): boundary crossings, differing rows, and untrained quality.

For one model and language, with the workflow's own aux tokenizer, D and held-out text, this step builds T_t twice, with
the new merges first (the paper's priority) and last (the default), and measures for each:
- the share of new-token occurrences in D that cross a source-token boundary (byte spans; ``vocab.boundary_crossings``):
  only a crossing occurrence lets Align's aligned source tokens differ from the tokens that spell the piece;
- how many new rows of Mean-ref, Merge and Align differ from Mean's (input embeddings; ``initialize`` reports the same);
and, under ``first`` only (one run, no training), held-out nats per character of Source, Mean, Mean-ref (the reference
code's mojibake mapping), Merge and Align, which compare across vocabularies. The rows go to one JSON per cell; the
``init_analysis`` rule collects them into results/<run>/analysis/init_analysis.csv. It is a separate target (not in
``rule all``): on CPU it costs about 8 minutes per language for SmolLM2 (docs/measurements.md) and a GPU-class job
for 7B-9B models.

    python -m workflow_scripts.init_analysis cell --source-model M --aux aux.json --corpus D --heldout H --k 100 \\
        --model smollm2 --language th --out cell.json
    python -m workflow_scripts.init_analysis collect --out init_analysis.csv cell1.json cell2.json ...
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from workflow_scripts.io import atomic_path, cli_main, read_corpus, set_threads, setup_logging, write_json

ORDERS = ("first", "last")
COMPARED = ("Mean-ref", "Merge", "Align")  # rows compared with Mean's under both orders
SCORED = ("Mean", "Mean-ref", "Merge", "Align")  # nats/char without training, under "first"
COLUMNS = [
    "model",
    "language",
    "k",
    "aux_vocab_size",
    "new_merges",
    "replaced",
    "occurrences_in_D",
    "crossing_occurrences",
    "crossing_share",
    "tokens_with_crossing",
    *(f"rows_differing_{m}" for m in COMPARED),
    "nats_per_char_Source",
    *(f"nats_per_char_{m}" for m in SCORED),
    "heldout_sentences",
]


def analyse_cell(
    source_model: str | Path,
    aux: str | Path,
    corpus: list[str],
    heldout: list[str],
    k: int,
    seed: int = 42,
    batch_size: int = 8,
    score: bool = True,
    scored: tuple[str, ...] = SCORED,
) -> list[dict[str, Any]]:
    """One row per merge order: crossings in D, rows differing from Mean, and (``first``) nats/char of ``scored``.

    Initialization runs on the CPU (its float64 row arithmetic); each scored model is scored on the GPU when one is
    visible (rule init_analysis_cell asks for one), else on the CPU.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workflow_scripts.initialize import initialize_model
    from workflow_scripts.perplexity import evaluate_ppl
    from workflow_scripts.vocab import boundary_crossings, expand, next_free_id
    from workflow_scripts.vocab.source import load_source

    src_tok = AutoTokenizer.from_pretrained(source_model)
    base = AutoModelForCausalLM.from_pretrained(source_model, dtype="auto").eval()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    start = next_free_id(load_source(source_model)[0])
    rows = []
    source_nats = None
    for order in ORDERS:
        with tempfile.TemporaryDirectory() as tmp:
            tdir = Path(tmp) / "tokenizer"
            e = expand(source_model, aux, corpus, k, tdir, new_merges=order)
            tgt_tok = AutoTokenizer.from_pretrained(tdir)
        cross = boundary_crossings(src_tok.backend_tokenizer, e.target, corpus, range(start, start + k))
        row: dict[str, Any] = {
            "k": k,
            "new_merges": order,
            "replaced": len(e.replaced),
            "occurrences_in_D": cross["occurrences"],
            "crossing_occurrences": cross["crossing"],
            "crossing_share": round(cross["crossing_share"], 6),
            "tokens_with_crossing": cross["tokens_with_crossing"],
            "heldout_sentences": len(heldout),
        }
        methods = dict.fromkeys([*COMPARED, *(scored if score and order == "first" else ())])
        for method in methods:
            model = copy.deepcopy(base)
            report = initialize_model(model, src_tok, tgt_tok, method, seed, 1, {"corpus": corpus})
            if method in COMPARED:
                row[f"rows_differing_{method}"] = report["differs_from_mean"]["input"]["rows"]
            if score and order == "first" and method in scored:
                res = evaluate_ppl(model.to(device).eval(), tgt_tok, heldout, batch_size=batch_size)
                row[f"nats_per_char_{method}"] = _nats(res)
            del model
        if score and order == "first":
            source_nats = _nats(evaluate_ppl(base.to(device), src_tok, heldout, batch_size=batch_size))
            base.to("cpu")  # the next merge order initializes copies of it on the CPU
            row["nats_per_char_Source"] = source_nats
        rows.append(row)
    return rows


def _nats(result: dict) -> float:
    return round(next(r["value"] for r in result["records"] if r["metric"] == "nll_per_char"), 5)


def collect(cells: list[str | Path], out: str | Path) -> list[dict]:
    """The CSV of every cell's rows (columns ``COLUMNS``; empty where not measured)."""
    rows = []
    for path in cells:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for row in data["rows"]:
            rows.append(
                {"model": data["model"], "language": data["language"], "aux_vocab_size": data["aux_vocab_size"], **row}
            )
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m workflow_scripts.init_analysis",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cell", help="measure one model x language")
    c.add_argument("--source-model", required=True)
    c.add_argument("--aux", required=True, help="aux tokenizer.json")
    c.add_argument("--corpus", required=True, help="D")
    c.add_argument("--heldout", required=True)
    c.add_argument("--k", type=int, required=True)
    c.add_argument("--seed", type=int, default=42)
    c.add_argument("--batch-size", type=int, default=8)
    c.add_argument("--max-heldout", type=int, help="score only the first N held-out sentences")
    c.add_argument("--model", required=True, help="model name (for the table)")
    c.add_argument("--language", required=True)
    c.add_argument("--aux-vocab-size", type=int, required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--threads", type=int)
    c.add_argument("--log")
    g = sub.add_parser("collect", help="write the CSV of all cells")
    g.add_argument("--out", required=True)
    g.add_argument("cells", nargs="+")
    a = p.parse_args(argv)
    if a.command == "collect":
        collect(a.cells, a.out)
        return
    log = setup_logging(a.log)
    set_threads(a.threads)
    t0 = time.perf_counter()
    corpus = read_corpus(a.corpus, what="corpus D")
    heldout = read_corpus(a.heldout, what="held-out text")[: a.max_heldout]
    rows = analyse_cell(a.source_model, a.aux, corpus, heldout, a.k, a.seed, a.batch_size)
    for row in rows:
        log.info("%s %s: %s", a.model, a.language, row)
    write_json(
        a.out,
        {
            "model": a.model,
            "language": a.language,
            "aux_vocab_size": a.aux_vocab_size,
            "rows": rows,
            "seconds": round(time.perf_counter() - t0, 1),
        },
    )


if __name__ == "__main__":
    cli_main(main)  # expected failures (bad input files) as one line, exit 1
