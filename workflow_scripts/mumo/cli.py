"""Command line of the MuMo steps (rules/mumo.smk).

    python -m workflow_scripts.mumo train --source-model DIR --target-tokenizer aux/tokenizer.json --lang th \\
        --corpus train.txt --hparams JSON --out DIR --stats train_stats.json --loss-curve loss.tsv
    python -m workflow_scripts.mumo speed --model MUMO_DIR --pairs mt.tsv --lang th --cell JSON --out speed.json
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from workflow_scripts.io import seed_everything, set_threads, setup_logging, write_json, write_text

log = logging.getLogger("vocabexp")


def train(a: argparse.Namespace) -> None:
    """Build V_mono, initialize the head, train it on D, save the MuMo folder and the training report."""
    from workflow_scripts.evaluate import load_model
    from workflow_scripts.io import read_corpus
    from workflow_scripts.mumo.head import MuMo, new_head, save_mumo
    from workflow_scripts.mumo.train import HeadHparams, build_examples, hparams_dict, train_head
    from workflow_scripts.mumo.vocab import SourceSpeller, build_v_mono, target_words

    hp = HeadHparams.from_dict(json.loads(a.hparams))
    seed_everything(hp.seed)
    t0 = time.time()
    base, tokenizer = load_model(a.source_model, a.dtype)
    speller = SourceSpeller(tokenizer)
    v_mono = build_v_mono(target_words(a.target_tokenizer, a.lang), speller, a.max_words)
    if not len(v_mono):
        raise SystemExit(f"{a.target_tokenizer}: no word of the {a.lang!r} script beyond V_s; V_mono is empty")
    meta = {"init": a.init, "language": a.lang, "target_tokenizer": str(a.target_tokenizer)}
    mumo = MuMo(base, new_head(base, v_mono, a.init, hp.seed).to(base.device), v_mono, meta)
    lines = read_corpus(a.corpus, what="MuMo training corpus D")
    examples, seg = build_examples(mumo, tokenizer, lines, hp.seq_len)
    curve = train_head(mumo, examples, hp)
    save_mumo(mumo, a.out, a.source_model)
    rows = ["step\tloss\tlr", *(f"{r['step']}\t{r['loss']:.6f}\t{r['lr']:.3e}" for r in curve)]
    write_text(a.loss_curve, "\n".join(rows) + "\n")
    stats = {
        "procedure": "MuMo",
        "init": a.init,
        "v_mono": len(v_mono),
        "mean_source_tokens_per_word": sum(map(len, v_mono.spellings)) / len(v_mono),
        "trainable_parameters": sum(p.numel() for p in mumo.head.parameters()),
        "hparams": hparams_dict(hp),
        "segmentation": seg,
        "first_loss": curve[0]["loss"],
        "last_loss": curve[-1]["loss"],
        "seconds": round(time.time() - t0, 2),
    }
    write_json(a.stats, stats)
    log.info("MuMo head: %s", {k: v for k, v in stats.items() if k != "hparams"})


def speed(a: argparse.Namespace) -> None:
    from workflow_scripts.evaluate import read_cell, read_pairs
    from workflow_scripts.mumo.decode import DecodeSettings
    from workflow_scripts.mumo.head import load_mumo
    from workflow_scripts.mumo.speed import measure
    from workflow_scripts.prompts import mt_query

    cell = read_cell(a.cell)
    mumo, tokenizer = load_mumo(a.model, a.dtype)
    prompts = [mt_query(en, a.lang) for en, _ in read_pairs(a.pairs, a.n)]  # the speed step's prompts
    settings = DecodeSettings(k=a.k, verify=a.verify, sample=a.decoding == "paper", seed=a.seed)
    records, details = measure(mumo, tokenizer, prompts, settings, max_new_tokens=a.max_new_tokens, repeats=a.repeats)
    details = {"model_dir": str(a.model), "pairs_file": str(a.pairs), "language": a.lang, **details}
    if a.data_label:
        details["data_label"] = a.data_label
    write_json(a.out, {"cell": cell, "records": records, "details": details})
    log.info("MuMo speed: %s", {r["metric"]: round(r["value"], 3) for r in records})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="V_mono, head initialization and head-only training")
    t.add_argument("--source-model", required=True)
    t.add_argument("--target-tokenizer", required=True, help="tokenizer.json (or its folder) V_mono is taken from")
    t.add_argument("--lang", required=True)
    t.add_argument("--corpus", required=True, help="D, one sentence a line")
    t.add_argument("--init", default="Multi", choices=["Multi", "Random"])
    t.add_argument("--max-words", type=int, default=None, help="keep the first N words of V_mono (default: all)")
    t.add_argument("--hparams", default="{}", help="JSON: max_steps, batch_size, lr, weight_decay, warmup_steps, ...")
    t.add_argument("--out", required=True)
    t.add_argument("--stats", required=True)
    t.add_argument("--loss-curve", required=True)
    s = sub.add_parser("speed", help="MuMo generation speed on the mt prompts, batch size 1")
    s.add_argument("--model", required=True, help="MuMo folder")
    s.add_argument("--pairs", required=True)
    s.add_argument("--lang", required=True)
    s.add_argument("--n", type=int, default=None)
    s.add_argument("--max-new-tokens", type=int, default=128)
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--no-verify", dest="verify", action="store_false")
    s.add_argument("--decoding", default="greedy", choices=["greedy", "paper"])
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--cell", default="{}")
    s.add_argument("--data-label", default=None)
    s.add_argument("--out", required=True, help="speed.json")
    for sp in (t, s):
        sp.add_argument("--dtype", default="auto")
        sp.add_argument("--threads", type=int, default=None)
        sp.add_argument("--log", default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    {"train": train, "speed": speed}[a.command](a)
