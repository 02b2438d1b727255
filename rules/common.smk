# Config validation, the grid, wildcard constraints and input functions. All Python lives here; rules are glue.
import json
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

sys.path.insert(0, workflow.basedir)
# Rules run `python -m workflow_scripts.<step>`: make the modules importable from any working directory, and,
# unless conda environments are in use, let `python` be the interpreter running Snakemake (the project's venv, even
# when it is not activated). The prefix keeps Snakemake's default bash strict mode.
_PATH_PREFIX = ""
if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
    _PATH_PREFIX = (
        "export PATH=" + shlex.quote(str(Path(sys.executable).parent)) + ":$PATH; "
    )
# Rule shells ignore SIGUSR1: Slurm sends it to the lapt job's processes before the time limit (rules/lapt.smk
# slurm_extra), and its default action would end the shell; the trainer installs its own handler and checkpoints.
shell.prefix(
    "set -euo pipefail; trap '' USR1; "
    + _PATH_PREFIX
    + "export PYTHONPATH="
    + shlex.quote(workflow.basedir)
    + "${{PYTHONPATH:+:$PYTHONPATH}}; "
)
from workflow_scripts.grid import (
    ConfigError,
    cell_hparams,
    expand_grid,
    first_entries,
    slug_regex,
    vocab_size,
    with_adapted,
    tasks_of,
)  # noqa: E402
from workflow_scripts.config_checks import (
    check_config,
    config_file_problems,
    config_warnings,
    deferred_checks,
    missing_blocks,
    schema_errors,
    unset_evaluation,
    unwritable_output,
)  # noqa: E402
from workflow_scripts.gpu_fit import gpu_fit_problems  # noqa: E402
from workflow_scripts.runs import (
    DOWNLOADS_ROOT,
    claim,
    plan_run,
    run_root,
    start_problem,
)  # noqa: E402
from workflow_scripts.resources import (
    rule_gpus,
    sized_resources,
    slurm_signal,
    workflow_gpu_class,
    workflow_gpu_problems,
    workflow_node_gpus,
)  # noqa: E402
from workflow_scripts.speed.plan import (
    problems as speed_plan_problems,
    runtime_minutes as speed_runtime_minutes,
)  # noqa: E402
from workflow_scripts.paper.specs import (
    FIGURE_TITLES,
    FIGURES as PAPER_FIGURES,
    TABLES as PAPER_TABLES,
    output_names as paper_output_names,
    report_title,
)  # noqa: E402

SCHEMA = Path(workflow.basedir) / "schemas" / "config.schema.yaml"
# the config files as written (YAML syntax, a key given twice) before the merged config is validated
_problems = [d for f in workflow.configfiles for d in config_file_problems(f)]
_problems = _problems or schema_errors(config, SCHEMA) or missing_blocks(config, SCHEMA)
if _problems:
    raise WorkflowError("invalid configuration:\n  - " + "\n  - ".join(_problems))
_unset = unset_evaluation(config, SCHEMA)  # before the defaults fill it in
validate(config, schema=str(SCHEMA), set_default=True)  # fills the schema's defaults
try:
    # paths resolve against the working directory, as Snakemake does
    # with the methods a post-hoc method starts from: trained as dependencies even when not listed
    METHODS = with_adapted(check_config(config, Path.cwd()))
    CELLS = expand_grid(config)
except ConfigError as e:
    raise WorkflowError(str(e)) from None
# Printed with the plan: settings that run but are probably not meant, and the data checks that happen later.
for _line in [*_unset, *config_warnings(config)]:
    print(f"config warning: {_line}", file=sys.stderr)
for _line in deferred_checks(config):
    print(f"checked later: {_line}", file=sys.stderr)

METHOD_BY_SLUG = {m.slug: m for m in METHODS}
# Every output of this configuration lies under results/<run>/ (workflow_scripts/runs.py); rules write
# "<results>/..." and "<downloads>/..." (Snakemake path variables), the functions here RESULTS and DOWNLOADS.
try:
    RUN, _outside_warning = plan_run(config, workflow.configfiles, Path.cwd())
