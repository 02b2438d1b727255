"""Preflight: everything a configuration will download, checked on the login node before any job is submitted.

    python -m tools.preflight --configfile configs/paper.yaml

For every model (and its tokenizer), corpus file (a file the config names, a URL, a file pinned in a package index),
FLORES+ file and evaluation dataset the configuration needs: whether it is reachable with the user's credentials (a
gated repository without access is named with the page where its licence is accepted), what it weighs, whether the disk
under ``results/`` and the Hugging Face cache has room for it, and, for each dataset, whether the subset, split and
columns the tasks read exist (on the first rows only). One table, one row per item, each with its fix: ready; not
checked; or why it failed (missing; no access: gated or refused credentials; not found: a wrong id or URL; unreachable:
no connection or no DNS; timed out; http error: any other HTTP status). With publish.repo_prefix set, a row per hub
repository the cells are uploaded to: ready, no token or no write access (tools/preflight/publish.py). The exit status
is 1 when any row failed; network errors are rows, never a traceback.

Offline (``HF_HUB_OFFLINE=1`` or ``--offline``) it checks what is local (packages, files, mirrors already downloaded,
the Hugging Face cache) and marks everything else "not checked", saying what was not checked. The hub is read with
``huggingface_hub`` (``HF_ENDPOINT`` and the user's token apply); each request waits ``--timeout`` seconds for an
answer, and a host that did not answer once is not contacted again. The next step, ``snakemake download_all``,
fetches what this lists (docs/data.md).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import shutil
import sys
import urllib.error
import urllib.request
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlsplit

from tools.preflight.evaluation import dataset_rows, items_tokenizer_rows, sum_asset_rows
from tools.preflight.publish import publish_rows
from tools.preflight.rows import (
    FAILED,
    HTTP_ERROR,
    MISSING,
    NO_ACCESS,
    NOT_CHECKED,
    NOT_FOUND,
    OFFLINE_FIX,
    OFFLINE_NOTE,
    READY,
    STATUSES,
    TIMED_OUT,
    UNREACHABLE,
    AccessError,
    Row,
    contact,
    failure_row,
    forget_failed_hosts,
    hub_cached,
    hub_files,
    hub_host,
    human,
)
from workflow_scripts.corpora import IndexFile, LocalFile, UrlFile
from workflow_scripts.hub_cache import network_failure, request_timeout

REPO = Path(__file__).resolve().parents[2]


def load_config(path: Path) -> dict:
    """The configuration as the workflow sees it: the file, checked against the schema, with its defaults."""
    import yaml

    from workflow_scripts.plan.checks import config_file_problems, schema_errors
    from workflow_scripts.plan.checks.schema import fill_defaults

    unreadable = config_file_problems(path) if Path(path).is_file() else [f"{path}: no such file"]
    if unreadable:
        raise SystemExit(f"{path}: invalid configuration:\n  - " + "\n  - ".join(unreadable))
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    schema = REPO / "schemas" / "config.schema.yaml"
    problems = schema_errors(config, schema)
    if problems:
        raise SystemExit(f"{path}: invalid configuration:\n  - " + "\n  - ".join(problems))
    fill_defaults(config, schema)
    return config


def free_bytes(path: Path) -> int:
    """Free space of the file system holding ``path`` (its nearest existing parent)."""
    p = Path(path).resolve()
    while not p.exists():
        p = p.parent
    return shutil.disk_usage(p).free


def _device(path: Path) -> int:
    p = Path(path).resolve()
    while not p.exists():
        p = p.parent
    return p.stat().st_dev


def hf_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


# ---- models ----------------------------------------------------------------------------------------------------------


def model_rows(name: str, spec: dict, online: bool, key: str) -> list[Row]:
    """The model of one ``models`` entry (or its chat sibling; ``key``: its config key) and its tokenizer."""
    from workflow_scripts import hub_cache
    from workflow_scripts.source_model import package_file_problem

    kind = spec.get("kind")
    item = f"model {name}"
    if kind == "hub":
        repo_id, revision = spec["path"], spec.get("revision")
        item += f" ({repo_id})"
        if not online:
            if hub_cached(repo_id, "config.json", "model", revision):
                return [Row(READY, item, "in the Hugging Face cache; " + OFFLINE_NOTE + ": not compared with the hub")]
            detail = OFFLINE_NOTE + ": access (gated licence), size, tokenizer files"
            return [Row(NOT_CHECKED, item, detail, OFFLINE_FIX)]
        repo = hub_cache.HubRepo(repo_id, "model", revision, key + ".path", key + ".revision")
        try:
            files = hub_files(repo, item)
        except AccessError as e:
            return [failure_row(item, e)]
        wanted = hub_cache.model_files(files)
        weights = [f for f in wanted if f.endswith(".safetensors")]
        size = sum(files[f] or 0 for f in wanted)
        rows = []
        if weights:
            rows.append(Row(READY, item, f"{len(weights)} safetensors files, {human(size)}", bytes=size, disk="cache"))
        else:
            fix = f"name a revision with safetensors ({key}.revision) or another model ({key}.path)"
            rows.append(Row(MISSING, item, "no .safetensors weights at the top level", fix))
        tok = [f for f in hub_cache.TOKENIZER_FILES if f in files]
        if tok:
            rows.append(Row(READY, f"tokenizer {name} ({repo_id})", ", ".join(tok)))
        else:
            fix = f"name a revision ({key}.revision) or a model ({key}.path) that has its tokenizer"
            rows.append(Row(MISSING, f"tokenizer {name} ({repo_id})", "no tokenizer.json / tokenizer.model", fix))
        return rows
    if kind == "local":
        ok = (Path(spec["path"]) / "config.json").is_file()
        return [
            Row(READY, item, f"local folder {spec['path']}")
            if ok
            else Row(MISSING, item, f"{spec['path']}/config.json does not exist", f"fix {key}.path")
        ]
    if kind in ("gguf_package", "random_llama"):
        problem = package_file_problem(spec["package"], spec["file"])
        if problem:
            return [Row(MISSING, item, problem[1], f"fix {key}.{problem[0]}")]
        return [Row(READY, item, f"{spec['file']} in installed package {spec['package']}")]
    return [Row(MISSING, item, f"unknown kind {kind!r}", f"fix {key}.kind")]


# ---- corpora and MT test sets ----------------------------------------------------------------------------------------


def _head(url: str, timeout: float) -> int | None:
    """The Content-Length of ``url`` (None where the server gives none), asked with HEAD, or GET for a server that
    refuses HEAD (the body is not read)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as r:
            size = r.headers.get("Content-Length")
    except urllib.error.HTTPError as e:
        if e.code not in (405, 501):
            raise
        with urllib.request.urlopen(url, timeout=timeout) as r:
            size = r.headers.get("Content-Length")
    return int(size) if size else None


