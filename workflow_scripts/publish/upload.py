"""Upload one cell to the Hugging Face hub: its model folder, its card as README.md and its GGUF files (under gguf/),
staged as hard links and committed in one ``upload_folder``.

Re-running is safe: the hub's preupload answer names each remote file's content id, and huggingface_hub leaves out
every file whose local content matches it (an LFS object the hub already holds is not sent again); when nothing
differs it makes no commit. An upload cut off before its commit resumes on the next run with what is still missing.
The record (the rule's output) names the repository, the commit, whether this run made it, and each file's size
and SHA-256.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from workflow_scripts.hub_cache import endpoint
from workflow_scripts.io import UserError, write_json

log = logging.getLogger("vocabexp")
# what a model folder holds that is no part of the model: Snakemake's marker, hidden files, a README.md (the card
# given to the upload replaces it)
SKIPPED = (".snakemake_timestamp", "README.md")
TOKEN_FIX = (
    "set HF_TOKEN (or run `hf auth login`) with a token that may write to the namespace; "
    "`python -m tools.preflight` checks each repository's write access"
)


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy
        shutil.copy2(src, dst)


def stage(folder: Path, model: Path, card: Path, gguf: list[Path]) -> Path:
    """The repository's tree under ``folder``: the model folder's files, the card as README.md, gguf/<file>."""
    for path in sorted(model.rglob("*")):
        rel = path.relative_to(model)
        if path.is_file() and rel.as_posix() not in SKIPPED and not any(p.startswith(".") for p in rel.parts):
            _link(path, folder / rel)
    _link(card, folder / "README.md")
    for path in gguf:
        _link(path, folder / "gguf" / path.name)
    return folder


def digest(folder: Path) -> dict[str, dict]:
    """Each staged file's size and SHA-256, by its path in the repository."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        out[path.relative_to(folder).as_posix()] = {"size": path.stat().st_size, "sha256": h.hexdigest()}
    return out


def _refused(e: Exception, repo_id: str) -> UserError | None:
    """A refusal of the token (none, or no write access) as the user's error; None for any other failure."""
    status = getattr(getattr(e, "response", None), "status_code", None)
    if status in (401, 403):
        return UserError(f"{repo_id}: the hub refused the upload (HTTP {status}); {TOKEN_FIX}")
    return None


def publish(repo_id: str, model: Path, card: Path, gguf: list[Path], *, private: bool, out: Path) -> dict:
    """Create ``repo_id`` where it does not exist, upload the cell, and write the record to ``out``."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError, OfflineModeIsEnabled

    api = HfApi(endpoint=endpoint())
    message = "Upload the adapted model, its card and GGUF files (vocabexp)"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        before = api.repo_info(repo_id).sha
        with tempfile.TemporaryDirectory(prefix=".publish.", dir=out.parent) as tmp:
            staged = stage(Path(tmp) / "repo", model, card, gguf)
            info = api.upload_folder(repo_id=repo_id, folder_path=staged, commit_message=message)
            files = digest(staged)
    except OfflineModeIsEnabled as e:
        raise UserError(f"{repo_id}: HF_HUB_OFFLINE is set; publishing needs the hub: unset it for this run") from e
    except LocalTokenNotFoundError as e:
        raise UserError(f"{repo_id}: no Hugging Face token; {TOKEN_FIX}") from e
    except HfHubHTTPError as e:
        refused = _refused(e, repo_id)
        if refused:
            raise refused from e
        raise
    record = {
        "repo_id": repo_id,
        "commit": info.oid,
        "commit_url": info.commit_url,
        "uploaded": info.oid != before,
        "private": private,
        "files": files,
    }
    log.info("%s: %s at %s", repo_id, "uploaded" if record["uploaded"] else "nothing to upload", info.oid)
    write_json(out, record)
    return record
