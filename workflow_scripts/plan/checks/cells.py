"""Checks of the grid's methods and cells against the registries and against each other, before any job runs."""

from __future__ import annotations

import math
from pathlib import Path

from workflow_scripts.initialize.replace import REPLACE_METHODS
from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE
from workflow_scripts.plan.grid import (
    MUMO,
    MUMO_INITS,
    MUMO_POSTHOC,
    ConfigError,
    Grid,
    Method,
    hparam,
    vocab_size,
)


def _implemented() -> dict[str, set[str]]:
    """What the code implements, read from the registries themselves (none of them imports torch): the methods of
    ``initialize.INIT_METHODS``, the procedures and objectives of ``lapt``, the evaluation tasks of
    ``steps.TASKS``. ``vocab`` has no registry (two values); ``posthoc`` elchat is
    ``workflow_scripts/elchat.py``."""
    from workflow_scripts.initialize import INIT_METHODS
    from workflow_scripts.lapt import OBJECTIVES, PROCEDURES
    from workflow_scripts.plan.steps import TASKS

    return {
        "init": {"none", *INIT_METHODS},
        "vocab": {"expand", "replace"},
        "procedure": {"none", MUMO, *PROCEDURES},
        "objective": set(OBJECTIVES),
        "posthoc": {"none", "elchat", "noverify"},
        "tasks": set(TASKS),
    }


IMPLEMENTED = _implemented()

# Every source vocabulary holds the 256 byte symbols (byte-level BPE alphabet, or SentencePiece byte-fallback pieces),
# and so does every auxiliary tokenizer: at most |V_aux| - 256 aux tokens can be new.
BYTE_SYMBOLS = 256
# How many tokens beyond the byte symbols a tokenizer trained on D to exhaustion (no pair left to merge; the training
# step, workflow_scripts/vocab/aux.py) reaches, by the route of the source tokenizer's family: about K x C^0.65 for a D
# of C characters (vocabulary grows sublinearly with text, Heaps' law). Measured 2026-12 on random subsets of the
# committed LibreOffice l10n sentences (Thai and Sinhala, 50 to 6,053 lines, 2K to 280K characters): byte-level BPE
# (SmolLM2) reaches at most 5.17 x C^0.65 (Thai: no spaces to split at), SentencePiece BPE at most 23.4 x C^0.65
# (its pre-tokenizer splits at spaces only). Each K leaves about 8% above the largest.
VOCAB_GROWTH_EXPONENT = 0.65
NEW_TOKENS_PER_CHARS_POWER = {BYTE_LEVEL_BPE: 5.6, SENTENCEPIECE_BPE: 25.5}


def bpe_vocab_ceiling(chars: float, family: str) -> int:
    """The largest vocabulary (byte symbols included) a tokenizer of ``family`` trained on ``chars`` characters of
    D can be expected to reach (``NEW_TOKENS_PER_CHARS_POWER``): a size above it stops the tokenizer job with
    "corpus too small"."""
    return BYTE_SYMBOLS + int(NEW_TOKENS_PER_CHARS_POWER[family] * chars**VOCAB_GROWTH_EXPONENT)


def chars_for(size: int, family: str) -> float:
    """The characters of D that ``bpe_vocab_ceiling`` needs for a vocabulary of ``size``."""
    return ((size - BYTE_SYMBOLS) / NEW_TOKENS_PER_CHARS_POWER[family]) ** (1 / VOCAB_GROWTH_EXPONENT)


def initialization_problems(config: dict) -> list[str]:
    """Each ``initialization.<method>`` entry against the method's registered settings (registry.method_options)."""
    from workflow_scripts.initialize import method_options

    out = []
    for name, given in (config.get("initialization") or {}).items():
        try:
            method_options(name, given)
        except ValueError as e:
            out.append(str(e))
    return out


def check_methods(methods: list[Method]) -> list[str]:
    """Each method's fields against the registries, and MuMo's own rules."""
    errors = _check_mumo(methods)
    for m in methods:
        for key in ("init", "vocab", "procedure", "objective", "posthoc"):
            value = getattr(m, key)
            if value is not None and value not in IMPLEMENTED[key]:
                errors.append(
                    f"methods: {key} {value!r} (method {m.slug}) is not implemented yet; "
                    f"implemented: {sorted(IMPLEMENTED[key])}"
                )
    return errors


def check_grid(config: dict, workdir: Path, grid: Grid | None = None) -> list[str]:
    """The checks that need the grid's cells (``Grid.of(config)`` without ``grid``; a ConfigError of the grid itself
    becomes one line)."""
    try:
        grid = Grid.of(config) if grid is None else grid
        return [
            *repeated_entries(config, grid),
            *_check_cells(config, grid),
            *_check_corpus_size(config, workdir, grid),
            *_check_posthoc(config, grid),
            *_check_mumo_target(config, workdir, grid),
        ]
    except ConfigError as e:
        return [str(e)]


