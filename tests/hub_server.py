"""A small HTTP server in the Hugging Face hub's URL layout, for tests that run the real ``huggingface_hub`` client.

It answers what the client calls (read in huggingface_hub 2.4.0's hf_api.py / file_download.py / utils/_http.py):
``GET /api/{models,datasets}/{repo}/auth-check``, ``GET /api/{models,datasets}/{repo}[/revision/{rev}]`` (with
``siblings`` and their sizes), ``HEAD``/``GET /{repo}/resolve/{rev}/{path}`` and ``/datasets/{repo}/resolve/...``
(headers ``X-Repo-Commit``, ``ETag``, ``Content-Length``), errors as the hub marks them (``X-Error-Code``:
``GatedRepo`` with 403, ``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound`` with 404), and ``HEAD``/``GET`` of
any other path under ``/files/`` (a corpus URL). ``Hub.fail`` makes paths answer a bare HTTP status (no
``X-Error-Code``), as a proxy or a hub outage does; ``closed_port`` and ``SilentServer`` are a host that refuses
connections and one that accepts them and never answers.

Uploads, as huggingface_hub 2.4.0's hf_api.py / _commit_api.py / lfs.py make them with Xet off (HF_HUB_DISABLE_XET):
``GET /api/whoami-v2``, ``GET /api/models/{repo}/auth-check/write``, ``POST /api/repos/create`` (409 for an existing
repository), ``POST /api/validate-yaml``, ``POST /api/models/{repo}/preupload/{rev}`` (each file's upload mode and
the content id of the file the repository holds), ``POST /{repo}.git/info/lfs/objects/batch`` (no upload action for
an object the hub already holds), ``PUT /lfs-upload/{oid}`` and ``POST /api/models/{repo}/commit/{rev}`` (NDJSON).
A token may write to its user's namespace and to its organizations where its role there allows (``Hub.users``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

TOKEN = "hf_test_token"
READ_TOKEN = "hf_read_token"  # a token of the same user with the read role only
USER, ORG = "tester", "lab"
# the files the hub stores in LFS (the preupload answer): weights and GGUF
LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt")


def _whoami(role: str) -> dict:
    """The whoami-v2 answer for a token of ``role``: a member who may write to ORG and only read "other"."""
    orgs = [{"name": ORG, "roleInOrg": "write"}, {"name": "other", "roleInOrg": "read"}]
    return {"name": USER, "type": "user", "orgs": orgs, "auth": {"accessToken": {"displayName": "test", "role": role}}}


@dataclass
class Repo:
    """One repository: revision -> folder of files; gated repos need ``Authorization: Bearer TOKEN``; ``head``: the
    commit of a repository written through the upload endpoints."""

    revisions: dict[str, Path]
    gated: bool = False
    head: str | None = None


@dataclass
class Hub:
    repos: dict[tuple[str, str], Repo] = field(default_factory=dict)  # (type "model"/"dataset", id) -> Repo
    files: dict[str, Path] = field(default_factory=dict)  # /files/<name> -> file
    requests: list[str] = field(default_factory=list)
    anonymous_check_401: bool = False  # auth-check refuses anonymous callers with a bare 401, as for a missing repo
    fail: dict[str, int] = field(default_factory=dict)  # path prefix -> HTTP status answered with an empty body
    users: dict[str, dict] = field(default_factory=lambda: {TOKEN: _whoami("write"), READ_TOKEN: _whoami("read")})
    storage: Path | None = None  # where created repositories live (a temporary folder by default)
    lfs: dict[str, bytes] = field(default_factory=dict)  # LFS objects by SHA-256

    def user(self, authorization: str | None) -> dict | None:
        token = (authorization or "").removeprefix("Bearer ")
        return self.users.get(token)

    def can_write(self, authorization: str | None, namespace: str) -> bool:
        """Whether the token may write to repositories of ``namespace``."""
        who = self.user(authorization)
        if who is None or who["auth"]["accessToken"]["role"] not in ("write", "admin"):
            return False
        roles = {o["name"]: o["roleInOrg"] for o in who["orgs"]}
        return namespace == who["name"] or roles.get(namespace) in ("write", "admin", "contributor")

    def create(self, repo_id: str) -> Repo:
        """A new repository with the hub's first commit (.gitattributes)."""
        if self.storage is None:
            self.storage = Path(tempfile.mkdtemp(prefix="hub-"))
        folder = self.storage / repo_id
        folder.mkdir(parents=True)
        (folder / ".gitattributes").write_text("*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
        repo = self.repos[("model", repo_id)] = Repo({"main": folder}, head=_new_commit(repo_id, 0))
        return repo

    def repo_files(self, repo_id: str) -> dict[str, bytes]:
        """The files of a model repository's main revision."""
        folder = self.repos[("model", repo_id)].revisions["main"]
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

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


def _new_commit(repo_id: str, n: int) -> str:
    return hashlib.sha1(f"{repo_id}@{n}".encode()).hexdigest()


def git_oid(data: bytes) -> str:
    """A regular file's content id as git and the hub compute it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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
            if parts[:2] == ["api", "whoami-v2"]:
                who = hub.user(self.headers.get("Authorization"))
                if who is None:
                    return self._send(401, b'{"error": "Invalid credentials"}', head=head)
                return self._send(200, json.dumps(who).encode(), {"Content-Type": "application/json"}, head)
            if parts[0] == "api":
                repo_type = parts[1].removesuffix("s")
                repo_id = "/".join(parts[2:4])
                rest = parts[4:]
                repo = hub.repos.get((repo_type, repo_id))
                if repo is None:
                    return self._error(404, "RepoNotFound", head)
                if rest == ["auth-check", "write"]:
                    if not hub.can_write(self.headers.get("Authorization"), repo_id.split("/")[0]):
                        return self._error(403, "Forbidden", head)
                    return self._send(200, b"{}", {"Content-Type": "application/json"}, head)
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
                sha = repo.head or _commit(folder)
                info = {"id": repo_id, "sha": sha, "siblings": siblings, "gated": repo.gated and "manual"}
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

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    data += self.rfile.read(size)
                    self.rfile.readline()
                self.rfile.readline()
                return data
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _json(self, obj) -> None:
            self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json"})

        def _write(self):
            """The upload endpoints (module docstring)."""
            path, body = urlsplit(self.path).path, self._body()
            hub.requests.append(f"{self.command} {path}")
            for prefix, code in hub.fail.items():
                if path.startswith(prefix):
                    return self._send(code, b"")
            parts = [unquote(p) for p in path.strip("/").split("/")]
            auth = self.headers.get("Authorization")
            if parts == ["api", "validate-yaml"]:
                return self._json({"errors": [], "warnings": []})
            if parts == ["api", "repos", "create"]:
                spec = json.loads(body)
                namespace = spec.get("organization") or (hub.user(auth) or {}).get("name")
                if hub.user(auth) is None:
                    return self._send(401, b'{"error": "Invalid credentials"}')
                if not hub.can_write(auth, namespace):
                    return self._error(403, "Forbidden", False)
                repo_id = f"{namespace}/{spec['name']}"
                url = f"http://{self.headers['Host']}/{repo_id}"
                if ("model", repo_id) in hub.repos:  # the hub names the existing repository's URL too
                    return self._send(
                        409, json.dumps({"error": "You already created this model repo", "url": url}).encode()
                    )
                hub.create(repo_id)
                return self._json({"url": url, "name": repo_id})
            if parts[0] == "lfs-upload" and self.command == "PUT":
                oid = parts[1]
                if hashlib.sha256(body).hexdigest() != oid:
                    return self._send(400, b"content does not match its oid")
                hub.lfs[oid] = body
                return self._send(200, b"")
            repo_id = "/".join(parts[2:4]) if parts[0] == "api" else "/".join(parts[:2]).removesuffix(".git")
            repo = hub.repos.get(("model", repo_id))
            if repo is None:
                return self._error(404, "RepoNotFound", False)
            if not hub.can_write(auth, repo_id.split("/")[0]):
                return self._error(403, "Forbidden", False)
            if parts[-4:] == ["info", "lfs", "objects", "batch"]:
                return self._lfs_batch(json.loads(body))
            if parts[4:5] == ["preupload"]:
                return self._preupload(repo, json.loads(body))
            if parts[4:5] == ["commit"]:
                return self._apply_commit(repo, repo_id, body)
            return self._send(404, b"not found")

        def _lfs_batch(self, request: dict):
            host = f"http://{self.headers['Host']}"
            objects = []
            for o in request["objects"]:
                known = o["oid"] in hub.lfs
                actions = {} if known else {"actions": {"upload": {"href": f"{host}/lfs-upload/{o['oid']}"}}}
                objects.append({"oid": o["oid"], "size": o["size"], **actions})
            return self._json({"transfer": "basic", "objects": objects})

        def _preupload(self, repo: Repo, request: dict):
            folder, files = repo.revisions["main"], []
            for f in request["files"]:
                lfs = f["path"].endswith(LFS_SUFFIXES)
                there = folder / f["path"]
                oid = None
                if there.is_file():
                    data = there.read_bytes()
                    oid = hashlib.sha256(data).hexdigest() if lfs else git_oid(data)
                files.append(
                    {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid}
                )
            return self._json({"files": files})

        def _apply_commit(self, repo: Repo, repo_id: str, body: bytes):
            folder = repo.revisions["main"]
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            for item in lines:
                value = item["value"]
                if item["key"] == "file":
                    data = base64.b64decode(value["content"])
                elif item["key"] == "lfsFile":
                    if value["oid"] not in hub.lfs:
                        return self._send(422, b'{"error": "LFS object not uploaded"}')
                    data = hub.lfs[value["oid"]]
                else:
                    continue
                target = folder / value["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            repo.head = _new_commit(
                repo_id, sum(r.startswith("POST /api/models/" + repo_id + "/commit") for r in hub.requests)
            )
            return self._json(
                {
                    "commitUrl": f"http://{self.headers['Host']}/{repo_id}/commit/{repo.head}",
                    "commitOid": repo.head,
                    "success": True,
                }
            )

        def do_POST(self):
            self._write()

        def do_PUT(self):
            self._write()

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
