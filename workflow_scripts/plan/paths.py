"""Where each output of a run lies: one function per output, read by the rules (rules/*.smk), the results table
(workflow_scripts/tables.py) and the cost table (workflow_scripts/paper/costs.py).

Every function returns a path under ``root``: a run's folder (results/<run>/, the rules' path variable ``<results>``)
or the downloads shared by every run (results/downloads/, ``<downloads>``). The other arguments default to the rules'
wildcards, so one function gives a rule's output pattern (``eval_file(name="mt.json")``), a job's file (every value
given) or, given ``"*"``, a glob pattern. ``Layout`` holds the choices a configuration makes (which tokenizer, model
folder or dataset a cell reads); docs/grid.md lists the layout.
"""

from __future__ import annotations

import glob
from pathlib import Path

RESULTS = "<results>"
DOWNLOADS = "<downloads>"
MODEL, LANG, METHOD = "{model}", "{lang}", "{method}"


# data (rules/data.smk, rules/items.smk)
def data_file(lang: str = LANG, source: str = "{corpus}", name: str = "train.txt", root: str = RESULTS) -> str:
    """train.txt, heldout.txt or mt.tsv of a language from its corpus (a kind of workflow_scripts/corpora/) or MT
    source (a kind of workflow_scripts/mt_sources/)."""
    return f"{root}/data/{lang}/{source}/{name}"


def mc_proxy(lang: str = LANG, root: str = RESULTS) -> str:
    """The embedded default's mc proxy folder (rule mc_proxy)."""
    return data_file(lang, "l10n", "mc_proxy", root)


def sum_items(lang: str = LANG, selection: str = "{selection}", root: str = RESULTS) -> str:
    """sum's selected items as a hub-layout folder (rule select_sum_items)."""
    return f"{root}/data/{lang}/sum_items/{selection}"


def sum_item_ids(lang: str = LANG, selection: str = "{selection}", root: str = RESULTS) -> str:
    """The ids of sum's selected items."""
    return f"{sum_items(lang, selection, root)}.ids.json"


# models and tokenizers (rules/model.smk, rules/vocab.smk, rules/initialize.smk)
def source_model(model: str = MODEL, role: str = "source", root: str = RESULTS) -> str:
    """A model's source folder, or (role ``chat``) its instruction-tuned sibling."""
    return f"{root}/models/{model}/{role}"


def tokenizer_dir(model: str = MODEL, lang: str = LANG, name: str = "aux{aux}.k{k}", root: str = RESULTS) -> str:
    """A tokenizer of a model and language: aux<|V_aux|> (T_aux), aux<|V_aux|>.k<k> (T_t: the source tokenizer with
    the k most frequent new tokens of T_aux) or replace<size> (the replacement tokenizer)."""
    return f"{root}/{model}/{lang}/tokenizer/{name}"


def model_info(model: str = MODEL, role: str = "source", root: str = RESULTS) -> str:
    """What preparing a source (or chat) model recorded: where it came from, its size and dtype."""
    return f"{source_model(model, role, root)}_info.json"


def aux_tokenizer(model: str = MODEL, lang: str = LANG, aux: str = "{aux}", root: str = RESULTS) -> str:
    """T_aux's tokenizer.json."""
    return f"{tokenizer_dir(model, lang, f'aux{aux}', root)}/tokenizer.json"


def report(folder: str) -> str:
    """The report a step writes beside its output folder (a tokenizer, an initialized model)."""
    return f"{folder}.report.json"


def initialized_model(
    model: str = MODEL, lang: str = LANG, init: str = "{init}", vocab: str = "aux{aux}.k{k}", root: str = RESULTS
) -> str:
    """A model with its new rows set (``vocab``: aux<|V_aux|>.k<k>, or replace<size>); ``.report.json`` beside it."""
    return f"{root}/{model}/{lang}/init/{init}.{vocab}"


def mumo_file(name: str, model: str = MODEL, lang: str = LANG, init: str = "{head_init}", root: str = RESULTS) -> str:
    """A file of a MuMo head's training: ``train_stats.json``, ``loss.tsv``, or its folder ``head``."""
    return f"{root}/{model}/{lang}/mumo/{init}-init/{name}"