except ValueError as e:
    raise WorkflowError(str(e)) from None
if _outside_warning:
    print(f"config warning: {_outside_warning}", file=sys.stderr)
config["run"] = RUN  # the report's front page (report/workflow.rst) names its folder
RESULTS = str(run_root(RUN))
DOWNLOADS = str(DOWNLOADS_ROOT)


pathvars:
    results=RESULTS,
    downloads=DOWNLOADS,


# the methods entry whose hparams each method trains with
FIRST_ENTRY = first_entries(config)


# The output folder: a path under a file stops any run here; a folder a real run cannot write (a dry run writes
# nothing) stops it when it starts, not in its first job, which records the config files that write it.
_unwritable = unwritable_output(RESULTS, write=False)
if _unwritable:
    raise WorkflowError(f"{RESULTS}: {_unwritable}")


onstart:
    _unwritable = unwritable_output(RESULTS)
    if _unwritable:
        raise WorkflowError(f"{RESULTS}: {_unwritable}")
    _problem = start_problem(RUN)
    if _problem:
        raise WorkflowError(_problem)
    claim(Path(RESULTS), workflow.configfiles, Path.cwd())


MODELS = list(config["models"])
# The profiles' GPU requests (set-resources, default-resources) against the rules and the models' size classes,
# before any job runs: a GPU on a rule that cannot use one, or a GPU profile leaving a 7B/8B/9B model's GPU rule without.
_gpu_problems = workflow_gpu_problems(
    workflow.resource_settings, {m: config["models"][m]["size"] for m in MODELS}
)
if _gpu_problems:
    raise WorkflowError(
        "GPU requests do not fit the workflow:\n  - " + "\n  - ".join(_gpu_problems)
    )
# Every LAPT job of a GPU size class against the memory of the GPU class the profiles ask for rule lapt (80 GB
# unless set-resources names an H200), sharded over up to node_gpus GPUs: refused before any job, naming the key.
_fit_problems = gpu_fit_problems(
    config,
    workflow_gpu_class(workflow.resource_settings),
    workflow_node_gpus(workflow.resource_settings),
)
if _fit_problems:
    raise WorkflowError(
        "LAPT jobs do not fit the GPU:\n  - " + "\n  - ".join(_fit_problems)
    )
# The speed step's memory peak per model against the GPU class the profiles ask for rule measure_speed
# (workflow_scripts/speed/plan.py).
_speed_problems = speed_plan_problems(
    config, workflow_gpu_class(workflow.resource_settings, "measure_speed")
)
if _speed_problems:
    raise WorkflowError(
        "speed settings do not fit the GPU:\n  - " + "\n  - ".join(_speed_problems)
    )
LANGUAGES = list(config["languages"])
TASKS = config["evaluation"]["tasks"]


wildcard_constraints:
    model="|".join(MODELS),
    lang="|".join(LANGUAGES),
    method=slug_regex(METHODS),
    init="|".join(sorted({m.init for m in METHODS if m.expands}) or ["none"]),
    k=r"\d+",
    aux=r"\d+",
    size=r"\d+",
    corpus="l10n|cc100",
    mt="l10n|flores",


def aux_vocab(lang):
    """|V_aux| for a language: its own setting, else the global one (small corpora support fewer merges)."""
    return vocab_size(config, lang, "aux")[0]


def replace_vocab(lang):
    """Size of the replacement tokenizer (vocab: replace) for a language: its own setting, else the global one."""
    return vocab_size(config, lang, "replace")[0]


def corpus_kind(lang):
    return config["languages"][lang]["corpus"]["kind"]


def mt_kind(lang):
    return config["languages"][lang].get("mt", {"kind": "l10n"})["kind"]


