"""The study's grid: methods expanded from the config, their path slugs, and the settings a cell runs with.

Imported by the rules (rules/common.smk, rules/*_inputs.smk: targets, wildcard constraints and job params) and by
the planning checks (``workflow_scripts.plan.checks``), so that both read a cell's hyperparameters and vocabulary
sizes from the same functions. Pure Python, no torch.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from workflow_scripts.tasks import TASKS

METHOD_FIELDS = ("init", "vocab", "k", "procedure", "objective", "seq_len", "posthoc", "seed")
# MuMo (workflow_scripts/mumo): a target-language head on the frozen source model, decoded with verification. A
# procedure of the grid ({init: none, procedure: MuMo}); posthoc noverify is its decoding ablation (MuMo Table 6).
MUMO = "MuMo"
MUMO_POSTHOC = {"none", "noverify"}
MUMO_INITS = ("none", "Random")  # a MuMo method's init: its head's (none: mumo.init), not a vocabulary's
# What a MuMo cell can be evaluated on: generation and its speed (it has no perplexity over its own vocabulary and
# does not score log-likelihood choices); the other tasks are left out of its cells and show "–".
MUMO_TASKS = tuple(name for name, spec in TASKS.items() if spec.mumo)  # workflow_scripts/tasks/


BUILTIN_DEFAULTS = {
    "init": "none",
    "vocab": "expand",
    "k": 100,
    "procedure": "none",
    "objective": "clm",
    "seq_len": 2048,
    "posthoc": "none",
    "seed": None,  # the config's top-level seed
}
# A training seed other than the config's top-level one is part of the cell's name: Mean.k100.2x2LS.clm.L128.s43
# (and of its initialized model's folder). The config's own seed adds nothing, so its cells keep their paths.
SEED_SUFFIX = ".s{seed}"
SEED_DEFAULT = 42  # the schema's default of the top-level seed, for a config read before the schema fills it in


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
    # The training seed where it is not the config's top-level one (None: that one): LAPT's data order and its
    # initialization's draws (Random) take it; the data sampled per language does not (docs/findings.md, "Seeds").
    seed: int | None = None

    @property
    def is_mumo(self) -> bool:
        return self.procedure == MUMO

    @property
    def expands(self) -> bool:
        """The vocabulary grows (MuMo's init names its head's initialization instead: it keeps V_s)."""
        return self.init != "none" and not self.is_mumo

    @property
    def trains(self) -> bool:
        return self.procedure != "none"

    @property
    def adapted(self) -> Method:
        """The method without its post-hoc step: the cell whose model a post-hoc method (ElChat) starts from."""
        return dataclasses.replace(self, posthoc="none")

    @property
    def label(self) -> str:
        """The paper's row name: Source, CPT-only, or the initialization method."""
        if self.is_mumo:
            head = f"{MUMO} ({self.init}-init)" if self.init != "none" else MUMO
            return head if self.posthoc == "none" else f"{head} w/o verification"
        if not self.expands:
            return "CPT-only" if self.trains else "Source"
        return self.init

    @property
    def slug(self) -> str:
        """Path component naming the method with all its settings, e.g. ``Mean.k100.2x2LS.clm.L512``."""
        if not self.expands and not self.trains:
            return "Source"
        if self.is_mumo:
            return ".".join(p for p in (MUMO, self.init, self.posthoc) if p != "none")
        parts = [self.label]
        if self.expands:
            parts.append(f"k{self.k}" if self.vocab == "expand" else "replace")
        if self.trains:
            parts += [self.procedure, str(self.objective), f"L{self.seq_len}"]
        else:
            parts.append("notrain")
        if self.posthoc != "none":
            parts.append(self.posthoc)
        return ".".join(parts) + seed_suffix(self.seed)

    @property
    def unseeded(self) -> Method:
        """The method with the config's seed: the cell that its other seeds are repeats of (tables group them)."""
        return dataclasses.replace(self, seed=None)

    def train_seed(self, base: int) -> int:
        """The seed this method's jobs take, ``base`` being the config's top-level ``seed``."""
        return base if self.seed is None else self.seed

    def cell(self, model: str, language: str, aux_vocab_size: int) -> dict[str, Any]:
        """The cell dictionary that result files carry (see workflow_scripts/tables.py): every method field, so that
        the tables read the method from its fields, never from the slug."""
        return {
            "model": model,
            "language": language,
            "method": self.slug,
            "label": self.label,
            "init": self.init if self.expands else None,
            "vocab": self.vocab if self.expands else None,
            "procedure": self.procedure if self.trains else None,
            "objective": self.objective if self.trains else None,
            "seq_len": self.seq_len if self.trains else None,
            "k": self.k if self.expands else None,
            # For vocab: replace, the size of the replacement tokenizer (trained on D like T_aux).
            "aux_vocab_size": aux_vocab_size if self.expands else None,
            "posthoc": self.posthoc,
            # only another seed than the config's is recorded: the cells of that seed keep their evaluation commands
            **({"train_seed": self.seed} if self.seed is not None else {}),
        }


