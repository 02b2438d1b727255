"""Preflight: everything a configuration will download, checked on the login node before any job is submitted.

    python -m tools.preflight --configfile configs/paper.yaml

For every model (and its tokenizer), corpus URL, FLORES+ file and evaluation dataset the configuration needs: whether
it is reachable with the user's credentials (a gated repository without access is named with the page where its
licence is accepted), what it weighs, whether the disk under ``results/`` and the Hugging Face cache has room for it,
and, for each dataset, whether the subset, split and columns the tasks read exist (on the first rows only). One
table, one row per item, each with its fix: ready; not checked; or why it failed (missing; no access: gated or
refused credentials; not found: a wrong id or URL; unreachable: no connection or no DNS; timed out; http error: any
other HTTP status). The exit status is 1 when any row failed; network errors are rows, never a traceback.

Offline (``HF_HUB_OFFLINE=1`` or ``--offline``) it checks what is local (packages, files, mirrors already downloaded,
the Hugging Face cache) and marks everything else "not checked", saying what was not checked. The hub is read with
``huggingface_hub`` (``HF_ENDPOINT`` and the user's token apply); each request waits ``--timeout`` seconds for an
answer, and a host that did not answer once is not contacted again. The next step, ``snakemake download_all``,
fetches what this lists (docs/data.md).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from workflow_scripts.hub_cache import (
    HTTP_ERROR,
    NO_ACCESS,
    NOT_FOUND,
    TIMED_OUT,
    UNREACHABLE,
    AccessError,
    network_failure,
    request_timeout,
)

REPO = Path(__file__).resolve().parents[1]
READY, MISSING, NOT_CHECKED = "ready", "missing", "not checked"
STATUSES = (READY, MISSING, NO_ACCESS, NOT_FOUND, UNREACHABLE, TIMED_OUT, HTTP_ERROR, NOT_CHECKED)
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


def hub_host(repo) -> str | None:
    from workflow_scripts import hub_cache

    return hub_cache.endpoint() if isinstance(repo, hub_cache.HubRepo) else None


def load_config(path: Path) -> dict:
    """The configuration as the workflow sees it: the file, checked against the schema, with its defaults."""
    import yaml
    from snakemake.utils import validate

    from workflow_scripts.config_checks import config_file_problems, schema_errors

    unreadable = config_file_problems(path) if Path(path).is_file() else [f"{path}: no such file"]
    if unreadable:
        raise SystemExit(f"{path}: invalid configuration:\n  - " + "\n  - ".join(unreadable))
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    schema = REPO / "schemas" / "config.schema.yaml"
    problems = schema_errors(config, schema)
    if problems:
        raise SystemExit(f"{path}: invalid configuration:\n  - " + "\n  - ".join(problems))
    validate(config, schema=str(schema), set_default=True)
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


def _cached(repo_id: str, filename: str, repo_type: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(repo_id, filename, revision=revision, repo_type=repo_type)
    return isinstance(hit, str)


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
            if _cached(repo_id, "config.json", "model", revision):
                return [Row(READY, item, "in the Hugging Face cache; " + OFFLINE_NOTE + ": not compared with the hub")]
            detail = OFFLINE_NOTE + ": access (gated licence), size, tokenizer files"
            return [Row(NOT_CHECKED, item, detail, OFFLINE_FIX)]
        repo = hub_cache.HubRepo(repo_id, "model", revision, key + ".path", key + ".revision")
        try:
            with contact(hub_host(repo), item):
                repo.check_access()
                files = repo.files()
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


# ---- corpora and FLORES+ ---------------------------------------------------------------------------------------------


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


def url_row(lang: str, url: str, online: bool, downloads: Path) -> Row:
    item = f"corpus {lang} ({url})"
    key, path_key = f"languages.{lang}.corpus.url", f"languages.{lang}.corpus.path"
    local = downloads / "cc100" / f"{lang}.txt.xz"
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


def flores_rows(config: dict, online: bool) -> list[Row]:
    """FLORES+ devtest files of the languages whose mt kind is flores: gated; ``{split}/{code}.parquet``."""
    from workflow_scripts import hub_cache
    from workflow_scripts.corpus import FLORES_ENGLISH, flores_code

    by_root: dict[str, list[str]] = {}
    for lang, lc in config.get("languages", {}).items():
        mt = lc.get("mt", {"kind": "l10n"})
        if mt.get("kind") == "flores":
            by_root.setdefault(mt["root"], []).append(lang)
    rows = []
    for root, langs in by_root.items():
        codes = [FLORES_ENGLISH] + [flores_code(lang) for lang in langs]
        paths = hub_cache.flores_paths("devtest", codes)
        item = f"FLORES+ devtest ({root})"
        key = f"languages.{langs[0]}.mt.root"
        local = Path(root).is_dir()
        if not local and not online:
            cached = all(_cached(root, p, "dataset", None) for p in paths)
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
            fix = f"fix {key} (a FLORES+ copy with devtest/{{code}}.parquet) or the language codes (docs/data.md)"
            rows.append(Row(MISSING, item, f"no {', '.join(missing)}", fix))
            continue
        if not {"id", "text"} <= set(cols):
            fix = f"fix {key}: a FLORES+ copy whose devtest files have id and text columns (docs/data.md)"
            rows.append(Row(MISSING, item, f"{paths[1]} has columns {cols}, not id and text", fix))
            continue
        size = sum(files[p] or 0 for p in paths)
        disk = "" if local else "cache"
        rows.append(Row(READY, item, f"{len(paths)} files ({', '.join(codes)}), {human(size)}", bytes=size, disk=disk))
    return rows


# ---- evaluation datasets ---------------------------------------------------------------------------------------------


def _mirror_row(name: str, folder: Path, subset: str, splits: list[str], columns: tuple[str, ...], how: str) -> Row:
    """A local folder (configured, or the download step's mirror) read offline as the tasks read it."""
    import datasets as hfds

    item = f"dataset {name} {subset}"
    seen = []
    try:
        for split in splits:
            ds = hfds.load_dataset(str(folder), subset, split=split, streaming=True)
            first = next(iter(ds), None)
            have = list(first) if first is not None else list(ds.features or [])
            missing = [c for c in columns if c not in have]
            if missing:
                fix = f"set evaluation.datasets.{name} to a folder whose rows have {', '.join(columns)}"
                if how == "mirror":
                    fix = "rerun `snakemake download_all` with this config (the mirror lacks the task's columns)"
                return Row(MISSING, item, f"{folder} {split}: no column {', '.join(missing)} (has {have})", fix)
            seen.append(split)
    except Exception as e:  # datasets raises many kinds for a wrong folder, subset or split
        fix = (
            f"convert it into the hub layout: python -m workflow_scripts.harness.datasets download --name {name} "
            f"--hub-id {folder} --subsets {subset} --splits {' '.join(splits)} --out results/downloads/hf/{name}"
        )
        if how == "mirror":  # made for other languages: its params changed, so the download step redoes it
            fix = "rerun `snakemake download_all` with this config (the mirror was made for other subsets)"
        return Row(MISSING, item, f"{folder}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", fix)
    return Row(READY, item, f"{how} {folder}: splits {', '.join(seen)}; columns on the first row")


def dataset_rows(config: dict, online: bool, downloads: Path, max_read: int) -> list[Row]:
    """Each (dataset, subset) the tasks read: subset, splits and columns on the first rows, and the bytes to fetch."""
    from workflow_scripts import hub_cache
    from workflow_scripts.harness import datasets as D
    from workflow_scripts.harness import sources as S

    rows = []
    settings = config.get("evaluation", {}).get("datasets", {})
    for name, need in sorted(D.needed_sources(config).items()):
        subsets, splits = sorted(need["subsets"]), sorted(need["splits"])
        setting = settings.get(name)  # the schema's defaults are the hub ids: what the workflow itself reads
        lay = D.layout_of(name)
        if not setting:
            hub_id = D.HUB_IDS.get(name)
            fix = f"set evaluation.datasets.{name} to {'a hub id (' + hub_id + ') or ' if hub_id else ''}a local folder"
            if name == "greeksum":
                fix = (
                    "build it from the public release: python -m workflow_scripts.harness.datasets greeksum "
                    "--src <GreekSUM checkout> --out <folder>, then set evaluation.datasets.greeksum (docs/data.md)"
                )
            rows.append(Row(MISSING, f"dataset {name} {', '.join(subsets)}", "no hub copy and no folder set", fix))
            continue
        mirror = D.mirror_dir(name, downloads / "hf")
        if Path(setting).is_dir() or (mirror / "README.md").is_file():
            folder, how = (Path(setting), "local folder") if Path(setting).is_dir() else (mirror, "mirror")
            rows += [_mirror_row(name, folder, s, splits, lay.columns, how) for s in subsets]
            continue
        if not online:
            rows += [
                Row(
                    NOT_CHECKED,
                    f"dataset {name} {s} ({setting})",
                    OFFLINE_NOTE + f": access, size, subset, splits {', '.join(splits)}, columns",
                    OFFLINE_FIX,
                )
                for s in subsets
            ]
            continue
        key = f"evaluation.datasets.{name}"
        host = None if Path(setting).is_dir() else hub_cache.endpoint()
        try:
            with contact(host, f"dataset {name}"):
                repo, files = S.open_source(name, setting, key)
        except AccessError as e:
            rows.append(failure_row(f"dataset {name} ({setting})", e))
            continue
        except D.LayoutError as e:
            rows.append(Row(MISSING, f"dataset {name} ({setting})", str(e), e.fix or f"fix {key}"))
            continue
        for s in subsets:
            item = f"dataset {name} {s} ({repo.where})"
            try:
                with contact(host, item):  # the sizes may need README.md, the reads fetch data files
                    sizes = {sp: S.split_bytes(name, repo, files, s, sp) for sp in splits}
                    read = [sp for sp, b in sizes.items() if b is not None and b <= max_read]
                    for sp in read:
                        S.read_split(name, repo, files, s, sp, limit=FIRST_ROWS)
                known = [b for b in sizes.values() if b is not None]
                size = sum(set(known)) if lay.kind == "xlsum_archives" else sum(known)
                detail = ", ".join(f"{sp} {human(b)}" for sp, b in sizes.items())
                if read:
                    cols = ", ".join(lay.columns) or "(any)"
                    detail += f"; columns {cols} on the first {FIRST_ROWS} rows of {', '.join(read)}"
                skipped = [sp for sp in splits if sp not in read]
                if skipped:
                    detail += (
                        f"; {', '.join(skipped)} not read (over --max-read-mb {max_read // 10**6}: the download checks)"
                    )
                rows.append(Row(READY, item, detail, bytes=size, disk="both"))
            except AccessError as e:
                rows.append(failure_row(item, e))
            except D.LayoutError as e:
                rows.append(Row(MISSING, item, str(e), e.fix or f"fix {key}"))
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
    _DOWN.clear()
    rows: list[Row] = []
    for name, spec in config.get("models", {}).items():
        rows += model_rows(name, spec, online, f"models.{name}")
        if isinstance(spec.get("chat"), dict):
            rows += model_rows(f"{name} chat", spec["chat"], online, f"models.{name}.chat")
    for lang, lc in config.get("languages", {}).items():
        corpus = lc["corpus"]
        if corpus["kind"] == "l10n":
            deb = Path(corpus["deb"])
            rows.append(
                Row(READY, f"corpus {lang} (l10n)", str(deb))
                if deb.is_file()
                else Row(MISSING, f"corpus {lang} (l10n)", f"{deb} does not exist", f"fix languages.{lang}.corpus.deb")
            )
        elif corpus.get("path"):
            ok = Path(corpus["path"]).is_file()
            fix = "" if ok else f"fix languages.{lang}.corpus.path (the file does not exist)"
            rows.append(Row(READY if ok else MISSING, f"corpus {lang}", corpus["path"], fix))
        else:
            rows.append(url_row(lang, corpus["url"], online, results / "downloads"))
    rows += flores_rows(config, online)
    rows += dataset_rows(config, online, results / "downloads", max_read)
    rows += items_tokenizer_rows(config, online, results / "downloads")
    rows += sum_asset_rows(config, online, results / "downloads")
    rows += disk_rows(rows, results, hf_cache_dir())
    return rows


def items_tokenizer_rows(config: dict, online: bool, downloads: Path) -> list[Row]:
    """The tokenizer that orders sum's articles by length (evaluation.items: paper; Llama-2's, gated)."""
    from workflow_scripts import hub_cache
    from workflow_scripts.harness.datasets import items_tokenizer_needed

    repo_id = items_tokenizer_needed(config)
    if repo_id is None:
        return []
    item = f"items tokenizer ({repo_id})"
    if (downloads / "items_tokenizer").is_dir():  # written atomically by download_items_tokenizer
        return [Row(READY, item, f"downloaded to {downloads / 'items_tokenizer'}")]
    if not online:
        return [Row(NOT_CHECKED, item, OFFLINE_NOTE + ": access (gated licence), tokenizer files", OFFLINE_FIX)]
    repo = hub_cache.HubRepo(repo_id, "model", key="evaluation.items_tokenizer")
    try:
        with contact(hub_host(repo), item):
            repo.check_access()
            files = repo.files()
    except AccessError as e:
        return [failure_row(item, e)]
    tok = [f for f in hub_cache.TOKENIZER_FILES if f in files]
    if not tok:
        return [Row(MISSING, item, "no tokenizer.json / tokenizer.model", "fix evaluation.items_tokenizer")]
    return [Row(READY, item, ", ".join(tok))]


def sum_asset_rows(config: dict, online: bool, downloads: Path) -> list[Row]:
    """sum's metric assets where they are hub ids: mT5's spiece.model (ROUGE-L on mT5 pieces, or the reference
    code's ROUGE-L) and BLEURT."""
    from workflow_scripts import hub_cache
    from workflow_scripts.sum_assets import BLEURT_FILES, reads_mt5_spiece, repo_slug

    ev = config.get("evaluation", {})
    settings = ev.get("sum", {})
    if "sum" not in ev.get("tasks", []):
        return []
    wanted = []
    if reads_mt5_spiece(settings) and settings.get("mt5_spiece"):
        value = settings["mt5_spiece"]
        local = downloads / "mt5" / repo_slug(value) / "spiece.model"
        wanted.append(("mT5 spiece.model", "evaluation.sum.mt5_spiece", value, local, ["spiece.model"]))
    if settings.get("bleurt"):
        value = settings["bleurt"]
        local = downloads / "bleurt" / repo_slug(value)
        wanted.append(("BLEURT checkpoint", "evaluation.sum.bleurt", value, local, ["config.json"]))
    rows = []
    for what, key, value, local, needed in wanted:
        item = f"{what} ({value})"
        if Path(value).exists():
            rows.append(Row(READY, item, f"local {value}"))
        elif local.exists():
            rows.append(Row(READY, item, f"downloaded to {local}"))
        elif not online:
            rows.append(Row(NOT_CHECKED, item, OFFLINE_NOTE + ": access, files", OFFLINE_FIX))
        else:
            repo_id, revision = hub_cache.split_id(value)
            repo = hub_cache.HubRepo(repo_id, "model", revision, key)
            try:
                with contact(hub_host(repo), item):
                    repo.check_access()
                    files = repo.files()
            except AccessError as e:
                rows.append(failure_row(item, e))
                continue
            lacking = [f for f in needed if f not in files]
            taken = needed if what.startswith("mT5") else [f for f in BLEURT_FILES if f in files]
            size = sum(files.get(f) or 0 for f in taken)
            rows.append(
                Row(MISSING, item, f"no {', '.join(lacking)}", f"fix {key}")
                if lacking
                else Row(READY, item, ", ".join(needed) + f", {human(size)}", bytes=size, disk="results")
            )
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

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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


if __name__ == "__main__":
    sys.exit(main())
