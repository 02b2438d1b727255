"""Where the evaluation data come from: hub datasets mirrored once into ``results/downloads/hf/<name>/`` (hub layout),
local folders in the same layout, and the embedded default's offline stand-ins (paper 002 §6.4).

A dataset is named in ``evaluation.datasets`` by a hub id (fetched by the local rule ``download_dataset`` on a
machine with network, converted by ``harness.sources`` where the hub's own layout differs, then read offline) or by a
local folder; the hub layouts and their public descriptions: ``sources.LAYOUTS`` and docs/data.md. A local folder
mirrors the hub: a ``README.md`` whose YAML ``configs:`` block names each subset's split files, so that
``datasets.load_dataset(folder, subset)`` reads it exactly as it reads the hub id, and the same task definitions
serve both.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from workflow_scripts.harness.sources import (  # noqa: F401  (re-exported: the download step's API)
    LAYOUTS,
    Layout,
    LayoutError,
    convert_greeksum,
    download,
    layout_of,
)
from workflow_scripts.io import atomic_path, read_corpus, read_pairs, write_text
from workflow_scripts.languages import flores_subset, language_arg
from workflow_scripts.tasks import TASKS
from workflow_scripts.tasks.base import Source, Unavailable

DOWNLOADS = Path("results/downloads/hf")


# evaluation.datasets defaults: hub ids (layouts in LAYOUTS below, docs/data.md); greeksum has no hub copy (a local
# folder built by `python -m workflow_scripts.harness.datasets greeksum`, docs/data.md).
HUB_IDS = {
    "belebele": "facebook/belebele",
    "xlsum": "csebuetnlp/xlsum",
    "mlsum": "GEM/mlsum",
    "greeksum": None,
    "global_mmlu": "CohereLabs/Global-MMLU",
    "mmlu": "lighteval/mmlu",  # English retention (Table 9): LightEval's leaderboard MMLU, not Global-MMLU's en
}


def task_source(task: str, lang: str) -> Source:
    """The dataset, subset and splits of ``task`` for ``lang`` (its module's ``source``: paper 002 §6.4; Table 9 for
    en); ``Unavailable`` where the language has none."""
    spec = TASKS.get(task)
    if spec is None or spec.source is None:
        raise ValueError(f"no hub dataset for task {task!r}")
    return spec.source(lang)


def mirror_dir(name: str, downloads: Path = DOWNLOADS) -> Path:
    """The folder the rule download_dataset writes for dataset ``name``."""
    return downloads / name


def resolve(name: str, setting: str | None, downloads: Path = DOWNLOADS) -> Path:
    """The local folder to read dataset ``name`` from: the configured folder, or the hub id's mirror.

    A missing mirror is one error naming the dataset and the rule that fetches it.
    """
    if setting and Path(setting).is_dir():
        return Path(setting)
    if setting is None:
        raise FileNotFoundError(
            f"evaluation.datasets.{name}: no hub copy exists; give a local folder in the hub layout (docs/data.md: "
            "`python -m workflow_scripts.harness.datasets greeksum` builds GreekSUM's)"
        )
    mirror = mirror_dir(name, downloads)
    if not (mirror / "README.md").is_file():
        raise FileNotFoundError(
            f"dataset {name} ({setting}): no local mirror at {mirror}; the local rule download_dataset fetches it "
            f"(`snakemake {mirror}` or `snakemake download_all` where the network is), or set "
            f"evaluation.datasets.{name} to a local folder"
        )
    return mirror


def needed_sources(config: dict) -> dict[str, dict[str, set[str]]]:
    """The sources the configured tasks and languages read: name -> {"subsets", "splits"} (English for the
    retention checks; the mc proxy and unavailable pairs need none)."""
    out: dict[str, dict[str, set[str]]] = {}
    ev = config.get("evaluation", {})
    for task in ev.get("tasks", []):
        base, en = (task.removesuffix("_en"), True) if task.endswith("_en") else (task, False)
        if base not in TASKS or TASKS[base].source is None:
            continue
        if base == "mc" and ev.get("mc", {}).get("source", "belebele") != "belebele":
            continue
        for lang in ["en"] if en else config.get("languages", {}):
            try:
                src = task_source(base, lang)
            except (Unavailable, KeyError):
                continue
            need = out.setdefault(src.dataset, {"subsets": set(), "splits": set()})
            need["subsets"].add(src.subset)
            need["splits"].update({src.split, src.fewshot_split or src.split})
            if base == "sum" and ev.get("items") == "paper":
                need["splits"].add("validation")  # the paper's sum items come from test + validation
    return out


def items_tokenizer_needed(config: dict) -> str | None:
    """The hub id of ``evaluation.items_tokenizer`` when the paper's sum items need it (else None)."""
    ev = config.get("evaluation", {})
    setting = ev.get("items_tokenizer")
    if ev.get("items") != "paper" or not setting or Path(setting).is_dir():
        return None
    return setting if any(t in ("sum", "sum_en") for t in ev.get("tasks", [])) else None