def seed_suffix(seed: int | None) -> str:
    """The slug's (and initialized model folder's) suffix of a training seed other than the config's: ".s43"."""
    return "" if seed is None else SEED_SUFFIX.format(seed=seed)


def init_seed_suffix(method: Method) -> str:
    """The suffix of a method's initialized model: its training seed's (``seed_suffix``) where its initialization
    draws (``MethodSpec.draws``: Random, FOCUS, Token Distillation), none where it draws nothing (Mean, Merge, Align,
    OMP: one initialized model shared by every seed)."""
    from workflow_scripts.initialize import METHOD_SPECS

    spec = METHOD_SPECS.get(method.init)
    return seed_suffix(method.seed) if spec is None or spec.draws else ""


def unseeded_slug(slug: str, seed: int | None) -> str:
    """A cell's slug without its training seed's suffix: the name its seeds share (the config's seed has none)."""
    return slug.removesuffix(seed_suffix(seed))


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def expand_methods(entries: list[dict], defaults: dict | None = None, base_seed: int | None = None) -> list[Method]:
    """Expand config ``methods`` entries (list values → cartesian product) into unique methods, in config order
    (``expand_entries``' second half)."""
    return expand_entries(entries, defaults, base_seed)[1]


def expand_entries(
    entries: list[dict], defaults: dict | None = None, base_seed: int | None = None
) -> tuple[list[list[Method]], list[Method]]:
    """Each config ``methods`` entry's methods (list values → cartesian product; no repeat within an entry), and the
    unique methods of all of them in config order; ConfigError for a method two entries give with different hparams.

    ``seed`` is a dimension like the others; a seed equal to ``base_seed`` (the config's top-level ``seed``) is that
    seed's cell, with no suffix. Source and MuMo draw nothing seeded of their own: Source ignores a seed list, MuMo
    refuses another seed than the config's (its head's folder is shared by its cells).
    """
    base = {**BUILTIN_DEFAULTS, **{k: v for k, v in (defaults or {}).items() if k != "hparams"}}
    base_hparams = (defaults or {}).get("hparams", {})
    out: dict[str, Method] = {}
    per_entry: list[list[Method]] = []
    for i, entry in enumerate(entries):
        own: dict[str, Method] = {}
        merged = {**base, **{k: v for k, v in entry.items() if k in METHOD_FIELDS}}
        hparams = {**base_hparams, **entry.get("hparams", {})}
        keys = list(METHOD_FIELDS)
        for combo in itertools.product(*(_as_list(merged[k]) for k in keys)):
            s = dict(zip(keys, combo, strict=True))
            expands, trains = s["init"] != "none" and s["procedure"] != MUMO, s["procedure"] != "none"
            trains_lapt = trains and s["procedure"] != MUMO  # MuMo has no LAPT objective or sequence length
            seed = None if s["seed"] == base_seed or not (expands or trains) else s["seed"]
            if seed is not None and s["procedure"] == MUMO:
                raise ConfigError(
                    f"methods[{i}].seed: {seed} is not the config's seed ({base_seed}); MuMo cells run with the "
                    "top-level seed only: remove the seed from this entry"
                )
            m = Method(
                init=s["init"],
                vocab=s["vocab"],
                k=s["k"] if expands and s["vocab"] == "expand" else None,  # replace: the whole vocabulary is new
                procedure=s["procedure"],
                objective=s["objective"] if trains_lapt else None,
                seq_len=s["seq_len"] if trains_lapt else None,
                posthoc=s["posthoc"],
                hparams=tuple(sorted(hparams.items())) if trains else (),
                seed=seed,
            )
            if m.slug in out and out[m.slug].hparams != m.hparams:
                raise ConfigError(f"methods[{i}]: method {m.slug} appears twice with different hparams")
            out.setdefault(m.slug, m)
            own.setdefault(m.slug, m)
        per_entry.append(list(own.values()))
    return per_entry, list(out.values())


