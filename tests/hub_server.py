"""A small HTTP server in the Hugging Face hub's URL layout, for tests that run the real ``huggingface_hub`` client.

It answers what the client calls (read in huggingface_hub 2.4.0's hf_api.py / file_download.py / utils/_http.py):
``GET /api/{models,datasets}/{repo}/auth-check``, ``GET /api/{models,datasets}/{repo}[/revision/{rev}]`` (with
``siblings`` and their sizes), ``HEAD``/``GET /{repo}/resolve/{rev}/{path}`` and ``/datasets/{repo}/resolve/...``
(headers ``X-Repo-Commit``, ``ETag``, ``Content-Length``), errors as the hub marks them (``X-Error-Code``:
``GatedRepo`` with 403, ``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound`` with 404), and ``HEAD``/``GET`` of
any other path under ``/files/`` (a corpus URL). ``Hub.fail`` makes paths answer a bare HTTP status (no
``X-Error-Code``), as a proxy or a hub outage does; ``closed_port`` and ``SilentServer`` are a host that refuses
connections and one that accepts them and never answers.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

TOKEN = "hf_test_token"


@dataclass
class Repo:
    """One repository: revision -> folder of files; gated repos need ``Authorization: Bearer TOKEN``."""

    revisions: dict[str, Path]
    gated: bool = False


@dataclass
class Hub:
    repos: dict[tuple[str, str], Repo] = field(default_factory=dict)  # (type "model"/"dataset", id) -> Repo
    files: dict[str, Path] = field(default_factory=dict)  # /files/<name> -> file
    requests: list[str] = field(default_factory=list)
    anonymous_check_401: bool = False  # auth-check refuses anonymous callers with a bare 401, as for a missing repo
    fail: dict[str, int] = field(default_factory=dict)  # path prefix -> HTTP status answered with an empty body

    def fail_repo(self, repo_type: str, repo_id: str, code: int) -> None:
        """Every request about the repository (API and files) answers ``code``."""
        prefix = "" if repo_type == "model" else f"/{repo_type}s"
        self.fail[f"/api/{repo_type}s/{repo_id}"] = code
        self.fail[f"{prefix}/{repo_id}/resolve/"] = code

    def add(self, repo_type: str, repo_id: str, folder: Path, revision: str = "main", gated: bool = False) -> None:
        repo = self.repos.setdefault((repo_type, repo_id), Repo({}, gated))
        repo.revisions[revision] = Path(folder)
        repo.gated = repo.gated or gated


def _commit(folder: Path) -> str:
    return hashlib.sha1(str(folder).encode()).hexdigest()


def _handler(hub: Hub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, code: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _error(self, code: int, error_code: str, head: bool):
            self._send(code, json.dumps({"error": error_code}).encode(), {"X-Error-Code": error_code}, head)

        def _authorized(self, repo: Repo) -> bool:
            return not repo.gated or self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def _route(self, head: bool):
            path = urlsplit(self.path).path
            hub.requests.append(f"{self.command} {path}")
            for prefix, code in hub.fail.items():
                if path.startswith(prefix):
                    return self._send(code, b"", head=head)
            parts = [unquote(p) for p in path.strip("/").split("/")]
            if parts[0] == "files":
                f = hub.files.get("/".join(parts[1:]))
                if f is None:
                    return self._send(404, b"not found", head=head)
                return self._send(200, f.read_bytes(), head=head)
            if parts[0] == "api":
                repo_type = parts[1].removesuffix("s")
                repo_id = "/".join(parts[2:4])
                rest = parts[4:]
                repo = hub.repos.get((repo_type, repo_id))
                if repo is None:
                    return self._error(404, "RepoNotFound", head)
                if rest == ["auth-check"]:
                    if hub.anonymous_check_401 and not self.headers.get("Authorization"):
                        return self._send(401, b"{}", head=head)
                    if not self._authorized(repo):
                        return self._error(403, "GatedRepo", head)
                    return self._send(200, b"{}", {"Content-Type": "application/json"}, head)
                revision = rest[1] if rest[:1] == ["revision"] else "main"
                folder = repo.revisions.get(revision)
                if folder is None:
                    return self._error(404, "RevisionNotFound", head)
                siblings = [
                    {"rfilename": p.relative_to(folder).as_posix(), "size": p.stat().st_size}
                    for p in sorted(folder.rglob("*"))
                    if p.is_file()
                ]
                info = {"id": repo_id, "sha": _commit(folder), "siblings": siblings, "gated": repo.gated and "manual"}
                return self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
            # /{repo}/resolve/{rev}/{path} or /datasets/{repo}/resolve/{rev}/{path}
            repo_type = "model"
            if parts[0] == "datasets":
                repo_type, parts = "dataset", parts[1:]
            if len(parts) < 5 or parts[2] != "resolve":
                return self._send(404, b"not found", head=head)
            repo = hub.repos.get((repo_type, "/".join(parts[:2])))
            if repo is None:
                return self._error(401, "RepoNotFound", head)
            if not self._authorized(repo):
                return self._error(403, "GatedRepo", head)
            folder = repo.revisions.get(parts[3])
            if folder is None:
                return self._error(404, "RevisionNotFound", head)
            f = folder / "/".join(parts[4:])
            headers = {"X-Repo-Commit": _commit(folder)}
            if not f.is_file():  # the hub names the commit even for a missing file (the client caches that)
                return self._send(404, b"", {**headers, "X-Error-Code": "EntryNotFound"}, head)
            data = f.read_bytes()
            headers["ETag"] = '"' + hashlib.sha256(data).hexdigest() + '"'
            return self._send(200, data, headers, head)

        def do_GET(self):
            self._route(head=False)

        def do_HEAD(self):
            self._route(head=True)

    return Handler


class HubServer:
    """Start with ``with HubServer(hub) as url:``; stopped (and its thread joined) on exit."""

    def __init__(self, hub: Hub):
        self.hub = hub
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, paid at the end of every test.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def closed_port() -> int:
    """A local port nothing listens on (bound, then closed): a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SilentServer:
    """A local port that accepts connections (the kernel completes them from the listen backlog) and never
    answers: a request to it waits for its timeout. ``with SilentServer() as url:``."""

    def __enter__(self) -> str:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc) -> None:
        self.sock.close()
