"""The Hugging Face hub as the workflow reads it: one repository at one revision, its files and their sizes, and
files fetched into the shared Hugging Face cache (``HF_HOME``), so that compute jobs later read them with
``HF_HUB_OFFLINE=1``.

``HubRepo`` goes through the real ``huggingface_hub`` client (``HfApi.auth_check``, ``dataset_info`` /
``model_info`` with file metadata, ``hf_hub_download``) against ``HF_ENDPOINT`` when set; ``LocalRepo`` reads a
folder that holds a repository's files in the same layout (a ``git clone`` of a hub repository, or the test
fixtures), so that the same layout code serves both.

Command line (local rules of ``rules/data.smk``, run on the login node):

- ``model --spec JSON --out MARKER``: the files of a hub model that ``from_pretrained`` reads (top-level JSON,
  safetensors, ``tokenizer.model``, chat templates; no ``original/`` checkpoints, no ``.bin`` duplicates).
- ``flores --root ID --codes C1 C2 --split devtest --out MARKER``: FLORES+ parquet files of those codes (the
  files ``workflow_scripts.corpus`` asks ``snapshot_download`` for).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

# What from_pretrained needs from a model repository (transformers reads config, weights, tokenizer and templates);
# checkpoints in other formats (``original/*.pth``, ``*.bin`` next to safetensors) are left on the hub.
MODEL_PATTERNS = ("*.json", "*.safetensors", "tokenizer.model", "*.jinja", "*.tiktoken")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")


def endpoint() -> str:
    """The hub endpoint: ``HF_ENDPOINT`` (read at call time, so a test or a mirror can set it), else the hub's."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def offline() -> bool:
    """True when the hub must not be contacted (``HF_HUB_OFFLINE=1``)."""
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def split_id(location: str) -> tuple[str, str | None]:
    """``owner/name@revision`` -> (``owner/name``, revision or None)."""
    if "@" in location:
        repo, rev = location.split("@", 1)
        return repo, rev
    return location, None


