"""The study's grid: methods expanded from the config, their path slugs, and checks of what is implemented.

Imported by rules/common.smk (to build targets and wildcard constraints) and by the tests. Pure Python, no torch.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts.config_inputs import check_cc100_file, check_l10n_deb, check_model

METHOD_FIELDS = ("init", "vocab", "k", "procedure", "objective", "seq_len", "posthoc")
# MuMo (workflow_scripts/mumo): a target-language head on the frozen source model, decoded with verification. A
# procedure of the grid ({init: none, procedure: MuMo}); posthoc noverify is its decoding ablation (MuMo Table 6).
MUMO = "MuMo"
MUMO_POSTHOC = {"none", "noverify"}
MUMO_INITS = ("none", "Random")  # a MuMo method's init: its head's (none: mumo.init), not a vocabulary's
# What a MuMo cell can be evaluated on: generation and its speed (it has no perplexity over its own vocabulary and
# does not score log-likelihood choices); the other tasks are left out of its cells and show "–".
MUMO_TASKS = ("mt", "sum", "speed")


def _implemented() -> dict[str, set[str]]:
    """What the code implements, read from the registries themselves (none of them imports torch): the methods of
    ``initialize.INIT_METHODS``, the procedures and objectives of ``lapt``, the evaluation tasks of
    ``evaluation.TASKS``. ``vocab`` has no registry yet (one value); ``posthoc`` elchat is
    ``workflow_scripts/elchat.py``."""
    from workflow_scripts.evaluation import TASKS
    from workflow_scripts.initialize import INIT_METHODS
    from workflow_scripts.lapt import OBJECTIVES, PROCEDURES

    return {
        "init": {"none", *INIT_METHODS},
        "vocab": {"expand", "replace"},
        "procedure": {"none", MUMO, *PROCEDURES},
        "objective": set(OBJECTIVES),
        "posthoc": {"none", "elchat", "noverify"},
        "tasks": set(TASKS),
    }


IMPLEMENTED = _implemented()
# Values the schema admits before the code implements them, with the issue that implements each; the config check
# rejects them by name. Empty now: every value the schema admits is implemented. tests/test_registries.py fails when
# the schema, the registries and this list disagree.
NOT_YET: dict[str, set[str]] = {}

# The initializations of vocabulary replacement (Table 11; workflow_scripts/initialize/replace.py: REPLACE_METHODS).
REPLACE_INITS = ("Random", "Mean", "FOCUS")

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
        return ".".join(parts)

    def cell(self, model: str, language: str, aux_vocab_size: int) -> dict[str, Any]:
        """The cell dictionary that result files carry (see workflow_scripts/tables.py); ``posthoc`` only where set,
        so that the other cells' evaluation jobs keep their params (the harness reads it: ElChat's chat template)."""
        extra = {"posthoc": self.posthoc} if self.posthoc != "none" else {}
        return {
            **extra,
            "model": model,
            "language": language,
            "method": self.slug,
            "label": self.label,
            "init": self.init if self.expands else None,
            "procedure": self.procedure if self.trains else None,
            "objective": self.objective if self.trains else None,
            "seq_len": self.seq_len if self.trains else None,
            "k": self.k if self.expands else None,
            # For vocab: replace, the size of the replacement tokenizer (trained on D like T_aux).
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
            expands, trains = s["init"] != "none" and s["procedure"] != MUMO, s["procedure"] != "none"
            trains_lapt = trains and s["procedure"] != MUMO  # MuMo has no LAPT objective or sequence length
            m = Method(
                init=s["init"],
                vocab=s["vocab"],
                k=s["k"] if expands and s["vocab"] == "expand" else None,  # replace: the whole vocabulary is new
                procedure=s["procedure"],
                objective=s["objective"] if trains_lapt else None,
                seq_len=s["seq_len"] if trains_lapt else None,
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


def _describe(schema: dict) -> str:
    """What a (small) schema accepts, in words: 'an integer >= 1', 'one of [...]', 'a list of ...'."""
    if "enum" in schema:
        return f"one of {schema['enum']}"
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    words = []
    for t in types:
        if t == "array":
            items = schema.get("items")
            words.append(f"a list, each item {_describe(items)}" if items else "a list")
        elif t in ("integer", "number"):
            word = "an integer" if t == "integer" else "a number"
            if "minimum" in schema:
                word += f" >= {schema['minimum']}"
            if "exclusiveMinimum" in schema:
                word += f" > {schema['exclusiveMinimum']}"
            if "maximum" in schema:
                word += f" <= {schema['maximum']}"
            words.append(word)
        elif t is not None:
            words.append({"string": "a string", "boolean": "true or false", "null": "null", "object": "a mapping"}[t])
    return " or ".join(words) or "a valid value"


_TYPE_NAMES = {
    bool: "true/false",
    int: "an integer",
    float: "a fractional number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
}


def _relevant(error):
    """For a oneOf failure, the error of the alternative whose type matched (the enum, not 'not an array'); when no
    alternative has the value's type, an error that says which types are expected."""
    if error.validator not in ("oneOf", "anyOf") or not error.context:
        return error
    alternatives: dict[int, list] = {}
    for e in error.context:
        alternatives.setdefault(e.relative_schema_path[0], []).append(e)
    if isinstance(error.instance, float) and error.instance.is_integer():
        for errs in alternatives.values():
            if any(e.validator == "type" and "integer" in e.validator_value for e in errs):
                return errs[0]
    typed = [errs for errs in alternatives.values() if not any(e.validator == "type" and not e.path for e in errs)]
    if len(typed) == 1:
        return _relevant(typed[0][0])
    if not typed:
        got = _TYPE_NAMES.get(type(error.instance), type(error.instance).__name__)
        expected = " or ".join(_describe(alt) for alt in error.validator_value)
        error.message = f"{error.instance!r} is {got}; expected {expected}"
    return error