def data_file(lang, name):
    """train.txt / heldout.txt come from the corpus source; mt.tsv from the MT source."""
    source = mt_kind(lang) if name == "mt.tsv" else corpus_kind(lang)
    return f"{RESULTS}/data/{lang}/{source}/{name}"


L10N_LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"


def l10n_deb(wc):
    return config["languages"][wc.lang]["corpus"]["deb"]


def cc100_path(wc):
    """A configured local file, or the download_cc100 rule's output when the config gives a url."""
    corpus = config["languages"][wc.lang]["corpus"]
    return corpus.get("path") or f"{DOWNLOADS}/cc100/{wc.lang}.txt.xz"


def cc100_url(wc):
    return config["languages"][wc.lang]["corpus"]["url"]


def flores_root(wc):
    return config["languages"][wc.lang]["mt"]["root"]


def data_label(lang):
    if corpus_kind(lang) == "l10n":
        return L10N_LABEL
    return "CC-100" + (" / FLORES-200" if mt_kind(lang) == "flores" else "")


def corpus_train_file(wc):
    return data_file(wc.lang, "train.txt")


def corpus_heldout_file(wc):
    return data_file(wc.lang, "heldout.txt")


def mt_file(wc):
    return data_file(wc.lang, "mt.tsv")


def method_attr(name):
    """A params function returning one setting of the rule's method."""

    def get(wc):
        return getattr(METHOD_BY_SLUG[wc.method], name)

    return get


def source_model_dir(model):
    return f"{RESULTS}/models/{model}/source"


def source_model_of(wc):
    """The source model folder of a cell's model (its tokenizer re-counts generated text in source tokens)."""
    return source_model_dir(wc.model)


def tokenizer_dir(wc):
    m = METHOD_BY_SLUG[wc.method]
    return f"{RESULTS}/{wc.model}/{wc.lang}/tokenizer/aux{aux_vocab(wc.lang)}.k{m.k}"


def init_dir(model, lang, method):
    if method.vocab == "replace":
        return (
            f"{RESULTS}/{model}/{lang}/init/{method.init}.replace{replace_vocab(lang)}"
        )
    return (
        f"{RESULTS}/{model}/{lang}/init/{method.init}.aux{aux_vocab(lang)}.k{method.k}"
    )


def lapt_input_model(wc):
    """CPT-only trains the source model; expansion methods train their initialized model."""
    m = METHOD_BY_SLUG[wc.method]
    return init_dir(wc.model, wc.lang, m) if m.expands else source_model_dir(wc.model)


def lapt_init_report(wc):
    """The initialize report of an expanded model: where its new rows start (EEVE freezes rows by that)."""
    m = METHOD_BY_SLUG[wc.method]
    return f"{init_dir(wc.model, wc.lang, m)}.report.json" if m.expands else []


def lapt_rows_arg(wc):
    m = METHOD_BY_SLUG[wc.method]
    return (
        f"--init-report {shlex.quote(f'{init_dir(wc.model, wc.lang, m)}.report.json')}"
        if m.expands
        else ""
    )


def model_folder(model, lang, m):
    """A method's model: source, initialized (no training), trained, merged (a post-hoc method, ElChat), or the MuMo
    folder (head, V_mono, source reference; shared by MuMo and its noverify ablation).
    """
    if m.is_mumo:
        return mumo_dir(model, lang, mumo_init(m))
    if m.trains or m.posthoc != "none":
        return f"{RESULTS}/{model}/{lang}/{m.slug}/model"
    return init_dir(model, lang, m) if m.expands else source_model_dir(model)


def evaluated_model(wc):
    """The model folder a method's evaluation reads."""
    return model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method])


def posthoc_slugs(posthoc):
    """A wildcard constraint: the slugs of the methods with this post-hoc step ("none": lapt's own cells)."""
    return slug_regex([m for m in METHODS if m.posthoc == posthoc]) or "^$"


