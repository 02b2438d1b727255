"""The evaluation sources as the hub stores them, read without dataset scripts and written as offline mirrors.

``LAYOUTS`` says how each source is stored (each fact with its public source; docs/data.md), ``read_split`` reads a
subset/split from a hub repository or a local folder in the same layout (``workflow_scripts.hub_cache``) with the
task's column names, ``download`` writes the mirror ``{subset}/{split}.parquet`` + README ``configs:`` that
``datasets.load_dataset(folder, subset, split=...)`` reads offline, and ``convert_greeksum`` builds GreekSUM's from
its public release.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.io import atomic_path, read_corpus, write_text

# ---- hub layouts: how each source is stored, and what its rows become in the mirror -------------------------------

BELEBELE_COLUMNS = (
    "flores_passage",
    "question",
    "mc_answer1",
    "mc_answer2",
    "mc_answer3",
    "mc_answer4",
    "correct_answer_num",
)
GLOBAL_MMLU_COLUMNS = ("question", "option_a", "option_b", "option_c", "option_d", "answer", "subject")
SUM_COLUMNS = ("id", "summary", "text")
PARQUET_BRANCH = "refs/convert/parquet"


@dataclass(frozen=True)
class Layout:
    """How one source is stored on the hub and what the mirror keeps of it.

    ``kind``: ``configs`` (a README.md ``configs:`` block naming data files, or, where the repository has none,
    the hub's Parquet conversion branch in either of its layouts, ``BRANCH_LAYOUTS``), ``xlsum_archives`` (per-language
    tar.bz2 of jsonl files) or ``local`` (no hub copy). ``rename``: source column -> task column, applied when the
    mirror is written. ``columns``: what the task reads (checked on the first rows by preflight, on every row file
    by the download). ``split_names``: our split -> the split's name in the source files.
    """

    kind: str = "configs"
    revision: str | None = None
    rename: tuple[tuple[str, str], ...] = ()
    columns: tuple[str, ...] = ()
    split_names: tuple[tuple[str, str], ...] = ()

    def source_split(self, split: str) -> str:
        return dict(self.split_names).get(split, split)


LAYOUTS: dict[str, Layout] = {
    # README configs `- config_name: tha_Thai / data_files: [{split: test, path: data/tha_Thai.jsonl}]`
    # (huggingface.co/datasets/facebook/belebele/commit/72d7d6891963b00ef52bb94cf7256000ef41ef0b)
    "belebele": Layout(columns=BELEBELE_COLUMNS),
    # `data/{language}_XLSum_v2.0.tar.bz2` holding `{language}_{train,val,test}.jsonl`; the loading script xlsum.py
    # (_URL, _split_generators, _generate_examples) keeps id, url, title, summary, text and calls val "validation"
    # (csebuetnlp/xlsum xlsum.py, as mirrored in ExpressAI DataLab's datasets/xlsum/xlsum.py)
    "xlsum": Layout("xlsum_archives", columns=(*SUM_COLUMNS, "url", "title"), split_names=(("validation", "val"),)),
    # GEM/mlsum main holds only mlsum.py (huggingface.co/datasets/GEM/mlsum/tree/main); its viewer's Parquet branch
    # has subsets de, es with splits train, validation, test, challenge_* (huggingface.co/datasets/GEM/mlsum/viewer),
    # fields gem_id, gem_parent_id, text, topic, url, title, date, target, references
    # (huggingface.co/datasets/GEM/mlsum/commit/7fedf63efd2f0a5b07367191b171e7a454e52b7a, dataset_infos.json)
    "mlsum": Layout(revision=PARQUET_BRANCH, rename=(("gem_id", "id"), ("target", "summary")), columns=SUM_COLUMNS),
    # no public hub copy: `greeksum` below converts the public release (iakovosevdaimon/GreekSUM)
    "greeksum": Layout("local", columns=SUM_COLUMNS),
    # README configs `path: ar/test-*`, `path: ar/dev-*`; files `{lang}/{split}-00000-of-00001.parquet`; fields
    # sample_id, subject, subject_category, question, option_a..d, answer, ... (huggingface.co/datasets/
    # CohereForAI/Global-MMLU README.md dataset_info and tree/main/ko; the repository now answers as CohereLabs/)
    "global_mmlu": Layout(columns=GLOBAL_MMLU_COLUMNS),
    # the original English MMLU as LightEval's leaderboard tasks read it (subset `all`, fields question, subject,
    # choices, answer; the layout of cais/mmlu's README configs, which lighteval/mmlu mirrors)
    "mmlu": Layout(columns=("question", "subject", "choices", "answer")),
}


def layout_of(name: str) -> Layout:
    """The layout of source ``name``; a source without an entry (any other HUB_IDS id) is read generically."""
    return LAYOUTS.get(name, Layout())


class LayoutError(Exception):
    """A source whose files do not hold the asked subset, split or columns (the message names what exists)."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.fix = fix


