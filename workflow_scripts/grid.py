"""The study's grid: methods expanded from the config, their path slugs, and checks of what is implemented.

Imported by rules/common.smk (to build targets and wildcard constraints) and by the tests. Pure Python, no torch.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METHOD_FIELDS = ("init", "vocab", "k", "procedure", "objective", "seq_len", "posthoc")

# What the code implements today; the schema already admits every value the paper uses.
IMPLEMENTED = {
    "init": {"none", "Random", "Mean", "Merge", "Align", "FOCUS", "EEVE"},
    "vocab": {"expand"},
    "procedure": {"none", "full", "LoRA", "2-stage", "2x2LS", "EEVE"},
    "objective": {"clm", "mtp"},
    "posthoc": {"none"},
    "tasks": {"mt", "ppl", "speed"},
}

BUILTIN_DEFAULTS = {
    "init": "none",
    "vocab": "expand",
    "k": 100,
    "procedure": "none",
    "objective": "clm",
    "seq_len": 2048,
    "posthoc": "none",
}


class ConfigError(ValueError):
    """A configuration problem, reported before any job runs."""


@dataclass(frozen=True)
class Method:
    """One grid method: the settings the paper varies for a (model, language) pair."""

    init: str
    vocab: str
    k: int | None
    procedure: str
    objective: str | None
    seq_len: int | None
    posthoc: str
    hparams: tuple = field(default=(), compare=False)

    @property
    def expands(self) -> bool:
        return self.init != "none"

    @property
    def trains(self) -> bool:
        return self.procedure != "none"

    @property
    def label(self) -> str:
        """The paper's row name: Source, CPT-only, or the initialization method."""
        if not self.expands:
            return "CPT-only" if self.trains else "Source"
        return self.init

    @property
    def slug(self) -> str:
        """Path component naming the method with all its settings, e.g. ``Mean.k100.2x2LS.clm.L512``."""
        if not self.expands and not self.trains:
            return "Source"
        parts = [self.label]
        if self.expands:
            parts.append(f"k{self.k}" if self.vocab == "expand" else "replace")
        if self.trains:
            parts += [self.procedure, str(self.objective), f"L{self.seq_len}"]
        else:
            parts.append("notrain")
        if self.posthoc != "none":
            parts.append(self.posthoc)
        return ".".join(parts)

    def cell(self, model: str, language: str, aux_vocab_size: int) -> dict[str, Any]:
        """The cell dictionary that result files carry (see workflow_scripts/tables.py)."""
        return {
            "model": model,
            "language": language,
            "method": self.slug,
            "label": self.label,
            "init": self.init if self.expands else None,
            "procedure": self.procedure if self.trains else None,
            "objective": self.objective if self.trains else None,
            "seq_len": self.seq_len if self.trains else None,
            "k": self.k if self.expands else None,
            "aux_vocab_size": aux_vocab_size if self.expands else None,
        }


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def expand_methods(entries: list[dict], defaults: dict | None = None) -> list[Method]:
    """Expand config ``methods`` entries (list values → cartesian product) into unique methods, in config order."""
    base = {**BUILTIN_DEFAULTS, **{k: v for k, v in (defaults or {}).items() if k != "hparams"}}
    base_hparams = (defaults or {}).get("hparams", {})
    out: dict[str, Method] = {}
    for i, entry in enumerate(entries):
        merged = {**base, **{k: v for k, v in entry.items() if k in METHOD_FIELDS}}
        hparams = {**base_hparams, **entry.get("hparams", {})}
        keys = list(METHOD_FIELDS)
        for combo in itertools.product(*(_as_list(merged[k]) for k in keys)):
            s = dict(zip(keys, combo, strict=True))
            expands, trains = s["init"] != "none", s["procedure"] != "none"
            m = Method(
                init=s["init"],
                vocab=s["vocab"],
                k=s["k"] if expands else None,
                procedure=s["procedure"],
                objective=s["objective"] if trains else None,
                seq_len=s["seq_len"] if trains else None,
                posthoc=s["posthoc"],
                hparams=tuple(sorted(hparams.items())) if trains else (),
            )
            if m.slug in out and out[m.slug].hparams != m.hparams:
                raise ConfigError(f"methods[{i}]: method {m.slug} appears twice with different hparams")
            out.setdefault(m.slug, m)
    return list(out.values())


