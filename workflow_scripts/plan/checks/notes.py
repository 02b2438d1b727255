"""What planning prints beside the plan: settings that run but are probably not meant (``config warning:``), and
the checks of the data and models that happen later, in a job or in preflight (``checked later:``)."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.plan.grid import Grid, hparam


def config_warnings(config: dict, grid: Grid | None = None) -> list[str]:
    """Settings that run but are probably not meant (printed at planning time): a checkpoint interval that reaches
    the last step, so a killed LAPT job has nothing to resume from. ``grid``: the config's (``Grid.of(config)``
    without it)."""
    from workflow_scripts.lapt import PROCEDURES

    warnings = []
    grid = Grid.of(config) if grid is None else grid
    first = grid.first
    for model, _, m in grid.cells:
        if not m.trains or m.procedure not in PROCEDURES:
            continue
        every, every_key = hparam(config, model, first[m.slug], "checkpoint_every")
        max_steps, steps_key = hparam(config, model, first[m.slug], "max_steps")
        if max_steps is not None and every is not None and every >= max_steps:
            stages = len(PROCEDURES[m.procedure].stages)
            when = "at the end of each stage" if stages > 1 else "at the end"
            warnings.append(
                f"{every_key}: {every} is not smaller than {steps_key.split(' ')[0]} {max_steps} (method {m.slug}, "
                f"model {model}): the only checkpoint is written {when}, so a job killed before then loses all its "
                f"training; lower checkpoint_every"
            )
    return list(dict.fromkeys([*warnings, *_curve_beyond_steps(config, grid), *evaluation_sizes(config)]))


def _curve_beyond_steps(config: dict, grid: Grid) -> list[str]:
    """training.curve_points above what a LAPT job can measure: one point before the first step and one after each
    (lapt.curve.curve_steps drops the rest)."""
    from workflow_scripts.lapt import PROCEDURES
    from workflow_scripts.plan.grid import curve_points

    points, first, capped = curve_points(config), grid.first, {}
    for model, _, m in grid.cells:
        if not points or not m.trains or m.procedure not in PROCEDURES:
            continue
        max_steps, steps_key = hparam(config, model, first[m.slug], "max_steps")
        if max_steps is not None and points > max_steps + 1:
            capped.setdefault((steps_key.split(" ")[0], max_steps), []).append(f"{m.slug} ({model})")
    return [
        f"training.curve_points: {points} is more than {key} {steps} allows (methods "
        f"{', '.join(dict.fromkeys(cells))}): the curve gets a point before the first step and one after each, "
        f"{steps + 1} in all; lower curve_points "
        f"to at most {steps + 1}"
        for (key, steps), cells in capped.items()
    ]


def evaluation_sizes(config: dict) -> list[str]:
    """An ``evaluation.<task>.n`` above the items its data holds, with the count really used: the held-out set holds
    ``data.n_heldout`` sentences (ppl), the MT test set ``data.n_mt`` pairs (mt, and speed's mt items); a set whose
    rule selects its pairs (an MT kind's ``selected``: FLORES) holds at most that (its devtest may hold fewer: the
    evaluation step records n requested / n used)."""
    from workflow_scripts.mt_sources import MT_SOURCES, langs_of

    data, evaluation = config["data"], config["evaluation"]
    tasks = set(evaluation["tasks"])
    mt_set = f"the {data['n_mt']} MT pairs of each language (data.n_mt)"
    for name, spec in MT_SOURCES.items():
        selected = sorted(langs_of(config, name))
        if spec.selected and selected:
            mt_set += f"; {spec.selected} ({', '.join(selected)}): at most that many"
    sets = {
        "mt": (data["n_mt"], mt_set, "mt evaluates"),
        "ppl": (data["n_heldout"], f"the {data['n_heldout']} held-out sentences (data.n_heldout)", "ppl scores"),
        "speed": (data["n_mt"], mt_set, "speed times mt on"),
    }
    warnings = []
    for task, (held, what, verb) in sets.items():
        n = evaluation[task]["n"]
        if task in tasks and n > held:
            warnings.append(
                f"evaluation.{task}.n: {n} is more than {what}: {verb} {held}; lower evaluation.{task}.n to "
                f"{held} or raise the data size"
            )
    return warnings


def deferred_checks(config: dict, workdir: Path | None = None) -> list[str]:
    """What cannot be checked at planning time without downloading or streaming, and when it is checked (a local
    corpus file, relative to ``workdir``, is counted whole at planning up to text_file.CORPUS_COUNT_BYTES); a corpus
    kind's notes come from its module (workflow_scripts/corpora/), an MT kind's from its own
    (workflow_scripts/mt_sources/)."""
    from workflow_scripts import corpora
    from workflow_scripts.mt_sources import MT_SOURCES, langs_of

    workdir = workdir or Path.cwd()
    # each kind's notes for its languages; kinds sharing a notes function get its notes once, for all of theirs
    by_notes: dict = {}
    for lang in config["languages"]:
        kind = corpora.of(config, lang)
        if kind.notes is not None:
            by_notes.setdefault(kind.notes, {})[lang] = kind.order
    notes = []
    for notes_of, langs in sorted(by_notes.items(), key=lambda item: min(item[1].values())):
        notes += notes_of(config, list(langs), workdir)
    hub = [name for name, spec in config["models"].items() if spec["kind"] == "hub"]
    chats = {f"{n}.chat": spec["chat"] for n, spec in config["models"].items() if isinstance(spec.get("chat"), dict)}
    hub += [name for name, chat in chats.items() if chat["kind"] == "hub"]
    if hub:
        notes.append(
            f"models.*.path ({', '.join(hub)}): `python -m tools.preflight` checks access (gated licences need a "
            "token: HF_TOKEN or `hf auth login`) and `snakemake download_all` fetches them on the login node; "
            "prepare_source_model (a chat sibling: prepare_chat_model) then reads them offline"
        )
    for name, spec in MT_SOURCES.items():
        langs = langs_of(config, name)
        if spec.notes is not None and langs:
            notes += spec.notes(config, langs, workdir)
    return notes