def url_unreachable_fix(url: str, key: str, status: str, what: str) -> str:
    """The fix for a corpus host that gave no answer (``status``, ``what``: from ``network_failure``)."""
    host = urlsplit(url).hostname or url
    fix = f"{host} is unreachable from this host: check the network/proxy (HTTPS_PROXY)"
    if "not resolved" in what:
        fix += f" and the host name in {key}"
    fix += ", or run preflight where downloads run"
    if status == TIMED_OUT:
        fix += "; a slow link needs more seconds (preflight --timeout)"
    return fix


def url_failure(url: str, key: str, path_key: str, e: Exception, timeout: float) -> AccessError:
    """What a failed request for a corpus URL means: a wrong URL (HTTP 404/410, not a URL), refused access (HTTP
    401/403), any other HTTP status, or a host that did not answer; only a wrong URL says to fix ``key``."""
    host = urlsplit(url).hostname or url
    if isinstance(e, urllib.error.HTTPError):
        if e.code in (404, 410):
            return AccessError(f"HTTP {e.code}: no file at this URL", f"the URL is wrong: fix {key}", NOT_FOUND)
        if e.code in (401, 403):
            fix = f"{host} refuses this file without credentials: fetch it where you may and set {path_key} to it"
            return AccessError(f"HTTP {e.code} from {host}", fix, NO_ACCESS)
        fix = f"{host} failed on its side (HTTP 5xx) or limits requests (429): rerun later; the URL may be right"
        return AccessError(f"HTTP {e.code} {e.reason} from {host}", fix, HTTP_ERROR)
    failure = network_failure(e, timeout)
    if failure is not None:
        return AccessError(f"{host}: {failure[1]}", url_unreachable_fix(url, key, *failure), failure[0])
    if isinstance(e, ValueError):  # urllib's "unknown url type" and the like
        return AccessError(f"not a URL: {e}", f"the URL is wrong: fix {key}", NOT_FOUND)
    if isinstance(e, http.client.HTTPException):
        return AccessError(f"{host} sent no valid HTTP answer ({type(e).__name__})", "rerun later", HTTP_ERROR)
    return AccessError(f"{host}: {type(e).__name__}: {e}", "check the network/proxy (HTTPS_PROXY)", UNREACHABLE)


