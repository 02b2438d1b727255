"""Preflight rows of what the evaluation downloads: the datasets the tasks read (subset, splits and columns on the
first rows), the tokenizer that orders sum's items, and sum's metric assets."""

from __future__ import annotations

from pathlib import Path

from tools.preflight.rows import (
    FIRST_ROWS,
    MISSING,
    NOT_CHECKED,
    OFFLINE_FIX,
    OFFLINE_NOTE,
    READY,
    AccessError,
    Row,
    contact,
    failure_row,
    hub_files,
    human,
)


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
        files = hub_files(repo, item)
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
                files = hub_files(repo, item)
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