# JSON Schema counts 1000.0 as an integer, but the steps' argparse (type=int) refuses "1000.0" inside a job: one
# policy, applied at planning time.
WHOLE_NUMBER_POLICY = "an integer setting is written without a decimal point"


def _is_integer(checker, instance) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def _strict_integers():
    """Draft 2020-12 whose 'integer' is a Python int (not a whole float, not a bool)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    return jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_integer))


def schema_errors(config: dict, schema_path: str | Path) -> list[str]:
    """Validate ``config`` against the YAML JSON-schema; one short line per problem, naming the key path."""
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    validator = _strict_integers()(schema)
    lines = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        error = _relevant(error)
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        if "propertyNames" in error.schema_path:
            path = f"{path}.{error.instance}" if path else str(error.instance)
        message = error.message
        if isinstance(error.instance, float) and error.instance.is_integer() and "integer" in message:
            message += f"; {WHOLE_NUMBER_POLICY} ({int(error.instance)}, not {error.instance})"
        lines.append(f"{path or '<top level>'}: {message}")
    return lines


# Every source vocabulary holds the 256 byte symbols (byte-level BPE alphabet, or SentencePiece byte-fallback pieces),
# and so does every auxiliary tokenizer: at most |V_aux| - 256 aux tokens can be new.
BYTE_SYMBOLS = 256


def _first_entries(config: dict) -> dict[str, int]:
    """For each method slug, the index of the first ``methods`` entry that produces it."""
    first: dict[str, int] = {}
    for i, entry in enumerate(config["methods"]):
        for m in expand_methods([entry], config.get("method_defaults")):
            first.setdefault(m.slug, i)
    return first


def _hparam(config: dict, model: str, i: int, key: str) -> tuple[Any, str]:
    """The value of LAPT hparam ``key`` a cell (model, methods[i]) trains with, and the config key it comes from (as in
    rules/common.smk hparams_json: methods entry > method_defaults > models.<name>.hparams > training > lapt's
    default)."""
    from workflow_scripts.lapt import DEFAULT_HPARAMS

    sources = [
        (config["methods"][i].get("hparams", {}), f"methods[{i}].hparams.{key}"),
        ((config.get("method_defaults") or {}).get("hparams", {}), f"method_defaults.hparams.{key}"),
        (config["models"][model].get("hparams", {}), f"models.{model}.hparams.{key}"),
        (config.get("training", {}), f"training.{key}"),
    ]
    for values, where in sources:
        if key in values:
            return values[key], where
    return DEFAULT_HPARAMS.get(key), f"training.{key} (not set: default {DEFAULT_HPARAMS.get(key)!r})"


def _aux_size(config: dict, lang: str) -> tuple[int, str]:
    spec = config["languages"][lang]
    if "aux_vocab_size" in spec:
        return spec["aux_vocab_size"], f"languages.{lang}.aux_vocab_size"
    return config.get("tokenizer", {}).get("aux_vocab_size", 50000), "tokenizer.aux_vocab_size"


def _check_cells(config: dict) -> list[str]:
    """Checks that need the grid's cells: k against |V_aux|, stage_split and max_steps against the procedure."""
    from workflow_scripts.lapt import PROCEDURES

    errors = []
    first = _first_entries(config)
    for model, lang, m in expand_grid(config):
        if m.expands and m.vocab == "expand" and m.k is not None:
            aux, aux_key = _aux_size(config, lang)
            if m.k > aux - BYTE_SYMBOLS:
                i = first[m.slug]
                k_key = f"methods[{i}].k" if "k" in config["methods"][i] else "method_defaults.k"
                errors.append(
                    f"{k_key}: k {m.k} (method {m.slug}, language {lang}) is more than the auxiliary vocabulary can "
                    f"supply: {aux_key} {aux} leaves at most {aux - BYTE_SYMBOLS} tokens beyond the {BYTE_SYMBOLS} "
                    f"byte symbols every source vocabulary holds; lower k or raise {aux_key}"
                )
        if m.expands and m.vocab == "replace" and m.init not in REPLACE_INITS:
            errors.append(
                f"methods[{first[m.slug]}]: init {m.init!r} is not defined for vocab: replace (method {m.slug}); "
                f"Table 11 uses {list(REPLACE_INITS)}"
            )
        if m.vocab == "replace" and m.procedure == "EEVE":
            errors.append(
                f"methods[{first[m.slug]}]: procedure EEVE trains the new rows beside the source rows; under vocab: "
                f"replace every row is new (method {m.slug}): use 2x2LS, LoRA, 2-stage or full"
            )
        if not m.trains or m.procedure not in PROCEDURES:
            continue
        stages = [stage.name for stage in PROCEDURES[m.procedure].stages]
        split, split_key = _hparam(config, model, first[m.slug], "stage_split")
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
        max_steps, steps_key = _hparam(config, model, first[m.slug], "max_steps")
        if max_steps is not None and max_steps < len(stages):
            errors.append(
                f"{steps_key}: {max_steps} optimizer steps cannot be split into the {len(stages)} stages of "
                f"procedure {m.procedure!r} (method {m.slug}, model {model}); raise it to at least {len(stages)}"
            )
    return errors