def repeated_entries(config: dict, grid: Grid) -> list[str]:
    """A ``methods`` entry that adds no cell: every (model, language, method) it gives an earlier entry gives too.
    Entries may overlap (a table's cells are often another's), but an entry repeated whole is a slip that planning
    would otherwise merge silently."""
    owner: dict[tuple[str, str, str], int] = {}
    errors = []
    for i, entry in enumerate(config["methods"]):
        cells = [
            (model, lang, m.slug)
            for m in grid.entries[i]
            for model in entry.get("models", list(config["models"]))
            for lang in entry.get("languages", list(config["languages"]))
        ]
        if cells and all(c in owner for c in cells):
            where = ", ".join(f"methods[{j}]" for j in sorted({owner[c] for c in cells}))
            errors.append(
                f"methods[{i}]: adds no cell: its {len(cells)} (model, language, method) cells, e.g. "
                f"{'/'.join(cells[0])}, are all given by {where} already; remove the repeated entry"
            )
        for c in cells:
            owner.setdefault(c, i)
    return errors


def _check_k(config: dict, lang: str, m: Method, i: int) -> list[str]:
    aux, aux_key = vocab_size(config, lang, "aux")
    if m.k is None or m.k <= aux - BYTE_SYMBOLS:
        return []
    k_key = f"methods[{i}].k" if "k" in config["methods"][i] else "method_defaults.k"
    return [
        f"{k_key}: k {m.k} (method {m.slug}, language {lang}) is more than the auxiliary vocabulary can "
        f"supply: {aux_key} {aux} leaves at most {aux - BYTE_SYMBOLS} tokens beyond the {BYTE_SYMBOLS} "
        f"byte symbols every source vocabulary holds; lower k or raise {aux_key}"
    ]


def _check_stages(config: dict, model: str, m: Method, i: int) -> list[str]:
    """stage_split and max_steps against the stages of the method's procedure."""
    from workflow_scripts.lapt import PROCEDURES

    errors = []
    stages = [stage.name for stage in PROCEDURES[m.procedure].stages]
    split, split_key = hparam(config, model, i, "stage_split")
    if split is not None and len(split) != len(stages):
        errors.append(
            f"{split_key}: {split} has {len(split)} value(s), but procedure {m.procedure!r} (method {m.slug}, "
            f"model {model}) has {len(stages)} stage(s) {stages}; give {len(stages)} fractions, or null for "
            "equal shares (set it in the methods entry of that procedure)"
        )
    if split is not None and abs(sum(split) - 1) > 1e-9:
        # lapt would renormalize them silently; a typo such as [0.5, 0.6] should not change the schedule unseen
        errors.append(
            f"{split_key}: {split} sums to {sum(split):g}; the fractions of the total steps per stage must sum "
            "to 1 (or null for equal shares)"
        )
    max_steps, steps_key = hparam(config, model, i, "max_steps")
    if max_steps is not None and max_steps < len(stages):
        errors.append(
            f"{steps_key}: {max_steps} optimizer steps cannot be split into the {len(stages)} stages of "
            f"procedure {m.procedure!r} (method {m.slug}, model {model}); raise it to at least {len(stages)}"
        )
    return errors


def _check_cells(config: dict, grid: Grid) -> list[str]:
    """Checks that need the grid's cells: k against |V_aux|, replacement's methods, the procedure's stages."""
    from workflow_scripts.lapt import PROCEDURES

    errors = []
    for model, lang, m in grid.cells:
        i = grid.first[m.slug]
        if m.expands and m.vocab == "expand":
            errors += _check_k(config, lang, m, i)
        if m.expands and m.vocab == "replace" and m.init not in REPLACE_METHODS:
            errors.append(
                f"methods[{i}]: init {m.init!r} is not defined for vocab: replace (method {m.slug}); "
                f"Table 11 uses {list(REPLACE_METHODS)}"
            )
        if m.vocab == "replace" and m.procedure == "EEVE":
            errors.append(
                f"methods[{i}]: procedure EEVE trains the new rows beside the source rows; under vocab: "
                f"replace every row is new (method {m.slug}): use 2x2LS, LoRA, 2-stage or full"
            )
        if m.trains and m.procedure in PROCEDURES:
            errors += _check_stages(config, model, m, i)
    return errors


def trained_vocabularies(config: dict, grid: Grid | None = None) -> dict[tuple[str, str], list[str]]:
    """Per (model, language), the tokenizers the grid trains on D: ``aux`` (expansion; MuMo's V_mono unless
    mumo.target_tokenizer names one) and ``replace`` (vocab: replace)."""
    target = (config.get("mumo") or {}).get("target_tokenizer")
    out: dict[tuple[str, str], list[str]] = {}
    for model, lang, m in (Grid.of(config) if grid is None else grid).cells:
        kind = None
        if m.expands:
            kind = "replace" if m.vocab == "replace" else "aux"
        elif m.is_mumo and not target:
            kind = "aux"
        kinds = out.setdefault((model, lang), [])
        if kind and kind not in kinds:
            kinds.append(kind)
    return {cell: kinds for cell, kinds in out.items() if kinds}