def _front_matter(readme: Path) -> dict:
    import yaml

    text = readme.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    return (yaml.safe_load(text[3:end]) or {}) if end > 0 else {}


def readme_configs(readme: Path) -> dict[str, dict[str, list[str]]]:
    """The ``configs:`` block of a dataset card: config name -> split -> file patterns (the hub's own syntax:
    data_files as a string, a list of strings (split train), or a list of {split, path})."""
    out: dict[str, dict[str, list[str]]] = {}
    for c in _front_matter(readme).get("configs") or []:
        files = c.get("data_files")
        splits: dict[str, list[str]] = {}
        if isinstance(files, str):
            splits["train"] = [files]
        elif isinstance(files, list):
            for f in files:
                if isinstance(f, str):
                    splits.setdefault("train", []).append(f)
                else:
                    paths = f["path"] if isinstance(f["path"], list) else [f["path"]]
                    splits.setdefault(f["split"], []).extend(paths)
        elif isinstance(files, dict):
            splits = {k: v if isinstance(v, list) else [v] for k, v in files.items()}
        out[c.get("config_name", "default")] = splits
    return out


# The hub's Parquet conversion names a config's files ``{config}/{split}/NNNN.parquet`` (a split cut at 5 GB is
# ``partial-{split}``; seen on the branch of e.g. huggingface.co/datasets/SciPhi/AgentSearch-V1), and it has also
# published ``{config}/{dataset}-{split}.parquet`` / ``{config}/{dataset}-{split}-NNNNN-of-NNNNN.parquet``, the
# names ``datasets`` gives a builder's files (datasets/naming.py, filenames_for_dataset_split). A split name matches
# ``\w+(\.\w+)*`` (datasets/naming.py, _split_re), so it holds no hyphen: it is the last part before the shard numbers.
_SHARDED = re.compile(r"(?P<prefix>.+)-(?P<split>[A-Za-z_]\w*(?:\.\w+)*)-\d{5}-of-\d{5}\.parquet")
_SINGLE = re.compile(r"(?P<prefix>.+)-(?P<split>[A-Za-z_]\w*(?:\.\w+)*)\.parquet")
BRANCH_LAYOUTS = "{config}/{split}/NNNN.parquet or {config}/{dataset}-{split}[-NNNNN-of-NNNNN].parquet"


def _parquet_branch(files: dict[str, int | None]) -> dict[str, dict[str, list[str]]]:
    """Configs and splits of the hub's Parquet conversion in either of its layouts (``BRANCH_LAYOUTS``): config ->
    split -> files. A split with files in both is read from the folder layout alone (both would double its rows)."""
    folders: dict[str, dict[str, list[str]]] = {}
    flat: dict[str, dict[str, list[str]]] = {}
    for f in files:
        parts = f.split("/")
        if len(parts) == 3 and parts[2].endswith(".parquet"):
            folders.setdefault(parts[0], {}).setdefault(parts[1], []).append(f)
        elif len(parts) == 2:
            m = _SHARDED.fullmatch(parts[1]) or _SINGLE.fullmatch(parts[1])
            if m:
                flat.setdefault(parts[0], {}).setdefault(m["split"], []).append(f)
    out = {c: dict(splits) for c, splits in flat.items()}
    for config, splits in folders.items():
        out.setdefault(config, {}).update(splits)
    return out


def _pick(found: dict[str, list[str]], split: str, what: str) -> list[str]:
    if split in found:
        return sorted(found[split])
    if f"partial-{split}" in found:  # the converter's first 5 GB of a larger split
        return sorted(found[f"partial-{split}"])
    raise LayoutError(f"{what}: no split {split!r} (has: {', '.join(sorted(found)) or 'none'})")


