"""The hub assets of sum's metrics: mT5's SentencePiece model (ROUGE-L's segmentation, paper 002 §6.6) and a BLEURT
checkpoint in the PyTorch port's layout (Table 8). Each is a hub id fetched once by a local rule (rules/data.smk, run
where the network is) or a local path; the checks run when the workflow is planned. Pure Python at import (the
Snakefile imports it); the hub client is imported by the download commands only.

    python -m workflow_scripts.sum_assets file --hub-id google/mt5-small --file spiece.model --out spiece.model
    python -m workflow_scripts.sum_assets folder --hub-id lucadiliello/BLEURT-20 --out BLEURT-20/
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from workflow_scripts.hub_cache import split_id
from workflow_scripts.io import atomic_path, setup_logging

log = logging.getLogger("vocabexp")

SPM_FILE = "spm.model"  # the port's tokenizer file (its BleurtSPTokenizer's vocab_file)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
BLEURT_FILES = ("config.json", SPM_FILE, *WEIGHT_FILES)
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+(@[\w./-]+)?$")


# The ROUGE-L segmentations (evaluation.sum.rouge_tokenizer) that read mT5's spiece.model (evaluation.sum.mt5_spiece).
PIECE_SEGMENTATIONS = ("mt5", "reference")


def reads_mt5_spiece(sum_settings: dict) -> bool:
    """Whether the configured ROUGE-L segmentation needs mT5's spiece.model."""
    return sum_settings.get("rouge_tokenizer") in PIECE_SEGMENTATIONS


def repo_slug(hub_id: str) -> str:
    """The download folder name of a hub id (``owner/name[@revision]``)."""
    return hub_id.replace("/", "--")


def bleurt_folder_problems(folder: str | Path) -> list[str]:
    """What a BLEURT folder lacks of the port's layout (config.json, spm.model, weights)."""
    folder = Path(folder)
    lacking = [n for n in ("config.json", SPM_FILE) if not (folder / n).is_file()]
    if not any((folder / n).is_file() for n in WEIGHT_FILES):
        lacking.append(" or ".join(WEIGHT_FILES))
    return lacking


def hub_asset_problems(sum_settings: dict) -> list[str]:
    """Problems of the ``evaluation.sum`` settings of ROUGE-L's segmentation and of BLEURT, each a local path (used as
    it is) or a hub id (fetched by a download rule)."""
    problems = []
    spiece, bleurt = sum_settings.get("mt5_spiece") or "", sum_settings.get("bleurt")
    if reads_mt5_spiece(sum_settings) and not Path(spiece).is_file() and not _HUB_ID.match(spiece):
        problems.append(
            f"evaluation.sum.mt5_spiece: {spiece!r} is neither a spiece.model file nor a hub id (owner/name)"
        )
    if bleurt:
        if Path(bleurt).is_dir():
            lacking = bleurt_folder_problems(bleurt)
            if lacking:
                problems.append(
                    f"evaluation.sum.bleurt: folder {bleurt} lacks {', '.join(lacking)} (the PyTorch port's layout)"
                )
        elif not _HUB_ID.match(bleurt):
            problems.append(f"evaluation.sum.bleurt: {bleurt!r} is neither a folder nor a hub id (owner/name)")
    return problems


def special_ids(sp, model_file: str | Path) -> tuple[int, int]:
    """The ids of BLEURT's [CLS] and [SEP] pieces in SentencePiece processor ``sp`` (an error names the file)."""
    ids = []
    for piece in ("[CLS]", "[SEP]"):
        idx = sp.piece_to_id(piece)
        if idx == sp.unk_id() and piece != sp.id_to_piece(idx):
            raise ValueError(f"{model_file}: SentencePiece model has no {piece} piece (not a BLEURT tokenizer)")
        ids.append(idx)
    return ids[0], ids[1]


def download_file(hub_id: str, filename: str, out: str | Path) -> Path:
    """Fetch one file of a hub model repository (mT5's spiece.model) once, atomically."""
    from huggingface_hub import hf_hub_download

    repo, revision = split_id(hub_id)
    with atomic_path(out) as tmp:
        tmp.write_bytes(Path(hf_hub_download(repo, filename, revision=revision)).read_bytes())
    return Path(out)


def download_bleurt(hub_id: str, out: str | Path) -> Path:
    """Fetch a BLEURT checkpoint folder (config, SentencePiece model, weights) once, atomically; a folder that lacks a
    part fails here, not in every scoring job."""
    from huggingface_hub import snapshot_download

    repo, revision = split_id(hub_id)
    with atomic_path(out) as tmp:
        snapshot_download(repo, revision=revision, local_dir=tmp, allow_patterns=list(BLEURT_FILES))
        lacking = bleurt_folder_problems(tmp)
        if not lacking:
            import sentencepiece

            # has [CLS] and [SEP], or fails here rather than in every scoring job
            special_ids(sentencepiece.SentencePieceProcessor(model_file=str(tmp / SPM_FILE)), tmp / SPM_FILE)
        if lacking:
            raise FileNotFoundError(
                f"hub {hub_id}: no {', '.join(lacking)} (not a BLEURT checkpoint in the port's layout)"
            )
    return Path(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["file", "folder"], help="one file of a repository, or a BLEURT folder")
    p.add_argument("--hub-id", required=True, help="owner/name[@revision]")
    p.add_argument("--file", help="kind file: the file name in the repository")
    p.add_argument("--out", required=True)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    if a.kind == "file":
        if not a.file:
            p.error("--file is required for kind file")
        out = download_file(a.hub_id, a.file, a.out)
    else:
        out = download_bleurt(a.hub_id, a.out)
    log.info("%s -> %s", a.hub_id, out)


if __name__ == "__main__":
    main()
