"""MT kind flores: FLORES-200 devtest pairs from a local copy of ``openlanguagedata/flores_plus`` (parquet files) or
that hub dataset (``root``), English→target, the rows ``evaluation.items`` selects (rule flores_mt; the program is
workflow_scripts/flores.py). A hub ``root`` is fetched into the Hugging Face cache by the local rule download_flores
(workflow_scripts/hub_cache.py), so that flores_mt runs offline. The language's FLORES code comes from its facts
(workflow_scripts/languages.py)."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.hub_cache import is_hub_id, repo_id_problem
from workflow_scripts.mt_sources import HubFiles, MtSpec, register

SPLIT = "devtest"


def record(lang: str, downloads: str) -> str:
    """What download_flores writes once the language's and English's files are in the cache (its output pattern)."""
    return f"{downloads}/flores/{lang}.json"


def check(config: dict, lang: str, mt: dict, workdir: Path) -> list[str]:
    """``root`` is given, and an existing folder or a valid dataset id."""
    if "root" not in mt:
        return [f"languages.{lang}.mt.root is required for mt kind 'flores'"]
    if not (workdir / mt["root"]).is_dir() and repo_id_problem(mt["root"]):
        return [
            f"languages.{lang}.mt.root: {mt['root']!r} is neither an existing folder nor a Hugging Face dataset "
            "id; give the folder of the flores_plus parquet files or a dataset id such as "
            "openlanguagedata/flores_plus"
        ]
    return []


def source(lang: str, mt: dict) -> HubFiles:
    """English's devtest file and the language's (``{split}/{code}.parquet``): gated on the hub."""
    from workflow_scripts import hub_cache
    from workflow_scripts.flores import flores_code
    from workflow_scripts.languages import FLORES_ENGLISH

    root = mt["root"]
    paths = hub_cache.flores_paths(SPLIT, [FLORES_ENGLISH, flores_code(lang)])
    key = f"languages.{lang}.mt.root"
    return HubFiles(root, tuple(paths), key, f"FLORES+ devtest ({root})", "a FLORES+ copy", SPLIT, ("id", "text"))


def download(lang: str, mt: dict, downloads: str) -> str | None:
    return record(lang, downloads) if is_hub_id(mt["root"]) else None


def hub_id(mt: dict) -> str | None:
    return mt.get("root") if is_hub_id(mt.get("root", "")) else None


def notes(config: dict, langs: list[str], workdir: Path) -> list[str]:
    n_mt = config.get("data", {}).get("n_mt", "?")
    return [
        f"languages.*.mt.root ({', '.join(langs)}): FLORES+ is checked by `python -m tools.preflight`, "
        f"fetched by download_all and read by flores_mt (n_mt = {n_mt} of its devtest sentences)"
    ]


register(
    MtSpec(
        name="flores",
        order=2,
        doc="FLORES-200 devtest (openlanguagedata/flores_plus layout)",
        label="FLORES-200",
        licence="cc-by-sa-4.0",
        rule="flores_mt",
        costs={"flores_mt": (4000, 30)},
        steps={"flores_mt": "data: FLORES"},
        selected="FLORES",
        check=check,
        source=source,
        download=download,
        hub_id=hub_id,
        notes=notes,
        keys={"root": {"type": "string", "description": "Hub id or local folder of the FLORES dataset."}},
    )
)