def expand_grid(config: dict) -> list[tuple[str, str, Method]]:
    """Every (model, language, method) cell of the grid, in config order.

    A ``methods`` entry applies to every configured model and language unless it names ``models`` / ``languages``
    (a table of the paper covers only some of them, e.g. Table 5: Llama-2 on six languages).
    """
    defaults = config.get("method_defaults")
    by_slug = {m.slug: m for m in expand_methods(config["methods"], defaults)}  # also checks hparams conflicts
    cells: dict[tuple[str, str, str], tuple[str, str, Method]] = {}
    for i, entry in enumerate(config["methods"]):
        scope = {}
        for key, known in (("models", config["models"]), ("languages", config["languages"])):
            names = entry.get(key, list(known))
            unknown = [n for n in names if n not in known]
            if unknown:
                raise ConfigError(f"methods[{i}].{key}: {unknown} not configured under {key} (have {sorted(known)})")
            scope[key] = names
        for m in expand_methods([entry], defaults):
            for model in scope["models"]:
                for lang in scope["languages"]:
                    cells.setdefault((model, lang, m.slug), (model, lang, by_slug[m.slug]))
    return list(cells.values())


def _relevant(error):
    """For a oneOf failure, the error of the alternative whose type matched (the enum, not 'not an array')."""
    same_type = [e for e in error.context or [] if e.validator != "type"]
    return _relevant(same_type[0]) if len(same_type) == 1 else error


def schema_errors(config: dict, schema_path: str | Path) -> list[str]:
    """Validate ``config`` against the YAML JSON-schema; one short line per problem, naming the key path."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    lines = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        error = _relevant(error)
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        if "propertyNames" in error.schema_path:
            path = f"{path}.{error.instance}" if path else str(error.instance)
        lines.append(f"{path or '<top level>'}: {error.message}")
    return lines


def check_config(config: dict, workdir: str | Path = ".") -> list[Method]:
    """Semantic checks beyond the JSON schema; raise ConfigError naming the key. Returns the expanded methods."""
    workdir = Path(workdir)
    errors: list[str] = []
    for name, spec in config["models"].items():
        kind = spec["kind"]
        need = {
            "hub": ["path"],
            "local": ["path"],
            "gguf_package": ["package", "file"],
            "random_llama": ["package", "file"],
        }
        for key in need[kind]:
            if key not in spec:
                errors.append(f"models.{name}.{key} is required for kind {kind!r}")
        if kind == "local" and "path" in spec and not (workdir / spec["path"]).is_dir():
            errors.append(f"models.{name}.path: local model folder {spec['path']!r} does not exist")
    for lang, spec in config["languages"].items():
        corpus = spec["corpus"]
        if corpus["kind"] == "l10n":
            if "deb" not in corpus:
                errors.append(f"languages.{lang}.corpus.deb is required for corpus kind 'l10n'")
            elif not (workdir / corpus["deb"]).is_file():
                errors.append(f"languages.{lang}.corpus.deb: file {corpus['deb']!r} does not exist")
        elif ("path" in corpus) == ("url" in corpus):
            errors.append(f"languages.{lang}.corpus: give exactly one of path and url for corpus kind 'cc100'")
        elif "path" in corpus and not (workdir / corpus["path"]).is_file():
            errors.append(f"languages.{lang}.corpus.path: file {corpus['path']!r} does not exist")
        mt = spec.get("mt", {"kind": "l10n"})
        if mt["kind"] == "l10n" and corpus["kind"] != "l10n":
            errors.append(
                f"languages.{lang}.mt.kind 'l10n' needs corpus kind 'l10n' (the MT pairs come from the same package)"
            )
        if mt["kind"] == "flores" and "root" not in mt:
            errors.append(f"languages.{lang}.mt.root is required for mt kind 'flores'")
    for task in config["evaluation"]["tasks"]:
        if task not in IMPLEMENTED["tasks"]:
            errors.append(
                f"evaluation.tasks: task {task!r} is not implemented yet (implemented: {sorted(IMPLEMENTED['tasks'])})"
            )
    try:
        methods = expand_methods(config["methods"], config.get("method_defaults"))
    except ConfigError as e:
        errors.append(str(e))
        methods = []
    for m in methods:
        for key in ("init", "vocab", "procedure", "objective", "posthoc"):
            value = getattr(m, key)
            if value is not None and value not in IMPLEMENTED[key]:
                errors.append(
                    f"methods: {key} {value!r} (method {m.slug}) is not implemented yet; "
                    f"implemented: {sorted(IMPLEMENTED[key])}"
                )
    if errors:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(dict.fromkeys(errors)))
    return methods


def slug_regex(methods: list[Method]) -> str:
    """A wildcard constraint that matches exactly the configured method slugs."""
    return "|".join(re.escape(m.slug) for m in sorted(methods, key=lambda m: m.slug))
