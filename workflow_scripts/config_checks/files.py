"""Checks of the files around the config: the config files as written, before the schema fills in its defaults
(keys given twice, which Snakemake's loader keeps the last of silently; a missing ``evaluation`` block, whose
defaults are paper-scale), and the output folder a real run writes to."""

from __future__ import annotations

from pathlib import Path


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


def unset_evaluation(config: dict, schema_path: str | Path) -> list[str]:
    """A warning when the config (as written, before the schema's defaults) has no ``evaluation`` block: the
    schema's defaults are paper-scale (item counts of the paper's runs), easy to start without meaning to."""
    import yaml

    if "evaluation" in config:
        return []
    evaluation = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))["properties"]["evaluation"]
    tasks = evaluation["properties"]["tasks"]["default"]
    sizes = []
    for task in tasks:
        spec = evaluation["properties"].get(task, {}).get("properties", {})
        if "n" in spec and "default" in spec["n"]:
            sizes.append(f"{task}.n {spec['n']['default']}")
    return [
        f"evaluation: not set, so the schema's paper-scale defaults apply (tasks {tasks}; {', '.join(sizes)}); "
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