def url_row(source: UrlFile, online: bool) -> Row:
    """A corpus file a local rule fetches from a URL: downloaded, or reachable (its size)."""
    url, key, item = source.url, source.key, source.item
    path_key = key.rsplit(".", 1)[0] + ".path"
    local = Path(source.path)
    if local.is_file():
        return Row(READY, item, f"downloaded: {local}")
    if not online:
        return Row(NOT_CHECKED, item, OFFLINE_NOTE + ": reachability and size", OFFLINE_FIX)
    timeout = request_timeout()
    try:
        with contact(urlsplit(url).netloc or url, item):
            try:
                size = _head(url, timeout)
            except (OSError, ValueError, http.client.HTTPException) as e:  # urllib's errors are OSError
                raise url_failure(url, key, path_key, e, timeout) from e
    except AccessError as e:
        if e.status in (UNREACHABLE, TIMED_OUT):  # a host that failed for another language: this row's key
            e.fix = url_unreachable_fix(url, key, e.status, str(getattr(e, "first", e)))
        return failure_row(item, e)
    return Row(READY, item, human(size), bytes=size, disk="results")


def package_index() -> str:
    """The package index ``pip download`` reads by default: PIP_INDEX_URL, else PyPI's simple index."""
    import os

    return (os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple").rstrip("/")


def index_file(url: str, filename: str, timeout: float) -> tuple[str | None, int | None] | None:
    """(sha256, size) of ``filename`` on a simple-index page (PEP 691 JSON, else the HTML page's link with its
    ``#sha256=`` fragment); None when the page does not list it."""
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=timeout) as r:
        kind, body = r.headers.get("Content-Type", ""), r.read()
    if "json" in kind:
        for f in json.loads(body).get("files", []):
            if f.get("filename") == filename:
                return f.get("hashes", {}).get("sha256"), f.get("size")
        return None
    import re

    link = rf'href="[^"]*/{re.escape(filename)}(?:#sha256=([0-9a-f]{{64}}))?"'
    match = re.search(link, body.decode(errors="replace"))
    return (match.group(1), None) if match else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def index_row(source: IndexFile, online: bool) -> Row:
    """A corpus file pinned in a package index (a kind's ``IndexFile``): downloaded and intact, or offered by the
    package index with the pinned SHA-256."""
    item, name, local = source.item, source.filename, Path(source.path)
    if local.is_file():
        if sha256_of(local) == source.sha256:
            return Row(READY, item, f"downloaded: {local} (SHA-256 as pinned)")
        return Row(MISSING, item, f"{local}: SHA-256 differs from the pin", f"delete it and run {source.rule} again")
    if not online:
        return Row(NOT_CHECKED, item, OFFLINE_NOTE + ": the package index", OFFLINE_FIX)
    url, timeout = f"{package_index()}/{source.package}/", request_timeout()
    try:
        with contact(urlsplit(url).netloc, item):
            try:
                found = index_file(url, name, timeout)
            except (OSError, ValueError, http.client.HTTPException) as e:
                raise url_failure(url, "PIP_INDEX_URL", "PIP_INDEX_URL", e, timeout) from e
    except AccessError as e:
        return failure_row(item, e)
    fix = "set PIP_INDEX_URL to an index that mirrors PyPI's files (pip download reads it too)"
    if found is None:
        return Row(NOT_FOUND, item, f"{url} lists no {name}", fix)
    sha, size = found
    if sha is not None and sha != source.sha256:
        return Row(MISSING, item, f"{url}: {name} has SHA-256 {sha}, not the pinned one", fix)
    detail = f"{url}: {human(size)}" + (", SHA-256 as pinned" if sha else "")
    return Row(READY, item, detail, bytes=size, disk="results")


