"""Which items mt and sum evaluate: the paper's, or a cheap selection (paper 002 §6.4; docs/evaluation.md, "Which
items").

``evaluation.items`` names the selection:
- ``paper``: the reference's own items. mt: its 1,012 FLORES-200 devtest rows aligned across languages in the
  release's order, then ``pandas.DataFrame.sample(n=500, random_state=42)``, the same rows for every language; the
  random state is 42 whatever the workflow seed is, because that is what makes them the paper's rows. sum: test and
  validation concatenated (in that order), each article's length counted as ``len(tokenizer.encode(text))`` with
  Llama-2's tokenizer (BOS included), sorted by length with Python's stable ``sorted`` (ties keep test + validation
  order), the 500 shortest kept. Source: the reference's data preparation scripts (``create_hf_mt_datasets.py``,
  ``create_hf_sum_datasets.py`` of gucci-j/lowres-cve).
- ``first``: the first n rows in the release's order (mt: devtest; sum: test, then validation).
- ``shuffle``: mt: n rows drawn with the workflow seed; sum: no selection step, the harness draws n items of the
  mirrored test split by LightEval's shuffle.

For ``paper`` and ``first`` a data step writes the chosen ids (a JSON file a reader can check against the release) and
the selected rows in the layout the harness reads, so that it evaluates exactly those rows.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

from workflow_scripts.io import atomic_path, setup_logging, write_json
from workflow_scripts.languages import language_arg
from workflow_scripts.selection import check_items

SUM_SPLITS = ("test", "validation")  # the reference's split="test+validation"
SUM_FIELDS = ("id", "url", "title", "summary", "text")  # what the reference kept (its "len" goes to the ids file)
TOKENIZER_FILES = ["tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"]


# ----------------------------------------------------------------------------------------------------------------------
# sum: the shortest articles of test + validation


@contextlib.contextmanager
def _private_cache():
    """``datasets``' cache in a temporary folder (it keys a local folder's cache by name, not content: run.py)."""
    from workflow_scripts.harness.run import private_datasets_cache

    with tempfile.TemporaryDirectory(prefix="vocabexp-items-") as tmp, private_datasets_cache(Path(tmp) / "datasets"):
        yield


def load_sum_rows(folder: str | Path, subset: str, splits: Sequence[str] = SUM_SPLITS) -> list[dict]:
    """The rows of ``splits`` of a sum dataset folder (hub layout), concatenated in that order, with each row's split.

    Read as the harness reads it, ``datasets.load_dataset(folder, subset, split=...)``; fields id, summary, text
    (url and title where the dataset has them). A missing split or field is an error naming the folder.
    """
    import datasets

    rows: list[dict] = []
    with _private_cache():
        for split in splits:
            try:
                ds = datasets.load_dataset(str(folder), subset, split=split)
            except ValueError as e:
                raise ValueError(
                    f"{folder}: subset {subset!r} has no {split!r} split, which the paper's sum items need (test + "
                    f"validation; evaluation.items: paper): {e}"
                ) from e
            missing = {"id", "summary", "text"} - set(ds.column_names)
            if missing:
                raise ValueError(f"{folder} ({subset}/{split}): missing field(s) {sorted(missing)}")
            for row in ds:
                rows.append({**{f: row[f] for f in SUM_FIELDS if f in row}, "split": split})
    return rows


def token_lengths(tokenizer_dir: str | Path, texts: Sequence[str]) -> list[int]:
    """``len(tokenizer.encode(text))`` for each text, BOS included, as the reference counted (Llama-2's tokenizer)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    # A batch call adds the same special tokens as encode() and runs in the fast tokenizer's threads.
    return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]


def shortest(lengths: Sequence[int], n: int) -> list[int]:
    """Positions of the ``n`` shortest, shortest first; ties keep their order (the reference's stable ``sorted``)."""
    return sorted(range(len(lengths)), key=lengths.__getitem__)[:n]


