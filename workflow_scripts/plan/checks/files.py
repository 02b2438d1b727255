"""Checks of the files around the config: the config files as written, before the schema fills in its defaults
(YAML that does not parse, named with its line, which Snakemake's loader reports without file or line; keys given
twice, which it keeps the last of silently; a missing ``data`` or ``evaluation`` block, whose defaults are
paper-scale), and the output folder a real run writes to."""

from __future__ import annotations

from pathlib import Path


def config_file_problems(path: str | Path) -> list[str]:
    """Why a config file cannot be the workflow's config, each naming the file (and the line): YAML that does not
    parse, an empty file, a top level that is not a mapping, a key given twice. A file that does not exist is left to
    Snakemake, which names it."""
    import yaml

    path = Path(path)
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    try:
        loaded = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        what = e.problem or "not valid YAML"
        if e.context and e.context_mark and e.context_mark.line != getattr(mark, "line", None):
            what = f"{what} ({e.context} at line {e.context_mark.line + 1})"
        bad_line = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        fix = "indent with spaces, not tabs" if "\t" in bad_line or "'\\t'" in what else "fix the YAML there"
        return [f"{path}, {where}: not valid YAML: {what}; {fix}"]
    except yaml.YAMLError as e:
        return [f"{path}: not valid YAML: {e}"]
    if loaded is None:
        return [f"{path}: the file is empty (or only comments); a config is a mapping of the keys in docs/config.md"]
    if not isinstance(loaded, dict):
        kind = {list: "a list", str: "a single string"}.get(type(loaded), type(loaded).__name__)
        return [f"{path}: the top level is {kind}, not a mapping of the keys in docs/config.md"]
    return duplicate_keys(path)


def stop_on_unreadable_config(path: str | Path) -> None:
    """Stop planning with the file's problems (``config_file_problems``) as Snakemake shows a planning error, before
    Snakemake's own loader reads the file and fails without naming file or line (the Snakefile calls this)."""
    problems = config_file_problems(path)
    if problems:
        from snakemake.exceptions import WorkflowError

        raise WorkflowError("invalid configuration:\n  - " + "\n  - ".join(problems))


def duplicate_keys(path: str | Path) -> list[str]:
    """One line per key given twice in the same mapping of a YAML (or JSON) config file, with both lines: Snakemake's
    loader keeps the last value silently."""
    import yaml

    found: list[str] = []

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in seen:
                    found.append(
                        f"{path}: key {key!r} is given twice in the same mapping (line {seen[key]} and line {line}); "
                        "the second would silently replace the first: keep one"
                    )
                else:
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, StrictLoader.construct_mapping)
    yaml.load(Path(path).read_text(encoding="utf-8"), Loader=StrictLoader)
    return found


def _defaults(schema_path: str | Path, block: str) -> str:
    """The schema's paper-scale sizes of ``block`` in words: 'n_train 30000, ...' (data), 'tasks [...]; mt.n 500,
    ...' (evaluation)."""
    from workflow_scripts.plan.checks.schema import load_schema

    spec = load_schema(schema_path)["properties"][block]["properties"]
    if block == "data":
        return ", ".join(f"{k} {v['default']}" for k, v in spec.items() if k.startswith("n_"))
    tasks = spec["tasks"]["default"]
    sizes = [f"{t}.n {spec[t]['properties']['n']['default']}" for t in tasks if "n" in spec[t].get("properties", {})]
    return f"tasks {tasks}; {', '.join(sizes)}"


def missing_blocks(config: dict, schema_path: str | Path) -> list[str]:
    """Errors for a config (as written, before the schema's defaults) that leaves out a block whose paper-scale
    defaults cannot be what it means: ``data`` where a language reads an l10n package (a few thousand pairs, far
    from a paper-scale split), ``evaluation`` where no model needs a GPU (workflow_scripts.plan.models; paper-scale
    evaluation of a CPU-sized model would take days). A model whose shape cannot be read counts as none here: the
    model checks name what is wrong with it."""
    from workflow_scripts.plan.models import GPU_PARAMETERS, ModelError, describe_models, in_words

    errors = []
    langs = config.get("languages") or {}
    l10n = [lang for lang, spec in langs.items() if (spec.get("corpus") or {}).get("kind") == "l10n"]
    if "data" not in config and l10n:
        errors.append(
            f"data: not set, so the schema's paper-scale defaults apply ({_defaults(schema_path, 'data')}), more "
            f"pairs than the l10n packages of {', '.join(l10n)} hold; give a data block (config.yaml has one)"
        )
    if "evaluation" not in config and config.get("models"):
        try:
            models = describe_models(config)
        except ModelError:
            return errors
        if not any(m.needs_gpu for m in models.values()):
            small = ", ".join(f"models.{name} {in_words(m.parameters)}" for name, m in models.items())
            paper = _defaults(schema_path, "evaluation")
            errors.append(
                f"evaluation: not set, so the schema's paper-scale defaults apply ({paper}), days of evaluation for "
                f"models too small to need a GPU ({small} parameters, under {in_words(GPU_PARAMETERS)}); give an "
                "evaluation block (config.yaml has one)"
            )
    return errors


def unset_evaluation(config: dict, schema_path: str | Path) -> list[str]:
    """A warning when the config (as written, before the schema's defaults) has no ``evaluation`` block: the
    schema's defaults are paper-scale (item counts of the paper's runs), easy to start without meaning to."""
    if "evaluation" in config:
        return []
    return [
        f"evaluation: not set, so the schema's paper-scale defaults apply ({_defaults(schema_path, 'evaluation')}); "
        "give an evaluation block for a smaller run"
    ]


def unwritable_output(folder: str | Path, write: bool = True) -> str | None:
    """Why a run could not write its outputs under ``folder`` (the run's folder ``results/<run>/``), or None.

    A path under a file is refused whatever ``write`` says (a dry run too: Snakemake cannot even list it). With
    ``write``, a write probe, not only ``os.access``: a read-only mount refuses it whatever the mode bits say, even
    to root. A folder not created yet is probed at its nearest existing parent, where the run creates it.
    """
    import os
    import tempfile

    folder = Path(folder)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{str(probe)!r} is a file, so the run cannot create its output folder {str(folder)!r} there"
    if not write:
        return None
    outcome = f"so no job can write its outputs under {str(folder)!r}: make it writable, or run elsewhere"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{str(probe)!r} is not writable, {outcome}"
    try:
        fd, name = tempfile.mkstemp(prefix=".write-probe-", dir=probe)
    except OSError as e:
        return f"cannot write in {str(probe)!r} ({e.strerror}), {outcome}"
    os.close(fd)
    os.unlink(name)
    return None
