"""The config against the JSON schema (schemas/config.schema.yaml), one short line per problem naming the key.

The schema types ``init``, ``procedure``, the items of ``evaluation.tasks``, ``languages.<l>.corpus.kind`` and
``languages.<l>.mt.kind`` as strings: the values they admit are the registries' (``initialize.INIT_METHODS``,
``lapt.PROCEDURES``, ``workflow_scripts.tasks.TASKS``, ``workflow_scripts.corpora.CORPORA``,
``workflow_scripts.mt_sources.MT_SOURCES``), added here as enums before validating, so that a new method, task, corpus
kind or MT kind is one module, and a misspelt name is refused with the list of registered ones.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

from workflow_scripts.plan.grid import MUMO


def registered(field: str) -> list[str]:
    """The values a method field admits, from the registries (``none`` first): init and procedure."""
    if field == "init":
        from workflow_scripts.initialize import INIT_METHODS

        return ["none", *INIT_METHODS]
    from workflow_scripts.lapt import PROCEDURES

    return ["none", *PROCEDURES, MUMO]


def _with_kinds(schema: dict, block: str, kinds: dict, description: str) -> dict:
    """A copy of the schema whose ``languages.<l>.<block>.kind`` admits exactly the registered ``kinds``, described by
    their modules, and whose ``block`` has the keys the kinds declare (their specs' ``keys``), each described with the
    kinds that read it. Kinds declaring one key must declare it alike; the schema's own keys stay as they are."""
    schema = copy.deepcopy(schema)
    props = schema["properties"]["languages"]["additionalProperties"]["properties"][block]["properties"]
    props["kind"] = {"enum": list(kinds), "description": description}
    declared: dict[str, tuple[dict, list[str]]] = {}  # key: its rules, the kinds reading it
    for name, spec in kinds.items():
        for key, rules in spec.keys.items():
            first, names = declared.setdefault(key, (rules, []))
            if rules != first:
                raise ValueError(f"{block} kinds {names[0]!r} and {name!r} declare the key {key!r} differently")
            names.append(name)
    for key, (rules, names) in declared.items():
        if key in props:
            continue
        said = f"kind {names[0]}" if len(names) == 1 else f"kinds {', '.join(names[:-1])} and {names[-1]}"
        props[key] = {**copy.deepcopy(rules), "description": f"{rules.get('description', '')} Read by {said}.".lstrip()}
    return schema


def with_corpus_kinds(schema: dict) -> dict:
    """The schema with the registered corpus kinds (``CorpusSpec``) in ``languages.<l>.corpus``."""
    from workflow_scripts.corpora import CORPORA, kind_description

    return _with_kinds(schema, "corpus", CORPORA, kind_description())


def with_mt_kinds(schema: dict) -> dict:
    """The schema with the registered MT kinds (``MtSpec``) in ``languages.<l>.mt``."""
    from workflow_scripts.mt_sources import MT_SOURCES, kind_description

    return _with_kinds(schema, "mt", MT_SOURCES, kind_description())


def with_data_kinds(schema: dict) -> dict:
    """``with_corpus_kinds`` and ``with_mt_kinds``: the config reference (tools/config_doc.py) renders this copy."""
    return with_mt_kinds(with_corpus_kinds(schema))


def with_registries(schema: dict) -> dict:
    """A copy of the schema whose method ``init`` and ``procedure``, ``evaluation.tasks``' items, the corpus kinds
    and the MT kinds admit exactly the registered names, with each registered task's own ``evaluation.<task>``
    settings block (``TaskSpec.settings``) where the schema has none."""
    from workflow_scripts.tasks import TASKS

    schema = with_data_kinds(schema)
    for field in ("init", "procedure"):
        single, many = schema["$defs"]["method"]["properties"][field]["oneOf"]
        single["enum"] = many["items"]["enum"] = registered(field)
    evaluation = schema["properties"]["evaluation"]["properties"]
    evaluation["tasks"]["items"]["enum"] = list(TASKS)
    for name, spec in TASKS.items():  # a task's own settings block, where its module declares one
        if spec.settings is not None and name not in evaluation:
            evaluation[name] = {
                "type": "object",
                "additionalProperties": False,
                "default": {},
                "description": spec.doc,
                "properties": copy.deepcopy(spec.settings),
            }
    return schema


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


def load_schema(schema_path: str | Path) -> dict:
    """The YAML schema, parsed once per file version (PyYAML takes over 0.1 s for it): shared, so read it, never
    change it (``with_registries`` copies it)."""
    path = Path(schema_path).resolve()
    return _parsed(str(path), path.stat().st_mtime_ns)


@functools.cache
def _parsed(path: str, mtime_ns: int) -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML has it: about 10x faster
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)


def fill_defaults(config: dict, schema_path: str | Path) -> None:
    """Fill ``config`` in place with the schema's defaults, as ``snakemake.utils.validate(..., set_default=True)``
    does (a property absent from a mapping the validator visits takes its ``default``), from the schema parsed once
    (that function parses the YAML schema again on every call). Each default is a copy: the parsed schema is shared.
    For a config that ``schema_errors`` passes."""
    for _ in _default_filler()(with_registries(load_schema(schema_path))).iter_errors(config):
        pass


@functools.cache
def _default_filler():
    """Draft 2020-12 whose ``properties`` keyword first sets each absent property that has a ``default``."""
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, schema)

    return validators.extend(Draft202012Validator, {"properties": set_defaults})


def schema_errors(config: dict, schema_path: str | Path) -> list[str]:
    """Validate ``config`` against the YAML JSON-schema; one short line per problem, naming the key path."""
    schema = with_registries(load_schema(schema_path))
    validator = _strict_integers()(schema)
    lines = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        error = _relevant(error)
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        if "propertyNames" in error.schema_path:
            path = f"{path}.{error.instance}" if path else str(error.instance)
        message = error.message
        if error.validator == "uniqueItems" and error.validator_value:
            repeated = next(v for i, v in enumerate(error.instance) if v in error.instance[:i])
            message = f"{error.instance!r} gives {repeated!r} twice; list each value once"
        if error.validator == "maxLength":  # the value itself may be very long: its start and its length
            message = (
                f"{error.instance[:40]!r}... has {len(error.instance)} characters, more than the "
                f"{error.validator_value} allowed; give a shorter one"
            )
        if error.validator == "required":  # name what the missing key admits, where the schema lists it
            missing = next((k for k in error.validator_value if k not in error.instance), None)
            admits = error.schema.get("properties", {}).get(missing, {})
            if "enum" in admits:
                message += f"; give {missing}: one of {admits['enum']}"
        if isinstance(error.instance, float) and error.instance.is_integer() and "integer" in message:
            message += f"; {WHOLE_NUMBER_POLICY} ({int(error.instance)}, not {error.instance})"
        lines.append(f"{path or '<top level>'}: {message}")
    return lines