def config_warnings(config: dict) -> list[str]:
    """Settings that run but are probably not meant (printed at planning time): a checkpoint interval that reaches
    the last step, so a killed LAPT job has nothing to resume from."""
    from workflow_scripts.lapt import PROCEDURES

    warnings = []
    first = _first_entries(config)
    for model, _, m in expand_grid(config):
        if not m.trains or m.procedure not in PROCEDURES:
            continue
        every, every_key = _hparam(config, model, first[m.slug], "checkpoint_every")
        max_steps, steps_key = _hparam(config, model, first[m.slug], "max_steps")
        if max_steps is not None and every is not None and every >= max_steps:
            stages = len(PROCEDURES[m.procedure].stages)
            when = "at the end of each stage" if stages > 1 else "at the end"
            warnings.append(
                f"{every_key}: {every} is not smaller than {steps_key.split(' ')[0]} {max_steps} (method {m.slug}, "
                f"model {model}): the only checkpoint is written {when}, so a job killed before then loses all its "
                f"training; lower checkpoint_every"
            )
    return list(dict.fromkeys(warnings))


def deferred_checks(config: dict) -> list[str]:
    """What cannot be checked at planning time without downloading or streaming, and when it is checked."""
    data = config.get("data", {})
    want = f"n_train + n_heldout = {data.get('n_train', '?')} + {data.get('n_heldout', '?')}"
    notes = []
    by_source = {"url": [], "path": []}
    for lang, spec in config["languages"].items():
        corpus = spec["corpus"]
        if corpus["kind"] == "cc100":
            by_source["url" if "url" in corpus else "path"].append(lang)
    if by_source["url"]:
        notes.append(
            f"languages.*.corpus.url ({', '.join(by_source['url'])}): download_cc100 fetches each file when the run "
            f"starts (an HTTP error stops that job); sample_cc100 then checks that it decompresses, is UTF-8 text "
            f"and holds {want} distinct usable lines"
        )
    if by_source["path"]:
        notes.append(
            f"languages.*.corpus.path ({', '.join(by_source['path'])}): the start of each file was checked now; "
            f"sample_cc100 checks the whole stream (decompression, {want} distinct usable lines)"
        )
    hub = [name for name, spec in config["models"].items() if spec["kind"] == "hub"]
    chats = {f"{n}.chat": spec["chat"] for n, spec in config["models"].items() if isinstance(spec.get("chat"), dict)}
    hub += [name for name, chat in chats.items() if chat["kind"] == "hub"]
    if hub:
        notes.append(
            f"models.*.path ({', '.join(hub)}): `python -m tools.preflight` checks access (gated licences need a "
            "token: HF_TOKEN or `hf auth login`) and `snakemake download_all` fetches them on the login node; "
            "prepare_source_model (a chat sibling: prepare_chat_model) then reads them offline"
        )
    flores = [lang for lang, spec in config["languages"].items() if spec.get("mt", {}).get("kind") == "flores"]
    if flores:
        notes.append(
            f"languages.*.mt.root ({', '.join(flores)}): FLORES+ is checked by `python -m tools.preflight`, "
            f"fetched by download_all and read by flores_mt (n_mt = {data.get('n_mt', '?')} of its devtest sentences)"
        )
    return notes


