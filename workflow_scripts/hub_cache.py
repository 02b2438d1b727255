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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

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


def repo_id_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` is not a Hugging Face repository id (huggingface_hub's own validator), or None."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        return str(e).split(": '")[0].removesuffix(".")
    return None


def page(repo_id: str, repo_type: str) -> str:
    """The repository's web page (where a gated licence is accepted)."""
    prefix = "" if repo_type == "model" else f"{repo_type}s/"
    return f"{endpoint()}/{prefix}{repo_id}"


# What went wrong when a repository (or a URL) could not be read: one status per failure class, each with its own fix.
NO_ACCESS, NOT_FOUND, HTTP_ERROR = "no access", "not found", "http error"
UNREACHABLE, TIMED_OUT = "unreachable", "timed out"
HUB_UNREACHABLE_FIX = (
    "the hub is unreachable from this host: check the network/proxy (HTTPS_PROXY), HF_ENDPOINT, or run preflight "
    "where downloads run; set HF_HUB_OFFLINE=1 to check only the local cache"
)


class AccessError(Exception):
    """A repository that cannot be read: ``status`` says why (one of the statuses above), ``fix`` what to do."""

    def __init__(self, message: str, fix: str, status: str = NOT_FOUND):
        super().__init__(message)
        self.fix = fix
        self.status = status


_TIMEOUT: float | None = None  # set by ``timeouts``; None: the client's own (no limit on API calls)


def request_timeout() -> float:
    """Seconds a hub request waits for an answer: the ``timeouts`` block's, else ``HF_HUB_ETAG_TIMEOUT`` (the
    client's setting for metadata requests), else the client's default for it (10)."""
    from huggingface_hub import constants

    if _TIMEOUT is not None:
        return _TIMEOUT
    return float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or constants.DEFAULT_ETAG_TIMEOUT)


@contextmanager
def timeouts(seconds: float):
    """Within the block every hub request gives up after ``seconds`` without an answer: the client's own session
    sets no limit, and its metadata calls (``model_info``, ``dataset_info``) pass none, so a hub that accepts a
    connection and never answers would hold the caller forever."""
    import httpx2
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils._http import default_client_factory  # the session huggingface_hub makes unset

    global _TIMEOUT

    def factory():
        client = default_client_factory()
        client.timeout = httpx2.Timeout(seconds)
        return client

    _TIMEOUT = seconds
    set_client_factory(factory)
    try:
        yield
    finally:
        _TIMEOUT = None
        set_client_factory(default_client_factory)


def _chain(e: BaseException):
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        reason = getattr(e, "reason", None)  # urllib's URLError keeps the socket error as ``reason``
        if isinstance(reason, BaseException):
            yield reason
        e = e.__cause__ or e.__context__


def network_failure(e: BaseException, timeout: float | None = None) -> tuple[str, str] | None:
    """(status, what happened) for an error that got no answer from the server (host name not resolved, connection
    refused, no answer in time, a broken connection or TLS handshake), from ``huggingface_hub`` (httpx) or urllib;
    None for anything else (an HTTP status is an answer)."""
    import socket
    import ssl

    chain = list(_chain(e))
    for c in chain:
        if isinstance(c, socket.gaierror):
            return UNREACHABLE, f"host name not resolved ({c.strerror or c})"
        if isinstance(c, ConnectionRefusedError):
            return UNREACHABLE, "connection refused"
    for c in chain:
        if isinstance(c, TimeoutError) or type(c).__name__ in ("TimeoutException", "ConnectTimeout", "ReadTimeout"):
            return TIMED_OUT, "no answer" + (f" within {timeout:g} s" if timeout else " in time")
    from httpx2 import TransportError  # huggingface_hub's HTTP client

    for c in chain:
        if isinstance(c, ssl.SSLError):
            return UNREACHABLE, f"TLS failed ({c})"
        if isinstance(c, (ConnectionError, TransportError)):
            return UNREACHABLE, f"connection failed ({type(c).__name__}: {c})"
    return None


def _gated(repo_id: str, repo_type: str) -> AccessError:
    return AccessError(
        f"{repo_id} is gated and these credentials have no access",
        f"accept its licence at {page(repo_id, repo_type)}, then log in here (`hf auth login` or HF_TOKEN)",
        NO_ACCESS,
    )


def _credentials() -> str:
    from huggingface_hub import get_token

    return "with the token of HF_TOKEN / `hf auth login`" if get_token() else "without a token"


def _translate(
    e: Exception, repo_id: str, repo_type: str, key: str | None = None, revision_key: str | None = None
) -> Exception:
    """``e`` as an ``AccessError`` whose status names the failure class and whose fix names ``key`` (the config
    key that sets the id; ``revision_key``: the one that sets its revision) where the id itself is wrong; other
    exceptions unchanged."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    key_fix = f"fix {key}" if key else "fix the id"
    where = page(repo_id, repo_type)
    failure = network_failure(e, request_timeout())
    if failure is not None:
        status, what = failure
        fix = HUB_UNREACHABLE_FIX
        if status == TIMED_OUT:
            fix += "; a slow link needs more seconds (preflight --timeout, HF_HUB_ETAG_TIMEOUT)"
        return AccessError(f"{endpoint()}: {what} (reading {repo_id})", fix, status)
    if isinstance(e, GatedRepoError):
        return _gated(repo_id, repo_type)
    code = getattr(getattr(e, "response", None), "status_code", None)
    if isinstance(e, RevisionNotFoundError):
        rev_fix = f"fix {revision_key}" if revision_key else f"{key_fix} (after @)"
        return AccessError(
            f"{repo_id}: no such revision", f"the revision is wrong: {rev_fix}: name an existing branch, tag or commit"
        )
    if isinstance(e, RemoteEntryNotFoundError):
        return AccessError(f"{repo_id}: {str(e).splitlines()[-1]}", f"the file is not in {where}: {key_fix}")
    if isinstance(e, RepositoryNotFoundError) and code != 401:
        return AccessError(
            f"{repo_id}: no such {repo_type} repository (or a private one)",
            f"the id is wrong: {key_fix} (check it at {where}); a private one needs a login (`hf auth login` or "
            "HF_TOKEN)",
        )
    if isinstance(e, HfHubHTTPError) and code in (401, 403):
        fix = (
            f"log in with a token that can read it (`hf auth login` or HF_TOKEN); if it is gated, accept its licence "
            f"at {where}"
        )
        if code == 401:  # the hub answers 401 for a private or gated repository without credentials, and a missing one
            fix += f"; if the id is wrong, {key_fix}"
        return AccessError(f"{repo_id}: HTTP {code} {_credentials()}", fix, NO_ACCESS)
    if isinstance(e, HfHubHTTPError) and code == 404:
        return AccessError(f"{repo_id}: HTTP 404 at {endpoint()}", f"the id is wrong: {key_fix} (check it at {where})")
    if isinstance(e, HfHubHTTPError):
        fix = "the hub failed on its side (HTTP 5xx) or limits requests (429; a login raises the limit): rerun later"
        return AccessError(f"{repo_id}: the hub answered HTTP {code}", fix, HTTP_ERROR)
    return e


@dataclass
class HubRepo:
    """One hub repository at one revision, read through ``huggingface_hub``; ``key`` (and ``revision_key``) name
    the config keys that set it, so that an error for a wrong id says which to fix."""

    repo_id: str
    repo_type: str = "dataset"
    revision: str | None = None
    key: str | None = None
    revision_key: str | None = None

    @property
    def where(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "")

    def _api(self):
        from huggingface_hub import HfApi

        return HfApi(endpoint=endpoint())

    def _raise(self, e: Exception, cause: Exception | None = None) -> NoReturn:
        """Raise ``e`` as an ``AccessError`` where it is one of the failures it names, else as it is."""
        err = _translate(e, self.repo_id, self.repo_type, self.key, self.revision_key)
        if err is e:
            raise e
        raise err from cause or e

    def _info(self, **kwargs):
        api = self._api()
        info = api.model_info if self.repo_type == "model" else api.dataset_info
        return info(self.repo_id, timeout=_TIMEOUT, **kwargs)

    def check_access(self) -> None:
        """Raise ``AccessError`` (gated without access, missing, private, the hub unreachable) before anything is
        listed or fetched."""
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

        try:
            self._api().auth_check(self.repo_id, repo_type=self.repo_type)
        except GatedRepoError as e:
            self._raise(e)
        except HfHubHTTPError as e:
            # the hub answers 401 for a missing repository and for some anonymous checks: ask for the repository
            # itself before calling it missing (a gated one is listed, and says so)
            try:
                meta = self._info()
            except Exception as e2:
                self._raise(e2, e)
            if meta.gated:
                raise _gated(self.repo_id, self.repo_type) from e
        except Exception as e:
            self._raise(e)

    def files(self) -> dict[str, int | None]:
        """Every file of the revision with its size in bytes (from the hub's file metadata)."""
        try:
            meta = self._info(revision=self.revision, files_metadata=True)
        except Exception as e:
            self._raise(e)
        return {s.rfilename: s.size for s in meta.siblings or []}

    def fetch(self, path: str) -> Path:
        """One file, through the Hugging Face cache (reused by a later fetch, and offline)."""
        from huggingface_hub import hf_hub_download

        try:
            return Path(
                hf_hub_download(
                    self.repo_id,
                    path,
                    repo_type=self.repo_type,
                    revision=self.revision,
                    endpoint=endpoint(),
                    etag_timeout=request_timeout(),
                )
            )
        except Exception as e:
            self._raise(e)


@dataclass
class LocalRepo:
    """A folder holding a repository's files in the hub's layout (a clone, or a test fixture)."""

    root: Path

    @property
    def where(self) -> str:
        return str(self.root)

    def check_access(self) -> None:
        if not self.root.is_dir():
            raise AccessError(f"{self.root} is not a folder", "give an existing folder or a hub id", NOT_FOUND)

    def files(self) -> dict[str, int | None]:
        out = {}
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root).as_posix()
            if p.is_file() and not rel.startswith((".git/", ".cache/")):
                out[rel] = p.stat().st_size
        return out

    def fetch(self, path: str) -> Path:
        return self.root / path


def open_repo(
    location: str, repo_type: str = "dataset", revision: str | None = None, key: str | None = None
) -> HubRepo | LocalRepo:
    """A local folder as it is, else ``owner/name[@revision]`` on the hub (``revision`` is the default; ``key``:
    the config key that sets ``location``, named by errors)."""
    if Path(location).is_dir():
        return LocalRepo(Path(location))
    repo_id, rev = split_id(location)
    return HubRepo(repo_id, repo_type, rev or revision, key)


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