def chat_model_dir(wc):
    """The instruction-tuned sibling of a model (models.<m>.chat): the source folder itself when it is `source`."""
    chat = config["models"][wc.model]["chat"]
    return (
        source_model_dir(wc.model)
        if chat == "source"
        else f"{RESULTS}/models/{wc.model}/chat"
    )


def chat_spec_json(wc):
    return json.dumps(config["models"][wc.model]["chat"], sort_keys=True)


def adapted_model(wc):
    """The model a post-hoc method starts from: the evaluated model of the same method without the post-hoc step."""
    return model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method].adapted)


def cell_json(wc):
    m = METHOD_BY_SLUG[wc.method]
    size = replace_vocab(wc.lang) if m.vocab == "replace" else aux_vocab(wc.lang)
    return json.dumps(m.cell(wc.model, wc.lang, size), sort_keys=True)


def chat_template_arg(wc):
    """--chat-template for an ElChat cell: evaluated as the chat model it is (Table 10); plain text elsewhere."""
    return "--chat-template" if METHOD_BY_SLUG[wc.method].posthoc == "elchat" else ""


def data_label_of(wc):
    return data_label(wc.lang)


def hparams_json(wc):
    """The LAPT job's hparams (grid.cell_hparams, the precedence the planning checks read too) and the seed."""
    m = METHOD_BY_SLUG[wc.method]
    hparams = cell_hparams(config, wc.model, m, FIRST_ENTRY[m.slug])
    return json.dumps({**hparams, "seed": config["seed"]}, sort_keys=True)


def model_spec_json(wc):
    # without the chat sibling: naming one must not change the source model's params (and rerun the grid)
    spec = {k: v for k, v in config["models"][wc.model].items() if k != "chat"}
    # saved in bf16 where the model trains with bf16 frozen weights (workflow_scripts/source_model.py SAVE_DTYPES)
    weights = spec.get("hparams", {}).get(
        "weights_dtype", config["training"].get("weights_dtype", "fp32")
    )
    if weights == "bf16":
        spec["save_dtype"] = "bf16"
    return json.dumps(spec, sort_keys=True)


def eval_files():
    return [
        f"{RESULTS}/{model}/{lang}/{m.slug}/eval/{task}.json"
        for model, lang, m in CELLS
        for task in tasks_of(m, TASKS)
    ] + [
        f"{RESULTS}/{model}/{lang}/{m.slug}/eval/sum_bleurt.json"
        for model, lang, m in CELLS
        if config["evaluation"]["sum"]["bleurt"] and "sum" in tasks_of(m, TASKS)
    ]


def mumo_init(m):
    """A MuMo method's head initialization: its init (Random), or mumo.init for init none (Multi by default)."""
    return m.init if m.init != "none" else config["mumo"]["init"]


def mumo_dir(model, lang, init):
    """The MuMo folder of a model, language and head initialization (head, V_mono, source model reference), shared
    by the cells that decode it with and without verification."""
    return f"{RESULTS}/{model}/{lang}/mumo/{init}-init/head"


def mumo_target_tokenizer(wc):
    """What V_mono is taken from: mumo.target_tokenizer, else the language's auxiliary tokenizer trained on D."""
    path = config["mumo"]["target_tokenizer"]
    if path:
        return path.replace("{lang}", wc.lang)
    return f"{RESULTS}/{wc.model}/{wc.lang}/tokenizer/aux{aux_vocab(wc.lang)}/tokenizer.json"


def mumo_hparams_json(wc):
    """Head training settings: `mumo` (MuMo section 4.1 defaults), then the MuMo methods entries' hparams, the seed."""
    keys = ("max_steps", "batch_size", "lr", "weight_decay", "warmup_steps", "seq_len")
    hparams = {k: config["mumo"][k] for k in keys}
    for m in METHODS:
        if m.is_mumo:
            hparams.update({k: v for k, v in dict(m.hparams).items() if k in keys})
    return json.dumps({**hparams, "seed": config["seed"]}, sort_keys=True)