def _check_posthoc(config: dict) -> list[str]:
    """ElChat needs an adapted model (an initialization or a procedure) and the model's instruction-tuned sibling."""
    errors = []
    for i, entry in enumerate(config["methods"]):
        methods = expand_methods([entry], config.get("method_defaults"))
        if any(m.posthoc != "none" and not (m.expands or m.trains) for m in methods):
            errors.append(f"methods[{i}].posthoc: a post-hoc method needs an adapted model (an init or a procedure)")
    for model, _, m in expand_grid(config):
        if m.posthoc == "elchat" and "chat" not in config["models"][model]:
            errors.append(
                f"models.{model}.chat: method {m.slug} (ElChat, Table 10) needs the model's instruction-tuned "
                "sibling; name it like a model (`chat: {kind: hub, path: <hub id>}`), or `chat: source` when the "
                "source checkpoint itself is instruction-tuned"
            )
    return errors


def check_config(config: dict, workdir: str | Path = ".") -> list[Method]:
    """Semantic checks beyond the JSON schema; raise ConfigError naming the key. Returns the expanded methods.

    Cheap checks of the data and models (reading a .deb's catalogue, the head of a local CC-100 file, installed
    packages), but no torch import: planning stays fast."""
    workdir = Path(workdir)
    errors: list[str] = []
    chats = [(f"{n}.chat", s["chat"]) for n, s in config["models"].items() if isinstance(s.get("chat"), dict)]
    for name, spec in [*config["models"].items(), *chats]:  # an instruction-tuned sibling is checked as a model
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
        errors += check_model(name, spec, workdir)
    for lang, spec in config["languages"].items():
        corpus = spec["corpus"]
        if corpus["kind"] == "l10n":
            if "deb" not in corpus:
                errors.append(f"languages.{lang}.corpus.deb is required for corpus kind 'l10n'")
            elif not (workdir / corpus["deb"]).is_file():
                errors.append(f"languages.{lang}.corpus.deb: file {corpus['deb']!r} does not exist")
            else:
                errors += check_l10n_deb(workdir / corpus["deb"], lang, config)
        elif ("path" in corpus) == ("url" in corpus):
            errors.append(f"languages.{lang}.corpus: give exactly one of path and url for corpus kind 'cc100'")
        elif "path" in corpus and not (workdir / corpus["path"]).is_file():
            errors.append(f"languages.{lang}.corpus.path: file {corpus['path']!r} does not exist")
        elif "path" in corpus:
            errors += check_cc100_file(workdir / corpus["path"], lang)
        mt = spec.get("mt", {"kind": "l10n"})
        if mt["kind"] == "l10n" and corpus["kind"] != "l10n":
            errors.append(
                f"languages.{lang}.mt.kind 'l10n' needs corpus kind 'l10n' (the MT pairs come from the same package)"
            )
        if mt["kind"] == "flores" and "root" not in mt:
            errors.append(f"languages.{lang}.mt.root is required for mt kind 'flores'")
    if not config["evaluation"]["tasks"]:
        errors.append(f"evaluation.tasks: the list is empty; name at least one of {sorted(IMPLEMENTED['tasks'])}")
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
    errors += _check_mumo(methods)
    for m in methods:
        for key in ("init", "vocab", "procedure", "objective", "posthoc"):
            value = getattr(m, key)
            if value is not None and value not in IMPLEMENTED[key]:
                errors.append(
                    f"methods: {key} {value!r} (method {m.slug}) is not implemented yet; "
                    f"implemented: {sorted(IMPLEMENTED[key])}"
                )
    if methods:
        try:
            errors += _check_cells(config)
            errors += _check_posthoc(config)
            errors += _check_mumo_target(config, workdir)
        except ConfigError as e:
            errors.append(str(e))
    if errors:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(dict.fromkeys(errors)))
    return methods


def with_adapted(methods: list[Method]) -> list[Method]:
    """The methods and, for each post-hoc method, the method of the model it starts from (trained as a dependency
    even when the config does not list it)."""
    out = {m.slug: m for m in methods}
    for m in methods:
        out.setdefault(m.adapted.slug, m.adapted)
    return list(out.values())


def _check_mumo_target(config: dict, workdir: Path) -> list[str]:
    """mumo.target_tokenizer, where a MuMo cell reads it: a tokenizer.json, or a folder holding one, per language."""
    target = (config.get("mumo") or {}).get("target_tokenizer")
    if not target:
        return []
    errors = []
    for lang in dict.fromkeys(lang for _, lang, m in expand_grid(config) if m.is_mumo):
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


def tasks_of(method: Method, tasks: list[str]) -> list[str]:
    """The configured tasks a method's cells are evaluated on (MuMo: generation and speed only)."""
    return [t for t in tasks if t in MUMO_TASKS] if method.is_mumo else list(tasks)


def slug_regex(methods: list[Method]) -> str:
    """A wildcard constraint that matches exactly the configured method slugs."""
    return "|".join(re.escape(m.slug) for m in sorted(methods, key=lambda m: m.slug))