def select_sum(
    folder: str | Path, subset: str, items: str, n: int, tokenizer_dir: str | Path | None = None
) -> tuple[list[dict], dict]:
    """The sum rows to evaluate (``paper``: the n shortest of test + validation; ``first``: the first n) and the ids
    file's content (ids, splits, lengths)."""
    if check_items(items) == "shuffle":
        raise ValueError("evaluation.items shuffle has no sum selection step: the harness draws from the test split")
    rows = load_sum_rows(folder, subset)
    if not rows:
        raise ValueError(f"{folder} ({subset}): no rows in {SUM_SPLITS}")
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{folder} ({subset}): ids repeat across {SUM_SPLITS}; the ids file could not name the rows")
    lengths = None
    if items == "paper":
        if tokenizer_dir is None:
            raise ValueError("evaluation.items paper: sum needs the length tokenizer (evaluation.items_tokenizer)")
        lengths = token_lengths(tokenizer_dir, [r["text"] for r in rows])
        chosen = shortest(lengths, n)
        how = (
            f"the {len(chosen)} shortest of {len(rows)} articles of test + validation by len(tokenizer.encode(text)), "
            "stable sort (ties keep test + validation order)"
        )
    else:
        chosen = list(range(min(n, len(rows))))
        how = f"the first {len(chosen)} of {len(rows)} rows of test + validation"
    listing = {
        "task": "sum",
        "items": items,
        "data": str(folder),
        "subset": subset,
        "rows_in_pool": len(rows),
        "n": len(chosen),
        "selection": how,
        "tokenizer": str(tokenizer_dir) if lengths is not None else None,
        "ids": [rows[i]["id"] for i in chosen],
        "splits": [rows[i]["split"] for i in chosen],
    }
    if lengths is not None:
        listing["lengths"] = [lengths[i] for i in chosen]
    return [{f: rows[i][f] for f in SUM_FIELDS if f in rows[i]} for i in chosen], listing


def write_sum_items(rows: list[dict], subset: str, split: str, out: str | Path, label: str = "") -> Path:
    """The selected rows as a local dataset folder in the hub layout (``subset``/``split``), atomically."""
    from workflow_scripts.harness.datasets import write_hub_layout

    with atomic_path(out) as tmp:
        write_hub_layout(tmp, {subset: {split: rows}}, label)
    return Path(out)


def download_tokenizer(hub_id: str, out: str | Path) -> Path:
    """Fetch a hub model's tokenizer files only (no weights) into ``out``, atomically (run where the network is)."""
    from huggingface_hub import snapshot_download

    from workflow_scripts.hub_cache import split_id

    hub_id, revision = split_id(hub_id)
    with atomic_path(out) as tmp:
        # meta-llama/Llama-2-7b-hf is gated: accept its licence on the hub once and provide a token (HF_TOKEN).
        snapshot_download(hub_id, revision=revision, local_dir=tmp, allow_patterns=TOKENIZER_FILES)
    return Path(out)


def main(argv: list[str] | None = None) -> None:
    """``sum``: select and write the sum items; ``tokenizer``: fetch the length tokenizer (rules/items.smk)."""
    from workflow_scripts.harness.datasets import task_source

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sum", help="the sum rows to evaluate, as a hub-layout folder, and their ids")
    s.add_argument("--data", required=True, help="the sum dataset's folder (hub layout, test and validation)")
    s.add_argument("--lang", required=True, type=language_arg)
    s.add_argument("--items", required=True, choices=["paper", "first"])
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--tokenizer", help="tokenizer folder for the lengths (paper)")
    s.add_argument("--out", required=True, help="folder for the selected rows")
    s.add_argument("--ids", required=True, help="JSON listing the chosen ids")
    t = sub.add_parser("tokenizer", help="fetch a hub tokenizer's files once")
    t.add_argument("--hub-id", required=True, help="owner/name[@revision]")
    t.add_argument("--out", required=True)
    a = p.parse_args(argv)
    log = setup_logging(a.log)
    if a.command == "tokenizer":
        download_tokenizer(a.hub_id, a.out)
        return
    source = task_source("sum", a.lang)
    rows, listing = select_sum(a.data, source.subset, a.items, a.n, a.tokenizer)
    listing["lang"] = a.lang
    write_sum_items(rows, source.subset, source.split, a.out, f"sum items ({listing['selection']})")
    write_json(a.ids, listing)
    log.info("sum %s: %s", a.lang, listing["selection"])


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
