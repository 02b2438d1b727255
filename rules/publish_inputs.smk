# Input functions and parameters of the model card and publish rules (rules/publish.smk): which cells get a card and
# which are uploaded where (workflow_scripts/publish/plan.py), and what each card is told of its cell.
from workflow_scripts import languages
from workflow_scripts.hub_cache import is_hub_id
from workflow_scripts.publish import plan as publish_plan
from workflow_scripts.steps import corpus_label, data_label, mt_label

PUBLISH = config["publish"]
CARD_CELLS = publish_plan.adapted(CELLS)
PUBLISH_CELLS = publish_plan.selected(PUBLISH, CELLS)
_publish_problems = publish_plan.selection_problems(PUBLISH, CELLS)
if _publish_problems:
    raise WorkflowError(
        "invalid configuration:\n  - " + "\n  - ".join(_publish_problems)
    )
# the cards' provenance: the configuration files as written (a changed default of the schema changes no card)
CONFIG_FINGERPRINT = publish_plan.config_fingerprint(workflow.configfiles)
if PUBLISH_CELLS:
    print(
        f"publish: {len(PUBLISH_CELLS)} cell(s) to the hub"
        f" ({'private' if PUBLISH['private'] else 'public'}):",
        file=sys.stderr,
    )
    for _model, _lang, _m in PUBLISH_CELLS:
        _repo = publish_plan.repo_id(PUBLISH["repo_prefix"], _model, _lang, _m.slug)
        print(f"  {_model}/{_lang}/{_m.slug} -> {_repo}", file=sys.stderr)


def card_targets():
    """Every adapted cell's model card."""
    return [
        paths.model_card(model, lang, m.slug, RESULTS) for model, lang, m in CARD_CELLS
    ]


def publish_targets():
    """The upload record of every cell publish selects (none unless publish.repo_prefix is set)."""
    return [
        paths.publish_record(model, lang, m.slug, RESULTS)
        for model, lang, m in PUBLISH_CELLS
    ]


def card_slugs():
    return slug_regex([m for _, _, m in CARD_CELLS]) or "^$"


def publish_slugs():
    return slug_regex([m for _, _, m in PUBLISH_CELLS]) or "^$"


def card_kind(m):
    """What a cell's model is: a MuMo head, an ElChat merge, a LAPT-trained or an initialized-only model."""
    if m.is_mumo:
        return "mumo"
    if m.posthoc == "elchat":
        return "elchat"
    return "lapt" if m.trains else "initialized"


def card_stats(wc):
    """The stats JSON of the training the cell's model comes from (none for an initialized-only model)."""
    m = METHOD_BY_SLUG[wc.method]
    if m.is_mumo:
        init = LAYOUT.mumo_init(m)
        return paths.mumo_file("train_stats.json", wc.model, wc.lang, init, RESULTS)
    trained = m.adapted if m.posthoc == "elchat" else m
    if not trained.trains:
        return []
    return paths.train_stats(wc.model, wc.lang, trained.slug, RESULTS)


def publish_model(wc):
    return LAYOUT.model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method])


def owns_model_folder(m):
    """A trained or merged cell's model folder is its own: the card is also written there as README.md."""
    return not m.is_mumo and (m.trains or m.posthoc != "none")


def card_options(wc):
    """The card job's optional flags: the training stats, and the model folder the card is copied into."""
    m = METHOD_BY_SLUG[wc.method]
    stats, options = card_stats(wc), []
    if stats:
        options += ["--stats", stats]
    if owns_model_folder(m):
        options += ["--copy-into", publish_model(wc)]
    return shlex.join(options)


def card_data(lang):
    """A language's corpus and MT pairs in the card: kind, label, licence and hub id."""
    spec = config["languages"][lang]
    corpus, mt = spec["corpus"], spec.get("mt", {"kind": "l10n"})
    mt_hub = (
        mt.get("root")
        if mt["kind"] == "flores" and is_hub_id(mt.get("root", ""))
        else None
    )
    corpus_licence, mt_licence = publish_plan.data_licences(corpus["kind"], mt["kind"])
    return {
        "corpus": {
            "kind": corpus["kind"],
            "label": corpus_label(config, lang),
            "licence": corpus_licence,
        },
        "mt": {
            "kind": mt["kind"],
            "label": mt_label(config, lang),
            "licence": mt_licence,
            "hub_id": mt_hub,
        },
    }


def card_base(model):
    spec = config["models"][model]
    keys = ("kind", "path", "revision", "package", "file", "license")
    base = {"key": model, **{k: spec[k] for k in keys if k in spec}}
    base["base_model"] = spec.get("base_model") or (
        spec["path"] if spec["kind"] == "hub" else None
    )
    return base


def publish_repo(wc):
    return publish_plan.repo_id(PUBLISH["repo_prefix"], wc.model, wc.lang, wc.method)


def card_spec_json(wc):
    """The cell, its recipe and its provenance for workflow_scripts.publish.card."""
    m, lang = METHOD_BY_SLUG[wc.method], wc.lang
    kind = card_kind(m)
    size = LAYOUT.vocab(lang, "replace" if m.vocab == "replace" else "aux")
    aux = None
    if m.expands and m.vocab == "expand":
        aux = paths.aux_tokenizer(wc.model, lang, LAYOUT.vocab(lang), "<run>")
    spec = {
        "cell": m.cell(wc.model, lang, size),
        "kind": kind,
        "hparams": json.loads(
            mumo_hparams_json(wc) if kind == "mumo" else hparams_json(wc)
        ),
        "seed": config["seed"],
        "base": card_base(wc.model),
        "language": {"code": lang, "name": languages.language_name(lang)},
        "data": card_data(lang),
        "data_label": data_label(LAYOUT, lang),
        "aux_tokenizer": aux,
        "chat": (
            json.dumps(config["models"][wc.model]["chat"]) if kind == "elchat" else None
        ),
        "run": RUN,
        "config_files": [str(f) for f in workflow.configfiles],
        "config_fingerprint": CONFIG_FINGERPRINT,
        "repo_id": publish_repo(wc) if (wc.model, lang, m) in PUBLISH_CELLS else None,
    }
    return json.dumps(spec, sort_keys=True)


def publish_gguf(wc):
    """The cell's GGUF files, where export.gguf writes them and publish.gguf uploads them (MuMo has none)."""
    if not PUBLISH["gguf"] or METHOD_BY_SLUG[wc.method].is_mumo:
        return []
    return gguf_files(wc)


def publish_gguf_option(wc, input):
    return shlex.join(["--gguf", *input.gguf]) if input.gguf else ""