def corpus_row(lang: str, corpus: dict, online: bool, downloads: Path) -> Row | None:
    """The file a language's corpus reads (its kind's ``source``, workflow_scripts/corpora/): a file the config
    names, one fetched from a URL or pinned in a package index; None for a kind that reads none."""
    from workflow_scripts.corpora import CORPORA

    spec = CORPORA[corpus["kind"]]
    source = spec.source(lang, corpus, str(downloads)) if spec.source else None
    if isinstance(source, UrlFile):
        return url_row(source, online)
    if isinstance(source, IndexFile):
        return index_row(source, online)
    if source is None:
        return None
    if Path(source.path).is_file():
        return Row(READY, source.item, source.path)
    return Row(MISSING, source.item, f"{source.path} does not exist", f"fix {source.key}")


def mt_pairs_rows(config: dict, lang: str) -> list[Row]:
    """The local file a language's MT kind reads (its module's ``source``, workflow_scripts/mt_sources/: your pairs
    file): whether it exists."""
    from workflow_scripts.mt_sources import MT_SOURCES, mt_of

    mt = mt_of(config, lang)
    spec = MT_SOURCES.get(mt.get("kind"))
    source = spec.source(lang, mt) if spec and spec.source else None
    if source is None or not isinstance(source, LocalFile):
        return []
    ok = Path(source.path).is_file()
    fix = "" if ok else f"fix {source.key} (the file does not exist)"
    return [Row(READY if ok else MISSING, source.item, source.path, fix)]


def mt_hub_rows(config: dict, online: bool) -> list[Row]:
    """The dataset files the languages' MT kinds read (a module's ``HubFiles``: FLORES+ devtest, gated), one row per
    dataset: access, the files ``{split}/{code}.parquet``, their columns."""
    from workflow_scripts import hub_cache
    from workflow_scripts.mt_sources import MT_SOURCES, HubFiles, mt_of

    by_root: dict[tuple[str, str], list[HubFiles]] = {}
    for lang in config.get("languages", {}):
        mt = mt_of(config, lang)
        spec = MT_SOURCES.get(mt.get("kind"))
        source = spec.source(lang, mt) if spec and spec.source else None
        if isinstance(source, HubFiles):
            by_root.setdefault((source.root, source.item), []).append(source)
    rows = []
    for (root, item), sources in by_root.items():
        first = sources[0]
        paths = list(dict.fromkeys(p for s in sources for p in s.paths))
        codes, key, columns = [Path(p).stem for p in paths], first.key, " and ".join(first.columns)
        local = Path(root).is_dir()
        if not local and not online:
            cached = all(hub_cached(root, p, "dataset", None) for p in paths)
            if cached:
                rows.append(Row(READY, item, f"{len(paths)} files in the Hugging Face cache"))
            else:
                detail = OFFLINE_NOTE + ": access (gated licence), files, columns"
                rows.append(Row(NOT_CHECKED, item, detail, OFFLINE_FIX))
            continue
        repo = hub_cache.open_repo(root, key=key)
        try:
            with contact(hub_host(repo), item):
                repo.check_access()
                files = repo.files()
                missing = [p for p in paths if p not in files]
                if not missing:
                    import pyarrow.parquet as pq

                    cols = pq.read_schema(repo.fetch(paths[1])).names
        except AccessError as e:
            rows.append(failure_row(item, e))
            continue
        if missing:
            fix = f"fix {key} ({first.copy} with {first.split}/{{code}}.parquet) or the language codes (docs/data.md)"
            rows.append(Row(MISSING, item, f"no {', '.join(missing)}", fix))
            continue
        if not set(first.columns) <= set(cols):
            fix = f"fix {key}: {first.copy} whose {first.split} files have {columns} columns (docs/data.md)"
            rows.append(Row(MISSING, item, f"{paths[1]} has columns {cols}, not {columns}", fix))
            continue
        size = sum(files[p] or 0 for p in paths)
        disk = "" if local else "cache"
        rows.append(Row(READY, item, f"{len(paths)} files ({', '.join(codes)}), {human(size)}", bytes=size, disk=disk))
    return rows


# ---- disk ------------------------------------------------------------------------------------------------------------