class Cell(NamedTuple):
    """One (model, language, method) cell of the grid."""

    model: str
    lang: str
    method: Method


@dataclass(frozen=True)
class Grid:
    """The config's ``methods`` expanded once: each entry's methods (``entries``, in config order), the unique methods,
    the grid's cells, and for each method slug the first entry that produces it (``first``, whose hparams it trains
    with; a method that only a post-hoc method starts from takes that post-hoc method's entry). Planning builds it
    once (``plan.build.check_plan``: ``Plan.grid``) and every planning check reads it."""

    entries: tuple[tuple[Method, ...], ...]
    methods: tuple[Method, ...]
    cells: tuple[Cell, ...]
    first: dict[str, int]

    @classmethod
    def of(cls, config: dict) -> Grid:
        """Expand ``config`` (filled with the schema's defaults); ConfigError for an entry that repeats a method with
        other hparams or names a model or language the config does not configure.

        A ``methods`` entry applies to every configured model and language unless it names ``models`` /
        ``languages`` (a table of the paper covers only some of them, e.g. Table 5: Llama-2 on six languages)."""
        defaults, base_seed = config.get("method_defaults"), config.get("seed", SEED_DEFAULT)
        per_entry, methods = expand_entries(config["methods"], defaults, base_seed)  # checks hparams conflicts
        by_slug = {m.slug: m for m in methods}
        entries = tuple(tuple(ms) for ms in per_entry)
        cells: dict[tuple[str, str, str], Cell] = {}
        for i, entry in enumerate(config["methods"]):
            scope = {}
            for key, known in (("models", config["models"]), ("languages", config["languages"])):
                names = entry.get(key, list(known))
                unknown = [n for n in names if n not in known]
                if unknown:
                    raise ConfigError(
                        f"methods[{i}].{key}: {unknown} not configured under {key} (have {sorted(known)})"
                    )
                scope[key] = names
            for m in entries[i]:
                for model in scope["models"]:
                    for lang in scope["languages"]:
                        cells.setdefault((model, lang, m.slug), Cell(model, lang, by_slug[m.slug]))
        first: dict[str, int] = {}
        for i, entry_methods in enumerate(entries):
            for m in entry_methods:
                first.setdefault(m.slug, i)
        for i, entry_methods in enumerate(entries):
            for m in entry_methods:
                first.setdefault(m.adapted.slug, i)
        return cls(entries, tuple(methods), tuple(cells.values()), first)


def expand_grid(config: dict) -> list[Cell]:
    """Every (model, language, method) cell of the grid, in config order (``Grid.of(config).cells``: for a tool or
    test that reads one config once)."""
    return list(Grid.of(config).cells)


def first_entries(config: dict) -> dict[str, int]:
    """For each method slug, the index of the first ``methods`` entry that produces it (``Grid.of(config).first``)."""
    return Grid.of(config).first


# Keys of `training` that are no LAPT hparam: they change no trained weight, so they stay out of the cell's hparams
# (its training job's arguments and checkpoint fingerprint).
TRAINING_NOT_HPARAMS = ("curve_points", "init_gate")


def hparam_layers(config: dict, model: str, i: int) -> list[tuple[str, dict]]:
    """Where a training cell (model, methods[i]) takes its LAPT hparams from, highest precedence first, each with its
    config key: the methods entry, method_defaults, the model, ``training``; lapt's defaults fill the rest."""
    training = {k: v for k, v in config.get("training", {}).items() if k not in TRAINING_NOT_HPARAMS}
    return [
        (f"methods[{i}].hparams", config["methods"][i].get("hparams", {})),
        ("method_defaults.hparams", (config.get("method_defaults") or {}).get("hparams", {})),
        (f"models.{model}.hparams", config["models"][model].get("hparams", {})),
        ("training", training),
    ]


