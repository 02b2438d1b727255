# Input functions and parameters of the data, item-selection and download rules (rules/data.smk, rules/items.smk).
# Paths come from workflow_scripts/plan/paths.py (LAYOUT); a corpus kind's facts from its module (workflow_scripts/corpora/:
# the file its rule reads); what a dataset or asset download needs from the config, here.
from workflow_scripts import corpora
from workflow_scripts.corpora import orchid as orchid_corpus, text_file
from workflow_scripts.harness.datasets import needed_sources, task_source
from workflow_scripts.plan.steps import L10N_LABEL, mt_label
from workflow_scripts.sum_assets import repo_slug


def l10n_deb(wc):
    """The language's l10n package: the MT test set's (mt.deb), else the corpus's."""
    return LAYOUT.l10n_deb(wc.lang)


def l10n_n_train(wc):
    """D's size from the l10n pairs: data.n_train where the corpus is l10n; else 0, all remaining pairs (only the MT
    test set and the mc proxy's held-out pairs are read, as with the l10n corpus)."""
    return config["data"]["n_train"] if LAYOUT.corpus_kind(wc.lang) == "l10n" else 0


def corpus_file(wc):
    """The file a language's corpus is made from, as its kind's module says (workflow_scripts/corpora/), a file the
    config names or where a download writes it."""
    return LAYOUT.corpus_file(wc.lang)


def own_mt_path(wc):
    """Your own MT pairs file (mt kinds tsv, jsonl)."""
    return config["languages"][wc.lang]["mt"]["path"]


def mt_label_of(wc):
    return mt_label(config, wc.lang)


def corpus_url(wc):
    return config["languages"][wc.lang]["corpus"]["url"]


def flores_root(wc):
    return config["languages"][wc.lang]["mt"]["root"]


def flores_codes(wc):
    from workflow_scripts.corpus import FLORES_ENGLISH, flores_code

    return [FLORES_ENGLISH, flores_code(wc.lang)]


def sum_mirror(wc):
    """The sum dataset's folder (hub mirror or configured folder) that the items step selects from."""
    return LAYOUT.dataset_dir(task_source("sum", wc.lang).dataset)


def items_tokenizer(wc):
    """items paper: the length tokenizer's folder (configured folder, or the download_items_tokenizer output)."""
    return LAYOUT.items_tokenizer() if wc.selection == "paper" else []


def items_tokenizer_arg(wc):
    folder = items_tokenizer(wc)
    return f"--tokenizer {shlex.quote(folder)}" if folder else ""


def dataset_hub_id(wc):
    hub_id = config["evaluation"]["datasets"].get(wc.dataset)
    if not hub_id:
        raise WorkflowError(
            f"evaluation.datasets.{wc.dataset}: no hub copy; give a local folder in the hub layout (README)"
        )
    return hub_id


def download_subsets(wc):
    """The subsets of a dataset that the configured tasks and languages read (English for the retention checks)."""
    return sorted(needed_sources(config).get(wc.dataset, {}).get("subsets", []))


def download_splits(wc):
    """Its evaluation and few-shot splits."""
    return sorted(needed_sources(config).get(wc.dataset, {}).get("splits", ["test"]))


def model_role_spec(wc):
    """The models entry (role source) or its chat sibling (role chat) as JSON."""
    spec = config["models"][wc.model]
    if wc.role == "chat":
        return json.dumps(spec["chat"], sort_keys=True)
    # the model cards' facts (base_model, license) change no download
    return json.dumps(
        {k: v for k, v in spec.items() if k not in ("base_model", "license")},
        sort_keys=True,
    )


def hub_id_of_repo(wc):
    """The configured hub id whose download folder is {repo} (evaluation.sum.mt5_spiece or .bleurt)."""
    settings = config["evaluation"]["sum"]
    for value in (settings["mt5_spiece"], settings["bleurt"]):
        if value and repo_slug(value) == wc.repo:
            return value
    raise WorkflowError(
        f"no evaluation.sum.mt5_spiece or evaluation.sum.bleurt hub id downloads to {wc.repo}"
    )


def download_targets():
    """Everything a compute job would otherwise fetch (the one-shot target download_all)."""
    return LAYOUT.download_targets()