def mumo_head(model: str = MODEL, lang: str = LANG, init: str = "{head_init}", root: str = RESULTS) -> str:
    """A MuMo folder (head, V_mono, source model reference), shared by the cells decoding with and without
    verification."""
    return mumo_file("head", model, lang, init, root)


# a cell: model x language x method (rules/lapt.smk, rules/elchat.smk, rules/evaluate.smk, rules/export.smk)
def cell_dir(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    return f"{root}/{model}/{lang}/{method}"


def trained_model(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """A trained (lapt) or merged (elchat) model."""
    return f"{cell_dir(model, lang, method, root)}/model"


def loss_curve(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    return f"{cell_dir(model, lang, method, root)}/loss.tsv"


def curve(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """Held-out bits per character over a LAPT run (step, tokens, bits_per_char, n_sentences; step 0: before it),
    written when training.curve_points > 0."""
    return f"{cell_dir(model, lang, method, root)}/curve.tsv"


def train_stats(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    return f"{cell_dir(model, lang, method, root)}/train_stats.json"


def checkpoints(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    return f"{cell_dir(model, lang, method, root)}/checkpoints"


def elchat_report(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """What the ElChat merge recorded (rule elchat)."""
    return f"{cell_dir(model, lang, method, root)}/elchat.json"


def eval_file(
    model: str = MODEL, lang: str = LANG, method: str = METHOD, name: str = "{task}.json", root: str = RESULTS
) -> str:
    """An evaluation record (<task>.json, speed.json, serve_speed.json, sum_bleurt.json) or a cell's predictions."""
    return f"{cell_dir(model, lang, method, root)}/eval/{name}"


def model_card(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """An adapted cell's Hugging Face model card (rule model_card; also its own model folder's README.md)."""
    return f"{cell_dir(model, lang, method, root)}/card/README.md"


def publish_record(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """What publishing a cell uploaded: repository, commit, files (rule publish)."""
    return f"{cell_dir(model, lang, method, root)}/publish.json"


def gguf_dir(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    return f"{cell_dir(model, lang, method, root)}/gguf"


def gguf_file(
    model: str = MODEL, lang: str = LANG, method: str = METHOD, gguf_type: str = "{type}", root: str = RESULTS
) -> str:
    return f"{gguf_dir(model, lang, method, root)}/model.{gguf_type}.gguf"


def gguf_fidelity(model: str = MODEL, lang: str = LANG, method: str = METHOD, root: str = RESULTS) -> str:
    """The GGUF check of a cell: llama.cpp against transformers (rule check_gguf)."""
    return f"{gguf_dir(model, lang, method, root)}/fidelity.json"


# whole-run outputs (rules/tables.smk, rules/analysis.smk) and job records
def table(name: str, root: str = RESULTS) -> str:
    """results.csv, results.md and their figure and HTML (rule tables)."""
    return f"{root}/tables/{name}"


def paper_dir(root: str = RESULTS) -> str:
    """The folder of the paper's tables, figures and cost table (rule paper_tables)."""
    return f"{root}/paper"


def findings_dir(root: str = RESULTS) -> str:
    """The findings page: quality against speed, learning curves, the k trade-off and their paragraph (rule
    findings)."""
    return f"{root}/findings"


def analysis_file(name: str, root: str = RESULTS) -> str:
    """fragmentation.csv, init_analysis.csv and init_analysis/<cell>.json."""
    return f"{root}/analysis/{name}"


def benchmark(rule: str = "{rule}", name: str = "{name}", root: str = RESULTS) -> str:
    """A job's Snakemake benchmark record (wall and CPU seconds: the cost table's input); ``name`` is the job's
    wildcard values joined by dots."""
    return f"{root}/benchmarks/{rule}/{name}.tsv"


# downloads shared by every run (rules/data.smk, rules/items.smk); a corpus kind's or MT kind's download is its
# module's (workflow_scripts/corpora/, workflow_scripts/mt_sources/)
def hub_dataset(name: str = "{dataset}", root: str = DOWNLOADS) -> str:
    return f"{root}/hf/{name}"


def hub_model_record(model: str = MODEL, role: str = "{role}", root: str = DOWNLOADS) -> str:
    return f"{root}/models/{model}.{role}.json"


def items_tokenizer(root: str = DOWNLOADS) -> str:
    return f"{root}/items_tokenizer"


def mt5_spiece(repo: str = "{repo}", root: str = DOWNLOADS) -> str:
    return f"{root}/mt5/{repo}/spiece.model"


def bleurt(repo: str = "{repo}", root: str = DOWNLOADS) -> str:
    return f"{root}/bleurt/{repo}"


def found(pattern: str) -> list[Path]:
    """The files matching a pattern made by the functions above with ``"*"`` values, sorted."""
    return sorted(Path(p) for p in glob.glob(pattern))


def glob_root(folder: str | Path) -> str:
    """A folder as the ``root`` of a glob pattern (its own glob characters escaped)."""
    return glob.escape(str(folder))


class Layout:
    """The paths of one configuration: which corpus, tokenizer, model folder and dataset each cell reads, under the
    run's folder ``results`` and the shared ``downloads``. ``methods`` maps a method's slug to its Method."""

    def __init__(self, config: dict, methods: dict, results: str, downloads: str) -> None:
        self.config, self.methods, self.results, self.downloads = config, methods, results, downloads

    def vocab(self, lang: str, kind: str = "aux") -> int:
        """|V_aux| (or, ``kind`` replace, the replacement tokenizer's size) of a language: its own, else the global."""
        from workflow_scripts.plan.grid import vocab_size

        return vocab_size(self.config, lang, kind)[0]

    def corpus_kind(self, lang: str) -> str:
        return self.config["languages"][lang]["corpus"]["kind"]

    def mt_kind(self, lang: str) -> str:
        from workflow_scripts.mt_sources import mt_of

        return mt_of(self.config, lang)["kind"]

    def data_file(self, lang: str, name: str) -> str:
        """train.txt / heldout.txt come from the corpus source; mt.tsv from the MT source."""
        source = self.mt_kind(lang) if name == "mt.tsv" else self.corpus_kind(lang)
        return data_file(lang, source, name, self.results)

    def l10n_deb(self, lang: str) -> str | None:
        """The Debian package of a language's l10n pairs: the MT test set's (mt.deb), else the corpus's."""
        spec = self.config["languages"][lang]
        return spec.get("mt", {}).get("deb") or spec["corpus"].get("deb")

    def corpus_file(self, lang: str) -> str | None:
        """The file a language's corpus rule reads (its kind's ``source``): a file the config names, or where a local
        rule downloads it; None for a kind that reads none."""
        from workflow_scripts.corpora import source_of

        source = source_of(self.config, lang, self.downloads)
        return source.path if source else None

    def source_model(self, model: str) -> str:
        return source_model(model, "source", self.results)

    def chat_model(self, model: str) -> str:
        """The instruction-tuned sibling of a model (models.<m>.chat): the source folder itself when it is `source`."""
        chat = self.config["models"][model]["chat"]
        return self.source_model(model) if chat == "source" else source_model(model, "chat", self.results)

    def init_dir(self, model: str, lang: str, method) -> str:
        """A method's initialized model; a training seed other than the config's has its own (rules/initialize.smk
        initialize_seeded) where the initialization draws (Random's rows take the seed), and shares the config seed's
        where it draws nothing (grid.init_seed_suffix)."""
        from workflow_scripts.plan.grid import init_seed_suffix

        vocab = (
            f"replace{self.vocab(lang, 'replace')}"
            if method.vocab == "replace"
            else f"aux{self.vocab(lang)}.k{method.k}"
        )
        return initialized_model(model, lang, method.init, vocab + init_seed_suffix(method), self.results)

    def mumo_init(self, method) -> str:
        """A MuMo method's head initialization: its init (Random), or mumo.init for init none (Multi by default)."""
        return method.init if method.init != "none" else self.config["mumo"]["init"]

    def model_folder(self, model: str, lang: str, method) -> str:
        """A method's model: source, initialized (no training), trained, merged (a post-hoc method, ElChat), or the
        MuMo folder (head, V_mono, source reference; shared by MuMo and its noverify ablation)."""
        if method.is_mumo:
            return mumo_head(model, lang, self.mumo_init(method), self.results)
        if method.trains or method.posthoc != "none":
            return trained_model(model, lang, method.slug, self.results)
        return self.init_dir(model, lang, method) if method.expands else self.source_model(model)

    def eval_file(self, model: str, lang: str, method: str, name: str) -> str:
        return eval_file(model, lang, method, name, self.results)

    def dataset_dir(self, name: str) -> str:
        """An evaluation dataset: a configured local folder as it is, else its mirror in the downloads."""
        setting = self.config["evaluation"]["datasets"].get(name)
        return setting if setting and Path(setting).is_dir() else hub_dataset(name, self.downloads)

    def sum_items(self, lang: str) -> str:
        return sum_items(lang, self.config["evaluation"]["items"], self.results)

    def harness_data(self, task: str, lang: str) -> str | list:
        """The dataset folder a task reads (nothing where the language has no data: the job records why)."""
        from workflow_scripts.harness.datasets import Unavailable, task_source

        base, task_lang = task_lang_of(task, lang)
        evaluation = self.config["evaluation"]
        if task == "mc" and evaluation["mc"]["source"] == "l10n_proxy":
            return mc_proxy(lang, self.results)
        try:
            name = task_source(base, task_lang).dataset
        except Unavailable:
            return []
        # no hub copy and no folder (GreekSUM): the job records "–" with the reason
        if not evaluation["datasets"].get(name):
            return []
        if task == "sum" and evaluation["items"] != "shuffle":
            return self.sum_items(lang)  # exactly the selected rows (rules/items.smk)
        return self.dataset_dir(name)

    def items_tokenizer(self) -> str:
        """The items paper length tokenizer: a configured folder, or the download_items_tokenizer output."""
        setting = self.config["evaluation"]["items_tokenizer"]
        return setting if Path(setting).is_dir() else items_tokenizer(self.downloads)

    def mt5_spiece(self) -> str | list:
        """mT5's spiece.model where ROUGE-L reads mT5 pieces: a local file, or the download rule's output."""
        from workflow_scripts.sum_assets import reads_mt5_spiece, repo_slug

        settings = self.config["evaluation"]["sum"]
        if not reads_mt5_spiece(settings):
            return []
        value = settings["mt5_spiece"]
        return value if Path(value).is_file() else mt5_spiece(repo_slug(value), self.downloads)

    def bleurt(self) -> str | list:
        """The BLEURT checkpoint folder: a local folder, or the download rule's output."""
        from workflow_scripts.sum_assets import repo_slug

        value = self.config["evaluation"]["sum"]["bleurt"]
        if not value:
            return []
        return value if Path(value).is_dir() else bleurt(repo_slug(value), self.downloads)

    def download_targets(self) -> list[str]:
        """Everything preflight lists that a compute job would otherwise fetch: hub models (into the Hugging Face
        cache), the corpus files a local rule downloads (a url, a pinned archive), an MT kind's downloads (FLORES+
        files: cache), the evaluation datasets' mirrors and sum's metric assets."""
        from workflow_scripts import mt_sources
        from workflow_scripts.corpora import LocalFile, source_of
        from workflow_scripts.harness.datasets import items_tokenizer_needed, needed_sources

        config, out = self.config, []
        for m, spec in config["models"].items():
            if spec["kind"] == "hub":
                out.append(hub_model_record(m, "source", self.downloads))
            chat = spec.get("chat")
            if isinstance(chat, dict) and chat.get("kind") == "hub":
                out.append(hub_model_record(m, "chat", self.downloads))
        for lang in config["languages"]:
            source = source_of(config, lang, self.downloads)
            if source is not None and not isinstance(source, LocalFile) and source.path not in out:
                out.append(source.path)
            mt = mt_sources.mt_of(config, lang)
            download = mt_sources.of(config, lang).download
            fetched = download(lang, mt, self.downloads) if download else None
            out += [fetched] if fetched else []
        for name in sorted(needed_sources(config)):
            setting = config["evaluation"]["datasets"].get(name)
            if setting and not Path(setting).is_dir():
                out.append(hub_dataset(name, self.downloads))
        if items_tokenizer_needed(config):
            out.append(items_tokenizer(self.downloads))
        if "sum" in config["evaluation"]["tasks"]:  # ROUGE-L's segmentation and BLEURT, where they are hub ids
            out += [p for p in (self.mt5_spiece(), self.bleurt()) if p and p.startswith(f"{self.downloads}/")]
        return out


def task_lang_of(task: str, lang: str) -> tuple[str, str]:
    """A task's base task and the language it reads: the English retention checks (``<task>_en``) read English."""
    return (task.removesuffix("_en"), "en") if task.endswith("_en") else (task, lang)