def disk_rows(rows: list[Row], results: Path, cache: Path) -> list[Row]:
    """Room for the downloads: the Hugging Face cache receives hub files, results/ the mirrors and corpora (a
    dataset lands in both: the fetched files, then the converted mirror)."""
    need = {"cache": 0, "results": 0}
    for r in rows:
        if r.bytes and r.disk in ("cache", "both"):
            need["cache"] += r.bytes
        if r.bytes and r.disk in ("results", "both"):
            need["results"] += r.bytes
    # rows whose download size is unknown: not checked, or failed before the hub listed their files
    unsized = set(STATUSES) - {READY, MISSING}
    unknown = sum(1 for r in rows if r.status in unsized or (r.disk and r.bytes is None))
    places = {"cache": cache, "results": results}
    if _device(cache) == _device(results):
        groups = [("results/ and the Hugging Face cache", results, need["cache"] + need["results"], f"{cache}")]
    else:
        groups = [(f"{k} ({places[k]})", places[k], need[k], str(places[k])) for k in ("results", "cache")]
    out = []
    for label, path, n, _ in groups:
        free = free_bytes(path)
        detail = f"downloads of known size {human(n)} (files already cached counted), free {human(free)}"
        if n > free:
            fix = "free space there, or point HF_HOME / the working directory at a larger disk"
            out.append(Row(MISSING, f"disk {label}", detail, fix))
        elif unknown:
            fix = "fix or check those rows (online: the hub lists their sizes), then rerun preflight"
            out.append(Row(NOT_CHECKED, f"disk {label}", detail + f"; {unknown} download sizes not known", fix))
        else:
            out.append(Row(READY, f"disk {label}", detail))
    return out


# ---- the table -------------------------------------------------------------------------------------------------------


def preflight(config: dict, *, online: bool, results: Path, max_read: int) -> list[Row]:
    """Every row for ``config`` (no side effects but the Hugging Face cache, which the download step reuses)."""
    from workflow_scripts import languages
    from workflow_scripts.io import UserError

    forget_failed_hosts()
    rows: list[Row] = []
    for lang, lc in config.get("languages", {}).items():
        try:  # the config's language facts (a FLORES code it gives), as planning knows them
            languages.declare({lang: lc})
        except UserError as e:
            rows.append(Row(MISSING, f"language {lang}", str(e), f"fix languages.{lang}"))
    for name, spec in config.get("models", {}).items():
        rows += model_rows(name, spec, online, f"models.{name}")
        if isinstance(spec.get("chat"), dict):
            rows += model_rows(f"{name} chat", spec["chat"], online, f"models.{name}.chat")
    for lang, lc in config.get("languages", {}).items():
        row = corpus_row(lang, lc["corpus"], online, results / "downloads")
        rows += [row] if row else []
        rows += mt_pairs_rows(config, lang)
    rows += mt_hub_rows(config, online)
    rows += dataset_rows(config, online, results / "downloads", max_read)
    rows += items_tokenizer_rows(config, online, results / "downloads")
    rows += sum_asset_rows(config, online, results / "downloads")
    rows += disk_rows(rows, results, hf_cache_dir())
    rows += publish_rows(config, online)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| status | item | detail | fix |", "|---|---|---|---|"]
    lines += [f"| {r.status} | {r.item} | {r.detail} | {r.fix} |" for r in rows]
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n or s in (READY, MISSING, NOT_CHECKED)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from workflow_scripts import hub_cache

    p = argparse.ArgumentParser(
        prog="python -m tools.preflight", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--configfile", type=Path, default=REPO / "config.yaml")
    p.add_argument("--offline", action="store_true", help="check only what is local (also HF_HUB_OFFLINE=1)")
    p.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    p.add_argument("--max-read-mb", type=int, default=512, help="read first rows only from smaller downloads")
    p.add_argument("--json", type=Path, help="also write the rows as JSON")
    p.add_argument(
        "--timeout",
        type=float,
        default=request_timeout(),
        help="seconds each request waits for an answer (default: HF_HUB_ETAG_TIMEOUT, else 10)",
    )
    a = p.parse_args(argv)
    config = load_config(a.configfile)
    online = not (a.offline or hub_cache.offline())
    with hub_cache.timeouts(a.timeout):
        rows = preflight(config, online=online, results=a.results, max_read=a.max_read_mb * 10**6)
    where = f"online: {hub_cache.endpoint()}, timeout {a.timeout:g} s" if online else OFFLINE_NOTE
    print(f"preflight for {a.configfile} ({where})")
    print(table(rows))
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1, ensure_ascii=False))
    blocked = [r for r in rows if r.status in FAILED]
    if blocked:
        print(f"\n{len(blocked)} item(s) block the run: fix them, then rerun preflight.", file=sys.stderr)
        return 1
    return 0