def data_files(name: str, repo, files: dict[str, int | None], subset: str, split: str) -> list[str]:
    """The repository files that hold ``subset``/``split`` of source ``name`` (paths inside ``repo``)."""
    import fnmatch

    lay = layout_of(name)
    what = f"{name} ({repo.where}) subset {subset!r}"
    if lay.kind == "xlsum_archives":
        path = f"data/{subset}_XLSum_v2.0.tar.bz2"
        if path not in files:
            have = sorted(
                f.removeprefix("data/").removesuffix("_XLSum_v2.0.tar.bz2") for f in files if f.endswith(".tar.bz2")
            )
            raise LayoutError(
                f"{what}: no {path} (languages: {', '.join(have) or 'none'})", "check tasks/sum.py XLSUM_SUBSETS"
            )
        return [path]
    configs = readme_configs(repo.fetch("README.md")) if "README.md" in files else {}
    if configs:
        if subset not in configs:
            raise LayoutError(f"{what}: no such subset (has: {', '.join(sorted(configs))})", "check task_source")
        split_files = {
            s: sorted({f for p in pats for f in files if fnmatch.fnmatchcase(f, p)})
            for s, pats in configs[subset].items()
        }
        found = _pick(split_files, split, what)
        if not found:
            raise LayoutError(f"{what}: split {split!r} names files that the repository does not have")
        return found
    branch = _parquet_branch(files)
    if branch:
        if subset not in branch:
            raise LayoutError(f"{what}: no such subset (has: {', '.join(sorted(branch))})", "check task_source")
        return _pick(branch[subset], split, what)
    scripts = [f for f in files if f.endswith(".py") and "/" not in f]
    if scripts:
        raise LayoutError(
            f"{name} ({repo.where}) is a loading-script dataset ({scripts[0]}), which datasets 4+ no longer runs",
            f"name its Parquet conversion branch: {repo.where.split('@')[0]}@{PARQUET_BRANCH}",
        )
    shown = sorted(files)[:20]
    more = f" and {len(files) - len(shown)} more" if len(files) > len(shown) else ""
    raise LayoutError(
        f"{name} ({repo.where}): no README.md configs block and no Parquet-branch layout ({BRANCH_LAYOUTS}); "
        f"files: {', '.join(shown) or 'none'}{more}",
        "name a revision (or a local folder) whose files follow one of these layouts (docs/data.md)",
    )