def mumo_eval_args(wc):
    """Decoding arguments of a MuMo cell's mt / sum job: k, and the verification ablation (posthoc noverify)."""
    args = f"--mumo-k {config['mumo']['k']}"
    if METHOD_BY_SLUG[wc.method].posthoc == "noverify":
        args += " --mumo-no-verify"
    return args


def mumo_args(wc):
    """A MuMo cell's decoding arguments for its mt, sum and speed jobs (none for other cells)."""
    return mumo_eval_args(wc) if METHOD_BY_SLUG[wc.method].is_mumo else ""


def mumo_slugs():
    return "|".join(re.escape(m.slug) for m in METHODS if m.is_mumo) or "MuMo"


def fragmentation_tokenizers(wc):
    return " ".join(shlex.quote(f"{m}={source_model_dir(m)}") for m in MODELS)


def fragmentation_pairs(wc):
    return " ".join(
        shlex.quote(f"{lang}={data_file(lang, 'mt.tsv')}") for lang in LANGUAGES
    )


def fragmentation_label(wc):
    return "; ".join(sorted({data_label(lang) for lang in LANGUAGES}))


def all_targets():
    return [
        f"{RESULTS}/tables/results.csv",
        f"{RESULTS}/tables/results.md",
        f"{RESULTS}/analysis/fragmentation.csv",
        f"{RESULTS}/paper",
    ]


def analysis_k():
    """|V_new| of the init analysis: the first expanding method's k (paper default 100 when none expands)."""
    ks = [m.k for m in METHODS if m.expands and m.k is not None]
    return ks[0] if ks else 100


def init_analysis_cells():
    """One init-analysis JSON per configured model x language (rules/analysis.smk)."""
    return [
        f"{RESULTS}/analysis/init_analysis/{model}.{lang}.aux{aux_vocab(lang)}.k{analysis_k()}.json"
        for model in MODELS
        for lang in LANGUAGES
    ]


def sized(rule_name, key):
    """A `resources:` function: `key` of the cost table in workflow_scripts/resources.py for the job's model size."""

    def get(wildcards, attempt):
        model = getattr(wildcards, "model", None)
        size = config["models"][model]["size"] if model else None
        return sized_resources(rule_name, size, attempt)[key]

    return get


def gpus(rule_name):
    """The `gpu` resource of a GPU rule: one GPU (sbatch --gpus=1 on Slurm; a local run ignores it unless given
    `--resources gpu=N`), or none when the run's set-resources request the rule's GPU by gres.
    """
    return rule_gpus(rule_name, workflow.resource_settings.overwrite_resources)


def paper_outputs():
    """Files of <results>/paper/ (rule paper_tables) other than those the report shows (PAPER_REPORT in tables.smk)."""
    shown = (
        {f"{t.name}.html" for t in PAPER_TABLES}
        | {f"{f}.png" for f in PAPER_FIGURES}
        | {"costs.html"}
    )
    return [f"{RESULTS}/paper/{n}" for n in paper_output_names() if n not in shown]


def paper_report_files():
    """The tables (HTML) and figures (PNG) of rule paper_tables, each flagged for `snakemake --report` with its caption
    (report/*.rst; paths relative to rules/)."""
    from snakemake.io import report as in_report

    # labels: the report lists a category's files sorted by their labels (else by file name: table10a before table2)
    tables = [
        in_report(
            f"{RESULTS}/paper/{t.name}.html",
            caption=f"../report/{t.name}.rst",
            category="Tables",
            labels={"no.": f"{i + 1:02d}", "table": report_title(t.title, t.caption)},
        )
        for i, t in enumerate(PAPER_TABLES)
    ]
    figures = [
        in_report(
            f"{RESULTS}/paper/{f}.png",
            caption=f"../report/{f}.rst",
            category="Figures",
            labels={"no.": f"{i + 1:02d}", "figure": FIGURE_TITLES.get(f, f)},
        )
        for i, f in enumerate(PAPER_FIGURES)
    ]
    return tables + figures


