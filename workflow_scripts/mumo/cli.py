"""Command line of the MuMo steps (rules/mumo.smk).

    python -m workflow_scripts.mumo train --source-model DIR --target-tokenizer aux/tokenizer.json --lang th \\
        --corpus train.txt --hparams JSON --out DIR --stats train_stats.json --loss-curve loss.tsv

MuMo cells are timed by the speed step (``python -m workflow_scripts.speed --model MUMO_DIR ...``; ``speed.mumo``).
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from workflow_scripts.io import seed_everything, set_threads, setup_logging, write_json, write_text
from workflow_scripts.languages import language_arg

log = logging.getLogger("vocabexp")


def train(a: argparse.Namespace) -> None:
    """Build V_mono, initialize the head, train it on D, save the MuMo folder and the training report."""
    from workflow_scripts.inference import load_model
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="V_mono, head initialization and head-only training")
    t.add_argument("--source-model", required=True)
    t.add_argument("--target-tokenizer", required=True, help="tokenizer.json (or its folder) V_mono is taken from")
    t.add_argument("--lang", required=True, type=language_arg)
    t.add_argument("--corpus", required=True, help="D, one sentence a line")
    t.add_argument("--init", default="Multi", choices=["Multi", "Random"])
    t.add_argument("--max-words", type=int, default=None, help="keep the first N words of V_mono (default: all)")
    t.add_argument("--hparams", default="{}", help="JSON: max_steps, batch_size, lr, weight_decay, warmup_steps, ...")
    t.add_argument("--out", required=True)
    t.add_argument("--stats", required=True)
    t.add_argument("--loss-curve", required=True)
    t.add_argument("--dtype", default="auto")
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--log", default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    {"train": train}[a.command](a)