def _read_table(path: Path, limit: int | None = None):
    """Rows of one data file (parquet, jsonl/json, csv) as a pyarrow table; ``limit``: only the first rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    suffixes = "".join(path.suffixes[-2:])
    if path.suffix == ".parquet":
        if limit is None:
            return pq.read_table(path)
        batch = next(pq.ParquetFile(path).iter_batches(batch_size=limit), None)
        return pa.Table.from_batches([batch]) if batch is not None else pq.read_schema(path).empty_table()
    if path.suffix in (".jsonl", ".json") or suffixes.endswith(".jsonl"):
        rows = []
        with open(path, encoding="utf-8") as f:
            head = f.read(1)
            f.seek(0)
            if head == "[":  # a JSON array file
                rows = json.load(f)[:limit] if limit else json.load(f)
            else:
                for line in f:
                    if line.strip():
                        rows.append(json.loads(line))
                        if limit and len(rows) >= limit:
                            break
        return pa.Table.from_pylist(rows)
    if path.suffix == ".csv":
        import pyarrow.csv as pcsv

        table = pcsv.read_csv(path)
        return table.slice(0, limit) if limit else table
    raise LayoutError(f"{path}: unsupported data file type (parquet, jsonl, json, csv)")


def _xlsum_rows(archive: Path, subset: str, split: str, limit: int | None = None) -> list[dict]:
    """One split of an XL-Sum archive, with the fields the loading script kept (id, url, title, summary, text)."""
    import tarfile

    member_name = f"{subset}_{split}.jsonl"
    with tarfile.open(archive, "r:bz2") as tar:
        # members are named `./{language}_{split}.jsonl` in the released archives (e.g. `./arabic_test.jsonl`)
        member = next((m for m in tar.getmembers() if Path(m.name).name == member_name), None)
        if member is None:
            names = [Path(m.name).name for m in tar.getmembers() if m.isfile()]
            raise LayoutError(f"{archive.name}: no {member_name} (has: {', '.join(sorted(names))})")
        rows = []
        for line in tar.extractfile(member):
            if line.strip():
                d = json.loads(line)
                rows.append({k: d[k] for k in ("id", "url", "title", "summary", "text")})
                if limit and len(rows) >= limit:
                    break
        return rows


def read_split(name: str, repo, files: dict[str, int | None], subset: str, split: str, limit: int | None = None):
    """``subset``/``split`` of source ``name`` as a pyarrow table with the task's column names (renames applied,
    an ``id`` made from the position where a summarization source has none); ``limit``: the first rows only."""
    import pyarrow as pa

    lay = layout_of(name)
    source_split = lay.source_split(split)
    paths = data_files(name, repo, files, subset, source_split)
    if lay.kind == "xlsum_archives":
        table = pa.Table.from_pylist(_xlsum_rows(repo.fetch(paths[0]), subset, source_split, limit))
    else:
        tables = []
        for p in paths:
            tables.append(_read_table(repo.fetch(p), None if limit is None else limit - sum(len(t) for t in tables)))
            if limit is not None and sum(len(t) for t in tables) >= limit:
                break
        table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    renames = dict(lay.rename)
    table = table.rename_columns([renames.get(c, c) for c in table.column_names])
    if "id" in lay.columns and "id" not in table.column_names:
        table = table.append_column("id", pa.array([f"{subset}-{split}-{i}" for i in range(len(table))]))
    if {"summary", "references"} <= set(table.column_names):
        # GEM's convention: one target in train, a list of references in validation and test; where a row's target
        # is empty its first reference is the summary (gem-benchmark.com data cards)
        refs, sums = table.column("references").to_pylist(), table.column("summary").to_pylist()
        if any(not s for s in sums):
            filled = [s or (r[0] if r else s) for s, r in zip(sums, refs, strict=True)]
            table = table.set_column(table.column_names.index("summary"), "summary", pa.array(filled))
    missing = [c for c in lay.columns if c not in table.column_names]
    if missing:
        raise LayoutError(
            f"{name} ({repo.where}) {subset}/{split}: no column {', '.join(missing)} (has: "
            f"{', '.join(table.column_names)})"
        )
    return table


def split_bytes(name: str, repo, files: dict[str, int | None], subset: str, split: str) -> int | None:
    """Bytes to fetch for one subset/split (None where the listing has no sizes)."""
    paths = data_files(name, repo, files, subset, layout_of(name).source_split(split))
    sizes = [files.get(p) for p in paths]
    return None if any(s is None for s in sizes) else sum(sizes)


def write_parquet_layout(folder: Path, tables: dict[str, dict[str, object]], pretty_name: str, source: dict) -> Path:
    """A local dataset folder in the hub layout: ``{subset}/{split}.parquet``, a README.md whose ``configs:`` block
    names them (what ``datasets.load_dataset(folder, subset, split=...)`` reads offline), and ``source.json``."""
    import pyarrow.parquet as pq

    from workflow_scripts.io import write_json

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:"]
    for subset, splits in tables.items():
        lines += [f"- config_name: {subset}", "  data_files:"]
        (folder / subset).mkdir(exist_ok=True)
        for split, table in splits.items():
            path = Path(subset) / f"{split}.parquet"
            pq.write_table(table, folder / path)
            lines += [f"  - split: {split}", f"    path: {path.as_posix()}"]
    lines += ["---", "", f"# {pretty_name}", ""]
    write_text(folder / "README.md", "\n".join(lines))
    rows = {s: {k: t.num_rows for k, t in sp.items()} for s, sp in tables.items()}
    write_json(folder / "source.json", {**source, "rows": rows})
    return folder


def open_source(name: str, location: str, key: str | None = None):
    """The repository of source ``name`` at ``location`` (hub id[@revision] or local folder) and its file list.

    A hub id without a revision is read at the layout's revision (the Parquet branch for MLSUM); a loading-script
    repository without one is read at its Parquet conversion branch. ``key``: the config key that sets
    ``location`` (named by errors).
    """
    from workflow_scripts.hub_cache import open_repo

    repo = open_repo(location, "dataset", layout_of(name).revision, key)
    repo.check_access()
    files = repo.files()
    explicit = "@" in location or Path(location).is_dir()
    has_data = "README.md" in files or _parquet_branch(files) or layout_of(name).kind != "configs"
    if not explicit and not has_data and any(f.endswith(".py") and "/" not in f for f in files):
        repo = open_repo(f"{location}@{PARQUET_BRANCH}", "dataset", key=key)
        files = repo.files()
    return repo, files


def download(name: str, location: str, subsets: list[str], splits: list[str], out: Path) -> Path:
    """Fetch the wanted subsets and splits of source ``name`` once and write them to ``out`` in the hub layout with
    the task's fields (converted where the hub's own layout differs), atomically: a killed fetch leaves none."""
    if layout_of(name).kind == "local":
        raise LayoutError(f"{name} has no hub copy", "build it with its converter (docs/data.md)")
    repo, files = open_source(name, location)
    tables = {s: {sp: read_split(name, repo, files, s, sp) for sp in splits} for s in subsets}
    with atomic_path(out) as tmp:
        write_parquet_layout(tmp, tables, f"{name} from {repo.where}", {"name": name, "location": repo.where})
    return out


# ---- GreekSUM: the public release is code that rebuilds the data (iakovosevdaimon/GreekSUM) ------------------------

GREEKSUM_SPLITS = {"train": "train", "valid": "validation", "test": "test"}


def greeksum_rows(src: Path) -> dict[str, list[dict]]:
    """GreekSUM Abstract rows per split from a checkout of github.com/iakovosevdaimon/GreekSUM after its
    ``generate_GreekSUM.sh`` ran.

    Preferred: ``data/sum_data/parsed/<article>.json`` (keys article, abstract, title, url, time, label; written by
    process_summarization.py) listed per split in ``splits_abstract_as_summary/{train,valid,test}.txt`` (written by
    split_summarization_data.py): id = file name without ``.json``, summary = abstract, text = article, as the
    reference's own conversion did (gucci-j/GreekSUM create_hf_datasets.py). Otherwise the line-aligned files of
    create_dataset.py, ``abstract/summarization_data_abstract/{split}-article.txt`` and ``{split}-abstract.txt``.
    """
    splits_dir, parsed = src / "splits_abstract_as_summary", src / "data" / "sum_data" / "parsed"
    out: dict[str, list[dict]] = {}
    if splits_dir.is_dir() and parsed.is_dir():
        for theirs, ours in GREEKSUM_SPLITS.items():
            listing = splits_dir / f"{theirs}.txt"
            if not listing.is_file():
                continue
            rows = []
            for fname in read_corpus(listing, what="GreekSUM split list"):
                doc = json.loads((parsed / fname).read_text(encoding="utf-8"))
                rows.append(
                    {
                        "id": fname.removesuffix(".json"),
                        "url": doc.get("url", ""),
                        "title": doc.get("title", ""),
                        "summary": doc["abstract"],
                        "text": doc["article"],
                    }
                )
            out[ours] = rows
        return out
    lines_dir = src / "abstract" / "summarization_data_abstract"
    for theirs, ours in GREEKSUM_SPLITS.items():
        art, abs_ = lines_dir / f"{theirs}-article.txt", lines_dir / f"{theirs}-abstract.txt"
        if not (art.is_file() and abs_.is_file()):
            continue
        texts = art.read_text(encoding="utf-8").splitlines()
        sums = abs_.read_text(encoding="utf-8").splitlines()
        if len(texts) != len(sums):
            raise LayoutError(f"{art} and {abs_} differ in length ({len(texts)} vs {len(sums)} lines)")
        pairs = enumerate(zip(texts, sums, strict=True))
        out[ours] = [{"id": f"{ours}-{i}", "summary": s, "text": t} for i, (t, s) in pairs]
    if not out:
        raise LayoutError(
            f"{src}: neither splits_abstract_as_summary/*.txt with data/sum_data/parsed/ nor "
            "abstract/summarization_data_abstract/{split}-{article,abstract}.txt",
            "run the release's generate_GreekSUM.sh first (docs/data.md)",
        )
    return out


def convert_greeksum(src: Path, out: Path) -> Path:
    """The GreekSUM mirror (subset ``el``; splits test, train, validation where built) at ``out``, atomically."""
    import pyarrow as pa

    rows = greeksum_rows(src)
    for need in ("test", "train"):
        if need not in rows:
            raise LayoutError(f"{src}: GreekSUM has no {need} split here (task_source reads test, few-shot train)")
    tables = {"el": {split: pa.Table.from_pylist(r) for split, r in rows.items()}}
    with atomic_path(out) as tmp:
        write_parquet_layout(tmp, tables, "GreekSUM Abstract", {"name": "greeksum", "location": str(src)})
    return out