def curve_points(config: dict) -> int:
    """Points of the held-out curve each LAPT job measures (``training.curve_points``; 0: none)."""
    return int(config.get("training", {}).get("curve_points", 0))


def init_gate(config: dict) -> bool:
    """Whether LAPT jobs check the initialization at step 0 (``training.init_gate``; workflow_scripts/lapt/gate.py)."""
    return bool(config.get("training", {}).get("init_gate", True))


def cell_hparams(config: dict, model: str, m: Method, i: int) -> dict[str, Any]:
    """The hparams a cell's training job is given (rules/inputs.smk ``hparams_json``): the layers of
    ``hparam_layers`` merged; a method that does not train takes nothing from its methods entry."""
    layers = hparam_layers(config, model, i) if m.trains else hparam_layers(config, model, i)[2:]
    merged: dict[str, Any] = {}
    for _, values in reversed(layers):
        merged.update(values)
    return merged


def hparam(config: dict, model: str, i: int, key: str) -> tuple[Any, str]:
    """The value of LAPT hparam ``key`` a training cell (model, methods[i]) runs with, and the config key it comes
    from (by ``hparam_layers``; lapt's default where no layer sets it)."""
    from workflow_scripts.lapt import DEFAULT_HPARAMS

    for where, values in hparam_layers(config, model, i):
        if key in values:
            return values[key], f"{where}.{key}"
    return DEFAULT_HPARAMS.get(key), f"training.{key} (not set: default {DEFAULT_HPARAMS.get(key)!r})"


# The schema's defaults of tokenizer.aux_vocab_size and tokenizer.replace_vocab_size (paper 50K and 32K), for a
# config read before the schema fills them in.
VOCAB_SIZE_DEFAULTS = {"aux": 50000, "replace": 32000}


def vocab_size(config: dict, lang: str, kind: str = "aux") -> tuple[int, str]:
    """|V_aux| (``kind`` aux) or the replacement vocabulary's size (``kind`` replace) of a language, and the key that
    sets it: ``languages.<lang>.<kind>_vocab_size``, else ``tokenizer.<kind>_vocab_size``."""
    name = f"{kind}_vocab_size"
    spec = config["languages"][lang]
    if name in spec:
        return spec[name], f"languages.{lang}.{name}"
    return config.get("tokenizer", {}).get(name, VOCAB_SIZE_DEFAULTS[kind]), f"tokenizer.{name}"


def with_adapted(methods: list[Method]) -> list[Method]:
    """The methods and, for each post-hoc method, the method of the model it starts from (trained as a dependency
    even when the config does not list it)."""
    out = {m.slug: m for m in methods}
    for m in methods:
        out.setdefault(m.adapted.slug, m.adapted)
    return list(out.values())


def ppl_only(method: Method, config: dict) -> bool:
    """Whether the method is a training seed other than the config's, evaluated on bits per character alone
    (``evaluation.other_seeds: ppl``)."""
    return method.seed is not None and config.get("evaluation", {}).get("other_seeds", "all") == "ppl"


def tasks_of(method: Method, tasks: list[str], config: dict | None = None) -> list[str]:
    """The configured tasks a method's cells are evaluated on (MuMo: generation and speed only; a seed other than
    the config's under ``evaluation.other_seeds: ppl``: ppl only)."""
    if method.is_mumo:
        return [t for t in tasks if t in MUMO_TASKS]
    return [t for t in tasks if t == "ppl"] if config is not None and ppl_only(method, config) else list(tasks)


def cell_curve_points(config: dict, method: Method) -> int:
    """Points of a cell's held-out curve: ``training.curve_points``, or step 0 alone for a seed evaluated on
    bits per character only (``ppl_only``)."""
    points = curve_points(config)
    return min(points, 1) if ppl_only(method, config) else points


def slug_regex(methods: list[Method]) -> str:
    """A wildcard constraint that matches exactly the configured method slugs."""
    return "|".join(re.escape(m.slug) for m in sorted(methods, key=lambda m: m.slug))