def is_hub_id(location: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+(@.+)?", location)) and not Path(location).exists()


def page(repo_id: str, repo_type: str) -> str:
    """The repository's web page (where a gated licence is accepted)."""
    prefix = "" if repo_type == "model" else f"{repo_type}s/"
    return f"{endpoint()}/{prefix}{repo_id}"


class AccessError(Exception):
    """A repository that exists but cannot be read with the user's credentials, or does not exist."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.fix = fix


def _gated(repo_id: str, repo_type: str) -> AccessError:
    return AccessError(
        f"{repo_id} is gated and these credentials have no access",
        f"accept its licence at {page(repo_id, repo_type)}, then log in here (`hf auth login` or HF_TOKEN)",
    )


def _translate(e: Exception, repo_id: str, repo_type: str) -> Exception:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if isinstance(e, GatedRepoError):
        return _gated(repo_id, repo_type)
    if isinstance(e, RevisionNotFoundError):
        return AccessError(f"{repo_id}: no such revision", "check the revision after '@'")
    if isinstance(e, RepositoryNotFoundError):
        return AccessError(
            f"{repo_id}: no such {repo_type} repository (or a private one)",
            f"check the id at {page(repo_id, repo_type)}; for a private one, log in (`hf auth login` or HF_TOKEN)",
        )
    return e


@dataclass
class HubRepo:
    """One hub repository at one revision, read through ``huggingface_hub``."""

    repo_id: str
    repo_type: str = "dataset"
    revision: str | None = None

    @property
    def where(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "")

    def _api(self):
        from huggingface_hub import HfApi

        return HfApi(endpoint=endpoint())

    def check_access(self) -> None:
        """Raise ``AccessError`` (gated without access, missing, private) before anything is listed or fetched."""
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

        try:
            self._api().auth_check(self.repo_id, repo_type=self.repo_type)
        except GatedRepoError as e:
            raise _translate(e, self.repo_id, self.repo_type) from e
        except HfHubHTTPError as e:
            # the hub answers 401 for a missing repository and for some anonymous checks: ask for the repository
            # itself before calling it missing (a gated one is listed, and says so)
            api = self._api()
            info = api.model_info if self.repo_type == "model" else api.dataset_info
            try:
                meta = info(self.repo_id)
            except Exception as e2:
                raise _translate(e2, self.repo_id, self.repo_type) from e
            if meta.gated:
                raise _gated(self.repo_id, self.repo_type) from e

    def files(self) -> dict[str, int | None]:
        """Every file of the revision with its size in bytes (from the hub's file metadata)."""
        api = self._api()
        info = api.model_info if self.repo_type == "model" else api.dataset_info
        try:
            meta = info(self.repo_id, revision=self.revision, files_metadata=True)
        except Exception as e:
            raise _translate(e, self.repo_id, self.repo_type) from e
        return {s.rfilename: s.size for s in meta.siblings or []}

    def fetch(self, path: str) -> Path:
        """One file, through the Hugging Face cache (reused by a later fetch, and offline)."""
        from huggingface_hub import hf_hub_download

        try:
            return Path(
                hf_hub_download(
                    self.repo_id, path, repo_type=self.repo_type, revision=self.revision, endpoint=endpoint()
                )
            )
        except Exception as e:
            raise _translate(e, self.repo_id, self.repo_type) from e


@dataclass
class LocalRepo:
    """A folder holding a repository's files in the hub's layout (a clone, or a test fixture)."""

    root: Path

    @property
    def where(self) -> str:
        return str(self.root)

    def check_access(self) -> None:
        if not self.root.is_dir():
            raise AccessError(f"{self.root} is not a folder", "give an existing folder or a hub id")

    def files(self) -> dict[str, int | None]:
        out = {}
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root).as_posix()
            if p.is_file() and not rel.startswith((".git/", ".cache/")):
                out[rel] = p.stat().st_size
        return out

    def fetch(self, path: str) -> Path:
        return self.root / path


def open_repo(location: str, repo_type: str = "dataset", revision: str | None = None) -> HubRepo | LocalRepo:
    """A local folder as it is, else ``owner/name[@revision]`` on the hub (``revision`` is the default)."""
    if Path(location).is_dir():
        return LocalRepo(Path(location))
    repo_id, rev = split_id(location)
    return HubRepo(repo_id, repo_type, rev or revision)


def matching(files: dict[str, int | None], patterns: tuple[str, ...] | list[str], top_level: bool = False) -> list[str]:
    """Files matching any of ``patterns`` (fnmatch on the whole path; ``top_level``: no sub-folders)."""
    out = []
    for f in files:
        if top_level and "/" in f:
            continue
        if any(fnmatch.fnmatchcase(f, p) for p in patterns):
            out.append(f)
    return sorted(out)


def model_files(files: dict[str, int | None]) -> list[str]:
    """The files of a model repository that ``from_pretrained`` reads (``MODEL_PATTERNS``, top level only)."""
    return matching(files, MODEL_PATTERNS, top_level=True)


def prefetch(repo: HubRepo | LocalRepo, paths: list[str]) -> list[Path]:
    """Fetch ``paths`` into the Hugging Face cache (nothing to do for a local folder)."""
    return [repo.fetch(p) for p in paths]


def flores_paths(split: str, codes: list[str]) -> list[str]:
    """FLORES+ files of ``codes`` in ``split``: ``{split}/{code}.parquet`` (openlanguagedata/flores_plus, main)."""
    return [f"{split}/{c}.parquet" for c in codes]


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    from workflow_scripts.io import setup_logging, write_json

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model", help="fetch a hub model's files into the Hugging Face cache")
    m.add_argument("--spec", required=True, help="the config's models entry as JSON (kind hub: path, revision)")
    m.add_argument("--out", required=True, help="marker JSON: repository, files, bytes")
    f = sub.add_parser("flores", help="fetch FLORES+ parquet files into the Hugging Face cache")
    f.add_argument("--root", required=True)
    f.add_argument("--codes", nargs="+", required=True)
    f.add_argument("--split", default="devtest")
    f.add_argument("--out", required=True)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    if a.cmd == "model":
        spec = json.loads(a.spec)
        if spec.get("kind") != "hub":
            write_json(a.out, {"kind": spec.get("kind"), "files": [], "note": "not a hub model: nothing to fetch"})
            return
        repo = HubRepo(spec["path"], "model", spec.get("revision"))
        repo.check_access()
        files = repo.files()
        wanted = model_files(files)
        prefetch(repo, wanted)
        write_json(a.out, {"repo": repo.where, "files": wanted, "bytes": sum(files[w] or 0 for w in wanted)})
    else:
        repo = open_repo(a.root)
        repo.check_access()
        files = repo.files()
        wanted = flores_paths(a.split, a.codes)
        missing = [w for w in wanted if w not in files]
        if missing:
            raise FileNotFoundError(f"FLORES+ {repo.where}: no {', '.join(missing)}")
        prefetch(repo, wanted)
        write_json(a.out, {"repo": repo.where, "files": wanted, "bytes": sum(files[w] or 0 for w in wanted)})


if __name__ == "__main__":
    main()