def paper_dir(wc, output):
    """The folder of rule paper_tables' outputs."""
    return str(Path(output.costs).parent)


def paper_sizes(wc):
    """--size arguments: each model's size class, for the requested hours of the cost table."""
    sizes = {m: config["models"][m]["size"] for m in MODELS}
    return " ".join(f"--size {shlex.quote(f'{m}={size}')}" for m, size in sizes.items())


# Evaluation data of the LightEval tasks (workflow_scripts/harness): hub datasets are mirrored once by the local rule
# download_dataset into <downloads>/hf/<name>/ (shared by every run); a configured local folder is used as it is.
from workflow_scripts.harness.datasets import Unavailable, task_source  # noqa: E402


def dataset_dir(name):
    setting = config["evaluation"]["datasets"].get(name)
    if setting and Path(setting).is_dir():
        return setting
    return f"{DOWNLOADS}/hf/{name}"


def _task_lang(task, lang):
    return (task.removesuffix("_en"), "en") if task.endswith("_en") else (task, lang)


def harness_data(task):
    """The dataset folder a task reads (nothing where the language has no data: the job records why)."""

    def get(wc):
        base, lang = _task_lang(task, wc.lang)
        if task == "mc" and config["evaluation"]["mc"]["source"] == "l10n_proxy":
            return f"{RESULTS}/data/{wc.lang}/l10n/mc_proxy"
        try:
            name = task_source(base, lang).dataset
        except Unavailable:
            return []
        # no hub copy and no folder (GreekSUM): the job records "–" with the reason
        if not config["evaluation"]["datasets"].get(name):
            return []
        if task == "sum" and ITEMS != "shuffle":
            return sum_items_dir(wc.lang)  # exactly the selected rows (rules/items.smk)
        return dataset_dir(name)

    return get


ITEMS = config["evaluation"]["items"]
if (
    ITEMS != "shuffle"
    and "mt" in TASKS
    and any(mt_kind(lang) == "flores" for lang in LANGUAGES)
    and config["evaluation"]["mt"]["n"] < config["data"]["n_mt"]
):
    # the harness draws evaluation.mt.n of the selected rows by LightEval's shuffle: the selection would be lost
    raise WorkflowError(
        f"evaluation.items {ITEMS}: evaluation.mt.n ({config['evaluation']['mt']['n']}) is below data.n_mt "
        f"({config['data']['n_mt']}), the rows selected; set them equal so that every selected row is evaluated"
    )


def sum_items_dir(lang):
    return f"{RESULTS}/data/{lang}/sum_items/{ITEMS}"


def sum_mirror(wc):
    """The sum dataset's folder (hub mirror or configured folder) that the items step selects from."""
    return dataset_dir(task_source("sum", wc.lang).dataset)


def items_tokenizer(wc):
    """items paper: the length tokenizer's folder (configured folder, or the download_items_tokenizer output)."""
    if wc.selection != "paper":
        return []
    setting = config["evaluation"]["items_tokenizer"]
    return setting if Path(setting).is_dir() else f"{DOWNLOADS}/items_tokenizer"


def items_tokenizer_arg(wc):
    folder = items_tokenizer(wc)
    return f"--tokenizer {shlex.quote(folder)}" if folder else ""


def harness_data_arg(task):
    def get(wc):
        folder = harness_data(task)(wc)
        return f"--data {shlex.quote(folder)}" if folder else ""

    return get


def speed_sum_data(wc):
    """The sum dataset the speed step times next to mt (when sum is evaluated and the language has data)."""
    return harness_data("sum")(wc) if "sum" in TASKS else []


def speed_sum_arg(wc):
    folder = speed_sum_data(wc)
    return f"--sum-data {shlex.quote(folder)}" if folder else ""


