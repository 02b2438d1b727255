"""flores: the MT test set from FLORES-200 (the ``openlanguagedata/flores_plus`` layout), English→target pairs of the
devtest rows that ``evaluation.items`` selects (the ``corpus flores`` subcommand, rule flores_mt)."""

from __future__ import annotations

import re
from pathlib import Path

from workflow_scripts.io import UserError
from workflow_scripts.languages import FLORES_ENGLISH, language
from workflow_scripts.selection import select_positions, selection_note

FLORES_HUB_ID = "openlanguagedata/flores_plus"


def flores_code(lang: str) -> str:
    """The FLORES code of a language code (``th`` → ``tha_Thai``, ``km`` → ``khm_Khmr``: workflow_scripts.languages);
    FLORES codes pass through."""
    if re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang):
        return lang
    try:
        return language(lang).flores
    except UserError as e:
        raise UserError(f"unknown language {lang!r}: {e}; or give a FLORES code like 'tha_Thai'") from e


def _flores_files(root: Path, split: str, code: str) -> list[Path]:
    """One language's parquet file(s) for a split: ``{split}/{code}.parquet`` or shards ``{split}/{code}-*.parquet``."""
    files = sorted(root.glob(f"{split}/{code}.parquet")) or sorted(root.glob(f"**/{split}/{code}-*.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no FLORES parquet for {code} in {root} (expected {root / split / (code + '.parquet')})"
        )
    return files


def _read_parquet(files: list[Path]):
    import pandas as pd

    try:
        return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    except ImportError as e:
        raise ImportError(
            f"reading FLORES parquet ({files[0]}) needs a parquet engine: add pyarrow to requirements.txt ({e})"
        ) from e


def _flores_root(root_or_hub_id: str | Path, split: str, codes: list[str]) -> Path:
    """An existing folder is used as is; otherwise ``owner/name`` is a hub dataset id (only needed files fetched)."""
    root = Path(root_or_hub_id)
    if root.is_dir():
        return root
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", str(root_or_hub_id)):
        raise FileNotFoundError(
            f"FLORES root {root_or_hub_id!r} is neither a folder nor a hub id like {FLORES_HUB_ID!r}"
        )
    from huggingface_hub import snapshot_download

    # flores_plus is gated: accept its terms on the hub once and provide a token (HF_TOKEN or `hf auth login`).
    patterns = [f"*{split}/{c}*.parquet" for c in codes]
    return Path(snapshot_download(repo_id=str(root_or_hub_id), repo_type="dataset", allow_patterns=patterns))


def _clean_ws(text: str) -> str:
    # Collapse all whitespace: the output is TSV, where a tab or newline inside a sentence would corrupt the file.
    return " ".join(str(text).split())


def flores_table(en, tgt):
    """Two FLORES data frames (``id`` and ``text`` columns) joined on ``id``: columns id, source, reference, one row
    per sentence in the release's order, and whether each file already listed its rows in id order.

    FLORES-200's devtest is a set of line-aligned files; its hub copies number the lines (facebook/flores: id = line
    + 1) and FLORES+ keeps those rows and their order, so ascending id is the release's order and row i is the same
    sentence in every language (the alignment the reference sampled from). Whitespace runs collapse to one space.
    """
    import pandas as pd

    cols, in_order = [], []
    for name, df in (("English", en), ("target", tgt)):
        text_col = "text" if "text" in df.columns else "sentence"  # flores_plus says text, facebook/flores sentence
        if "id" not in df.columns or text_col not in df.columns:
            raise UserError(f"FLORES {name} table needs 'id' and 'text' columns, has {list(df.columns)}")
        if df["id"].duplicated().any():
            raise UserError(f"FLORES {name} table has duplicate ids")
        cols.append(dict(zip(df["id"].tolist(), df[text_col].tolist(), strict=True)))
        in_order.append(bool(df["id"].is_monotonic_increasing))
    en_by_id, tgt_by_id = cols
    if set(en_by_id) != set(tgt_by_id):
        only_en, only_tgt = len(set(en_by_id) - set(tgt_by_id)), len(set(tgt_by_id) - set(en_by_id))
        raise UserError(f"FLORES tables are not aligned: {only_en} ids only in English, {only_tgt} only in the target")
    ids = sorted(en_by_id)
    table = pd.DataFrame(
        {
            "id": ids,
            "source": [_clean_ws(en_by_id[i]) for i in ids],
            "reference": [_clean_ws(tgt_by_id[i]) for i in ids],
        }
    )
    table.attrs["files_in_id_order"] = {"English": in_order[0], "target": in_order[1]}
    return table


def select_flores(table, *, items: str = "shuffle", n: int | None = None, seed: int = 0):
    """The rows of a ``flores_table`` to evaluate (items.select_positions: ``paper`` = the reference's 500, in its
    sample order; ``first``; ``shuffle`` = ``n`` drawn with ``seed``, in release order), with a ``position`` column
    (0-based row of the release)."""
    if n is not None and n > len(table):
        raise UserError(f"too few FLORES sentences: {len(table)} available, n={n} asked for")
    positions = select_positions(len(table), items, n, seed)
    out = table.iloc[positions].copy()
    out.insert(0, "position", positions)
    return out.reset_index(drop=True)


def align_flores(en, tgt, *, n: int | None = None, seed: int = 0, items: str = "shuffle") -> list[tuple[str, str]]:
    """English→target pairs of two FLORES data frames joined on ``id``, selected as ``select_flores`` says (all rows
    in release order when ``n`` is None and ``items`` is not ``paper``)."""
    rows = select_flores(flores_table(en, tgt), items=items, n=n, seed=seed)
    return list(zip(rows["source"], rows["reference"], strict=True))


def load_flores_table(root_or_hub_id: str | Path, lang_code: str, split: str = "devtest"):
    """``flores_table`` of English and ``lang_code`` from a local ``openlanguagedata/flores_plus`` folder
    (``{split}/{iso_639_3}_{iso_15924}.parquet``) or that hub dataset."""
    code = flores_code(lang_code)
    root = _flores_root(root_or_hub_id, split, [FLORES_ENGLISH, code])
    en_files, tgt_files = _flores_files(root, split, FLORES_ENGLISH), _flores_files(root, split, code)
    return flores_table(_read_parquet(en_files), _read_parquet(tgt_files))


def load_flores_pairs(
    root_or_hub_id: str | Path,
    lang_code: str,
    split: str = "devtest",
    n: int | None = None,
    seed: int = 0,
    items: str = "shuffle",
) -> list[tuple[str, str]]:
    """English→target FLORES-200 pairs for the MT task (paper 002 §6.4: 500 random devtest sentences; ``items``
    paper: the reference's 500), from a local flores_plus folder or that hub dataset (``load_flores_table``)."""
    rows = select_flores(load_flores_table(root_or_hub_id, lang_code, split), items=items, n=n, seed=seed)
    return list(zip(rows["source"], rows["reference"], strict=True))


def flores_listing(table, rows, *, lang: str, root: str, split: str, items: str, seed: int) -> dict:
    """The ids file of the mt selection: which FLORES rows (id and 0-based position) were chosen, and how."""
    return {
        "task": "mt",
        "lang": lang,
        "items": items,
        "data": str(root),
        "split": split,
        "rows_in_pool": len(table),
        "files_in_id_order": table.attrs.get("files_in_id_order"),
        "n": len(rows),
        "selection": selection_note(items, len(rows), len(table), seed),
        "ids": rows["id"].tolist(),
        "positions": [int(p) for p in rows["position"].tolist()],
    }
