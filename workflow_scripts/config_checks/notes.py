"""What planning prints beside the plan: settings that run but are probably not meant (``config warning:``), and
the checks of the data and models that happen later, in a job or in preflight (``checked later:``)."""

from __future__ import annotations

from workflow_scripts.grid import expand_grid, first_entries, hparam


def config_warnings(config: dict) -> list[str]:
    """Settings that run but are probably not meant (printed at planning time): a checkpoint interval that reaches
    the last step, so a killed LAPT job has nothing to resume from."""
    from workflow_scripts.lapt import PROCEDURES

    warnings = []
    first = first_entries(config)
    for model, _, m in expand_grid(config):
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