def speed_choice_tasks(wc):
    """The log-likelihood tasks the speed step times and their datasets (mc, gmmlu where the cell is evaluated on
    them and the language has data; never for MuMo cells, which are not)."""
    if METHOD_BY_SLUG[wc.method].is_mumo:
        return {}
    out = {t: harness_data(t)(wc) for t in ("mc", "gmmlu") if t in TASKS}
    return {t: folder for t, folder in out.items() if folder}


def speed_choice_data(wc):
    return list(speed_choice_tasks(wc).values())


def speed_choice_args(wc):
    """--choice-data TASK=FOLDER and the few-shot count the harness evaluates (the timed contexts hold as many)."""
    return " ".join(
        f"--choice-data {shlex.quote(f'{t}={folder}')}"
        f" --choice-fewshot {t}={config['evaluation'][t]['fewshot']}"
        for t, folder in speed_choice_tasks(wc).items()
    )


def speed_large_batch_args(wc):
    decodings = config["evaluation"]["speed"]["large_batch_decodings"]
    return "--large-batch-decodings " + " ".join(decodings) if decodings else ""


def speed_runtime(wildcards, attempt):
    """The speed job's time limit: its planned workload's (workflow_scripts/speed/plan.py) where the size class has
    a GPU plan, else the cost table's."""
    size = config["models"][wildcards.model]["size"]
    planned = speed_runtime_minutes(
        config,
        size,
        attempt,
        workflow_gpu_class(workflow.resource_settings, "measure_speed"),
    )
    return planned or sized_resources("measure_speed", size, attempt)["runtime"]


def harness_choice_args(task):
    """Command-line arguments of a log-likelihood task (mc, gmmlu and their English retention checks)."""

    def get(wc):
        base, lang = _task_lang(task, wc.lang)
        settings = config["evaluation"][base]
        args = f"--lang {lang} " if lang == "en" else ""
        args += harness_data_arg(task)(wc)
        args += (
            f" --fewshot {settings['fewshot']} --batch-size {settings['batch_size']}"
        )
        return args + (f" --n {settings['n']}" if settings.get("n") else "")

    return get


def mc_label(wc):
    if config["evaluation"]["mc"]["source"] == "l10n_proxy":
        return "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"
    return "Belebele"


def dataset_hub_id(wc):
    hub_id = config["evaluation"]["datasets"].get(wc.dataset)
    if not hub_id:
        raise WorkflowError(
            f"evaluation.datasets.{wc.dataset}: no hub copy; give a local folder in the hub layout (README)"
        )
    return hub_id


def dataset_subsets(wc):
    """The subsets of a dataset that the configured tasks and languages read (English for the retention checks)."""
    subsets = set()
    for task in TASKS:
        for lang in LANGUAGES:
            base, tl = _task_lang(task, lang)
            try:
                source = task_source(base, tl)
            except (Unavailable, ValueError):
                continue
            if source.dataset == wc.dataset:
                subsets.add(source.subset)
    return " ".join(sorted(subsets))


# sum's metrics (workflow_scripts/harness/metrics.py, workflow_scripts/bleurt.py): mT5's spiece.model (ROUGE-L's
# segmentation) and the BLEURT checkpoint are a hub id fetched once by a local rule (rules/data.smk) or a local path.
from workflow_scripts.sum_assets import (  # noqa: E402
    hub_asset_problems,
    reads_mt5_spiece,
    repo_slug,
)

_sum_problems = hub_asset_problems(config["evaluation"]["sum"])
if _sum_problems:
    raise WorkflowError("invalid configuration:\n  - " + "\n  - ".join(_sum_problems))


def mt5_spiece_file(wc=None):
    """mT5's spiece.model where ROUGE-L reads mT5 pieces: a local file, or the download rule's output."""
    settings = config["evaluation"]["sum"]
    if not reads_mt5_spiece(settings):
        return []
    value = settings["mt5_spiece"]
    if Path(value).is_file():
        return value
    return f"{DOWNLOADS}/mt5/{repo_slug(value)}/spiece.model"