def write_hub_layout(folder: Path, subsets: dict[str, dict[str, list[dict]]], pretty_name: str = "") -> Path:
    """A local dataset folder: ``{subset}/{split}.jsonl`` files and a README.md whose ``configs:`` block names them."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:"]
    for subset, splits in subsets.items():
        lines += [f"- config_name: {subset}", "  data_files:"]
        for split, rows in splits.items():
            path = Path(subset) / f"{split}.jsonl"
            (folder / subset).mkdir(exist_ok=True)
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            (folder / path).write_text(text, encoding="utf-8")
            lines += [f"  - split: {split}", f"    path: {path.as_posix()}"]
    lines += ["---", "", f"# {pretty_name or folder.name}", ""]
    write_text(folder / "README.md", "\n".join(lines))
    return folder


def pairs_dataset(pairs_file: Path, lang: str, folder: Path, n: int | None = None) -> Path:
    """The mt test pairs (English<TAB>target: l10n stand-in or FLORES devtest via ``corpus flores``) as a local
    dataset: subset = the FLORES code, split ``test``, fields ``source`` and ``reference``."""
    pairs = read_pairs(pairs_file, n)
    rows = [{"id": i, "source": en, "reference": tgt} for i, (en, tgt) in enumerate(pairs)]
    return write_hub_layout(folder, {flores_subset(lang): {"test": rows}}, f"mt pairs from {pairs_file}")


PROXY_QUESTION = "Which sentence is the translation of the passage?"
PROXY_LABEL = "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"


def proxy_items(pairs: list[tuple[str, str]], n: int, seed: int) -> list[dict]:
    """Belebele-style 4-way items: passage = an English sentence, answers = its translation and three distractors
    (translations of other held-out sentences), the correct position drawn at random; seeded."""
    if len(pairs) < 4:
        raise ValueError(f"the mc proxy needs at least 4 held-out pairs, got {len(pairs)}")
    rng = random.Random(seed)
    items = []
    for i, (en, tgt) in enumerate(pairs[:n]):
        others = [t for j, (_, t) in enumerate(pairs) if j != i and t != tgt]
        answers = rng.sample(others, 3)
        gold = rng.randrange(4)
        answers.insert(gold, tgt)
        item = {"link": "", "question_number": i, "flores_passage": en, "question": PROXY_QUESTION}
        item.update({f"mc_answer{k + 1}": a for k, a in enumerate(answers)})
        item.update(correct_answer_num=str(gold + 1), dialect="", ds="l10n-proxy")
        items.append(item)
    return items


def heldout_pairs(pairs_file: Path, heldout_file: Path) -> list[tuple[str, str]]:
    """The (English, target) pairs whose target side is in the held-out text, in held-out order (pairs are
    deduplicated on both sides by the split step, so each held-out sentence has one English source)."""
    english = {tgt: en for en, tgt in read_pairs(pairs_file)}
    held = read_corpus(heldout_file, what="held-out text")
    missing = [t for t in held if t not in english]
    if missing:
        raise ValueError(f"{heldout_file}: {len(missing)} held-out lines are not in {pairs_file}, e.g. {missing[0]!r}")
    return [(english[t], t) for t in held]


def write_mc_proxy(pairs_file: Path, heldout_file: Path, lang: str, out: Path, n: int, seed: int) -> Path:
    """The embedded default's mc proxy in Belebele's layout (subset = FLORES code, split ``test``), atomically."""
    items = proxy_items(heldout_pairs(pairs_file, heldout_file), n, seed)
    with atomic_path(out) as tmp:
        write_hub_layout(tmp, {flores_subset(lang): {"test": items}}, PROXY_LABEL)
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    from workflow_scripts.io import setup_logging

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    dl = sub.add_parser("download", help="fetch a hub dataset's subsets once (run where the network is)")
    dl.add_argument("--name", required=True, help="the evaluation.datasets key (its layout: LAYOUTS)")
    dl.add_argument("--hub-id", required=True, help="owner/name[@revision], or a local folder in the hub layout")
    dl.add_argument("--subsets", nargs="+", required=True)
    dl.add_argument("--splits", nargs="+", default=["test"])
    dl.add_argument("--out", required=True)
    gs = sub.add_parser("greeksum", help="GreekSUM's public release (after generate_GreekSUM.sh) -> a local mirror")
    gs.add_argument("--src", required=True, help="checkout of github.com/iakovosevdaimon/GreekSUM with its data built")
    gs.add_argument("--out", required=True)
    mc = sub.add_parser("mc-proxy", help="the embedded default's mc proxy from held-out l10n pairs")
    mc.add_argument("--pairs", required=True)
    mc.add_argument("--heldout", required=True)
    mc.add_argument("--lang", required=True, type=language_arg)
    mc.add_argument("--n", type=int, required=True)
    mc.add_argument("--seed", type=int, default=0)
    mc.add_argument("--out", required=True)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    if a.cmd == "download":
        download(a.name, a.hub_id, a.subsets, a.splits, Path(a.out))
    elif a.cmd == "greeksum":
        convert_greeksum(Path(a.src), Path(a.out))
    else:
        write_mc_proxy(Path(a.pairs), Path(a.heldout), a.lang, Path(a.out), a.n, a.seed)


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
