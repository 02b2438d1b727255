"""The preflight table's row and statuses, and the hub contact every check goes through: a host that gave no answer
once is not contacted again in the run."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from workflow_scripts.hub_cache import (
    HTTP_ERROR,
    NO_ACCESS,
    NOT_FOUND,
    TIMED_OUT,
    UNREACHABLE,
    AccessError,
)

READY, MISSING, NOT_CHECKED = "ready", "missing", "not checked"
NO_TOKEN, NO_WRITE = "no token", "no write access"  # a repository publish uploads to (tools/preflight/publish.py)
STATUSES = (READY, MISSING, NO_ACCESS, NOT_FOUND, UNREACHABLE, TIMED_OUT, HTTP_ERROR, NO_TOKEN, NO_WRITE, NOT_CHECKED)
FAILED = frozenset(STATUSES) - {READY, NOT_CHECKED}  # any of these blocks the run (exit status 1)
OFFLINE_NOTE = "offline (HF_HUB_OFFLINE=1 or --offline)"
OFFLINE_FIX = "run preflight where downloads run (the login node), without --offline and HF_HUB_OFFLINE=1"
FIRST_ROWS = 5


@dataclass
class Row:
    """One line of the table: what, its state, what was seen, and what to do."""

    status: str
    item: str
    detail: str
    fix: str = ""
    bytes: int | None = None
    disk: str = ""  # where its download lands: "cache" (Hugging Face cache), "results", "both", ""


def human(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def failure_row(item: str, e: AccessError) -> Row:
    return Row(e.status, item, str(e), e.fix)


# host -> (the item it failed for, its failure): a host that gave no answer once is not contacted again in this run
# (a host that drops packets costs the timeout per request, and the hub serves every model and dataset row)
_DOWN: dict[str, tuple[str, AccessError]] = {}


@contextmanager
def contact(host: str | None, item: str):
    """Around the requests of one item to ``host`` (None: a local folder): raises the host's earlier failure
    without contacting it, and records a new one (unreachable, timed out)."""
    if host in _DOWN:
        first, e = _DOWN[host]
        again = AccessError(f"not contacted: the same host failed for {first}", e.fix, e.status)
        again.first = e
        raise again
    try:
        yield
    except AccessError as e:
        if host is not None and e.status in (UNREACHABLE, TIMED_OUT):
            _DOWN.setdefault(host, (item, e))
        raise


def hub_files(repo, item: str) -> dict[str, int | None]:
    """The files of hub ``repo`` (or a local folder) with their sizes, after checking access, as one contact."""
    with contact(hub_host(repo), item):
        repo.check_access()
        return repo.files()


def forget_failed_hosts() -> None:
    """Start a run that contacts every host again."""
    _DOWN.clear()


def hub_host(repo) -> str | None:
    from workflow_scripts import hub_cache

    return hub_cache.endpoint() if isinstance(repo, hub_cache.HubRepo) else None


def hub_cached(repo_id: str, filename: str, repo_type: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(repo_id, filename, revision=revision, repo_type=repo_type)
    return isinstance(hit, str)