def rouge_args(wc):
    spiece = mt5_spiece_file(wc)
    kind = config["evaluation"]["sum"]["rouge_tokenizer"]
    if spiece:
        return f"--rouge-tokenizer {kind} --mt5-spiece {shlex.quote(spiece)}"
    return "--rouge-tokenizer script"


def bleurt_dir(wc=None):
    """The BLEURT checkpoint folder: a local folder, or the download rule's output."""
    value = config["evaluation"]["sum"]["bleurt"]
    if not value:
        return []
    return value if Path(value).is_dir() else f"{DOWNLOADS}/bleurt/{repo_slug(value)}"


def hub_id_of_repo(wc):
    """The configured hub id whose download folder is {repo}."""
    settings = config["evaluation"]["sum"]
    for value in (settings["mt5_spiece"], settings["bleurt"]):
        if value and repo_slug(value) == wc.repo:
            return value
    raise WorkflowError(
        f"no evaluation.sum.mt5_spiece or evaluation.sum.bleurt hub id downloads to {wc.repo}"
    )


# Downloads (rules/data.smk): what the local download rules fetch, and the one-shot target download_all.
from workflow_scripts.harness.datasets import (
    items_tokenizer_needed,
    needed_sources,
)  # noqa: E402
from workflow_scripts.hub_cache import is_hub_id  # noqa: E402


def download_subsets(wc):
    """The subsets of a dataset that the configured tasks and languages read (English for the retention checks)."""
    return sorted(needed_sources(config).get(wc.dataset, {}).get("subsets", []))


def download_splits(wc):
    """Its evaluation and few-shot splits."""
    return sorted(needed_sources(config).get(wc.dataset, {}).get("splits", ["test"]))


def model_role_spec(wc):
    """The models entry (role source) or its chat sibling (role chat) as JSON."""
    spec = config["models"][wc.model]
    return json.dumps(spec["chat"] if wc.role == "chat" else spec, sort_keys=True)


def flores_codes(wc):
    from workflow_scripts.corpus import FLORES_ENGLISH, flores_code

    return [FLORES_ENGLISH, flores_code(wc.lang)]


def download_targets():
    """Everything preflight lists that a compute job would otherwise fetch: hub models (into the Hugging Face cache),
    CC-100 files, FLORES+ files (cache) and the evaluation datasets' mirrors."""
    out = []
    for m, spec in config["models"].items():
        if spec["kind"] == "hub":
            out.append(f"{DOWNLOADS}/models/{m}.source.json")
        chat = spec.get("chat")
        if isinstance(chat, dict) and chat.get("kind") == "hub":
            out.append(f"{DOWNLOADS}/models/{m}.chat.json")
    for lang in LANGUAGES:
        corpus = config["languages"][lang]["corpus"]
        if corpus["kind"] == "cc100" and not corpus.get("path"):
            out.append(f"{DOWNLOADS}/cc100/{lang}.txt.xz")
        mt = config["languages"][lang].get("mt", {"kind": "l10n"})
        if mt["kind"] == "flores" and is_hub_id(mt["root"]):
            out.append(f"{DOWNLOADS}/flores/{lang}.json")
    for name in sorted(needed_sources(config)):
        setting = config["evaluation"]["datasets"].get(name)
        if setting and not Path(setting).is_dir():
            out.append(f"{DOWNLOADS}/hf/{name}")
    if items_tokenizer_needed(config):
        out.append(f"{DOWNLOADS}/items_tokenizer")
    if (
        "sum" in TASKS
    ):  # sum's ROUGE-L segmentation and BLEURT checkpoint, where they are hub ids
        out += [
            p
            for p in (mt5_spiece_file(), bleurt_dir())
            if p and p.startswith(f"{DOWNLOADS}/")
        ]
    return out