def _check_corpus_size(config: dict, workdir: Path, grid: Grid) -> list[str]:
    """Each vocabulary trained on D against what D's data.n_train lines can supply (``bpe_vocab_ceiling`` of their
    characters, n_train times the mean line of the source).

    Where planning reads D's source whole (an l10n package, a local corpus file up to text_file.CORPUS_COUNT_BYTES) and
    the source tokenizer (a hub model's is downloaded later); the job reports the others."""
    from workflow_scripts.plan.checks.inputs import mean_line_chars, tokenizer_family

    n_train = config.get("data", {}).get("n_train")
    if n_train is None:
        return []
    errors, families, means = [], {}, {}
    for (model, lang), kinds in trained_vocabularies(config, grid).items():
        if lang not in means:
            means[lang] = mean_line_chars(config, lang, workdir)
        if means[lang] is None:
            continue
        if model not in families:
            families[model] = tokenizer_family(config["models"][model], workdir)
        family = families[model]
        if family is None:
            continue
        chars = n_train * means[lang]
        ceiling = bpe_vocab_ceiling(chars, family)
        route = "BPE" if family == BYTE_LEVEL_BPE else "SentencePiece BPE"
        k = NEW_TOKENS_PER_CHARS_POWER[family]
        for kind in kinds:
            size, key = vocab_size(config, lang, kind)
            if size > ceiling:
                errors.append(
                    f"{key}: {size} is more than the corpus D of language {lang} can supply: {route} (model {model}) "
                    f"on data.n_train {n_train} lines (about {round(chars)} characters, {means[lang]:.1f} a line) "
                    f"reaches about {BYTE_SYMBOLS} byte symbols + {k} x characters^{VOCAB_GROWTH_EXPONENT} = "
                    f"{ceiling}; lower {key} to at most {ceiling} or raise data.n_train to at least "
                    f"{math.ceil(chars_for(size, family) / means[lang])}"
                )
    return errors


def _check_posthoc(config: dict, grid: Grid) -> list[str]:
    """ElChat needs an adapted model (an initialization or a procedure) and the model's instruction-tuned sibling."""
    errors = []
    for i, methods in enumerate(grid.entries):
        if any(m.posthoc != "none" and not (m.expands or m.trains) for m in methods):
            errors.append(f"methods[{i}].posthoc: a post-hoc method needs an adapted model (an init or a procedure)")
    for model, _, m in grid.cells:
        if m.posthoc == "elchat" and "chat" not in config["models"][model]:
            errors.append(
                f"models.{model}.chat: method {m.slug} (ElChat, Table 10) needs the model's instruction-tuned "
                "sibling; name it like a model (`chat: {kind: hub, path: <hub id>}`), or `chat: source` when the "
                "source checkpoint itself is instruction-tuned"
            )
    return errors


def _check_mumo_target(config: dict, workdir: Path, grid: Grid) -> list[str]:
    """mumo.target_tokenizer, where a MuMo cell reads it: a tokenizer.json, or a folder holding one, per language."""
    target = (config.get("mumo") or {}).get("target_tokenizer")
    if not target:
        return []
    errors = []
    for lang in dict.fromkeys(lang for _, lang, m in grid.cells if m.is_mumo):
        path = workdir / target.replace("{lang}", lang)
        if not (path.is_file() or (path / "tokenizer.json").is_file()):
            errors.append(
                f"mumo.target_tokenizer: {str(path)!r} (language {lang}) is neither a tokenizer.json nor a folder "
                "holding one; fix the path, or null for the language's auxiliary tokenizer trained on D"
            )
    return errors


def _check_mumo(methods: list[Method]) -> list[str]:
    """MuMo keeps the source vocabulary (init none); noverify is a MuMo decoding setting only."""
    errors = []
    for m in methods:
        if m.is_mumo and m.init not in MUMO_INITS:
            errors.append(
                f"methods: procedure MuMo with init {m.init!r}: MuMo keeps the source vocabulary and model; its init "
                "is its head's: none (mumo.init, Multi-init by default) or Random (Random-init, the ablation)"
            )
        if m.is_mumo and m.posthoc not in MUMO_POSTHOC:
            errors.append(
                f"methods: posthoc {m.posthoc!r} cannot follow procedure MuMo (one of {sorted(MUMO_POSTHOC)})"
            )
        if not m.is_mumo and m.posthoc == "noverify":
            errors.append(
                f"methods: posthoc 'noverify' (method {m.slug}) is MuMo's decoding ablation; set procedure MuMo"
            )
    return errors
