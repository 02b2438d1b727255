# Input functions and parameters of the rule files, by stage (Snakemake's linter keeps functions apart from rules);
# their logic lives in workflow_scripts/plan/ and the registries (corpora/, tasks/, initialize/methods/).
from workflow_scripts import corpora, languages, mt_sources
from workflow_scripts.corpora import orchid as orchid_corpus, text_file
from workflow_scripts.mt_sources import flores as flores_mt_source
from workflow_scripts.harness.datasets import needed_sources, task_source
from workflow_scripts.plan.grid import Method
from workflow_scripts.plan.steps import (
    CELL_STEP_FILES,
    CELL_STEPS,
    L10N_LABEL,
    Steps,
    corpus_label,
    data_label,
    mt_label,
)
from workflow_scripts.publish import plan as publish_plan
from workflow_scripts.serve.export import GgufType
from workflow_scripts.sum_assets import repo_slug
from workflow_scripts.tasks import TASKS as TASK_SPECS


# --- Data: the data, item-selection and download rules (rules/data.smk, rules/items.smk). Paths come from
# workflow_scripts/plan/paths.py (LAYOUT); a corpus kind's or MT kind's facts from its module
# (workflow_scripts/corpora/, workflow_scripts/mt_sources/: the file its rule reads); what a dataset or asset download
# needs from the config, here.
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
    """Your own MT pairs file (the MT kinds own_mt writes, workflow_scripts/mt_sources/pairs_file.py)."""
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


# --- Training: the model, tokenizer, initialization, LAPT, ElChat and MuMo rules (rules/model.smk, rules/vocab.smk,
# rules/initialize.smk, rules/lapt.smk, rules/elchat.smk, rules/mumo.smk).
def model_spec_json(wc):
    # without the chat sibling and the model cards' facts (base_model, license): naming one must not change the
    # source model's params (and rerun the grid)
    spec = {
        k: v
        for k, v in config["models"][wc.model].items()
        if k not in ("chat", "base_model", "license")
    }
    # saved in bf16 where the model trains with bf16 frozen weights (workflow_scripts/source_model.py SAVE_DTYPES)
    weights = spec.get("hparams", {}).get(
        "weights_dtype", config["training"].get("weights_dtype", "fp32")
    )
    if weights == "bf16":
        spec["save_dtype"] = "bf16"
    return json.dumps(spec, sort_keys=True)


def chat_spec_json(wc):
    return json.dumps(config["models"][wc.model]["chat"], sort_keys=True)


def init_seed(wc):
    """The seed of a seeded initialization (initialize_seeded, initialize_replace_seeded): its .s<seed> suffix."""
    return int(wc.seed)


# The initializations with settings in the config (`initialization`), as a wildcard constraint of the rules that pass
# them on (initialize_configured); a pattern that matches nothing where the config names none.
CONFIGURED_INITS = (
    "|".join(sorted(m for m, o in (config.get("initialization") or {}).items() if o))
    or "(?!x)x"
)


def init_options(wc):
    """The settings of the method being initialized (`initialization.<init>`), as JSON."""
    return json.dumps(config["initialization"][wc.init], sort_keys=True)


def chat_model_dir(wc):
    """The instruction-tuned sibling of a model (models.<m>.chat): the source folder itself when it is `source`."""
    return LAYOUT.chat_model(wc.model)


def adapted_model(wc):
    """The model a post-hoc method starts from: the evaluated model of the same method without the post-hoc step."""
    return LAYOUT.model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method].adapted)


def posthoc_slugs(posthoc):
    """A wildcard constraint: the slugs of the methods with this post-hoc step ("none": lapt's own cells)."""
    return slug_regex([m for m in METHODS if m.posthoc == posthoc]) or "^$"


def method_attr(name):
    """A params function returning one setting of the rule's method."""

    def get(wc):
        return getattr(METHOD_BY_SLUG[wc.method], name)

    return get


def lapt_input_model(wc):
    """CPT-only trains the source model; expansion methods train their initialized model."""
    m = METHOD_BY_SLUG[wc.method]
    if m.expands:
        return LAYOUT.init_dir(wc.model, wc.lang, m)
    return LAYOUT.source_model(wc.model)


def lapt_init_report(wc):
    """The initialize report of an expanded model: where its new rows start (EEVE freezes rows by that)."""
    m = METHOD_BY_SLUG[wc.method]
    return paths.report(LAYOUT.init_dir(wc.model, wc.lang, m)) if m.expands else []


def lapt_rows_arg(wc):
    init_report = lapt_init_report(wc)
    return f"--init-report {shlex.quote(init_report)}" if init_report else ""


# Training before evaluation (the priority of every step on the way to a trained model): with fewer cores than ready
# jobs (2 cores, as make demo and make pilot run), a finished LAPT job makes its cell's one-thread evaluation ready
# beside the next two-thread training job; left to tie, the scheduler may start two evaluations and leave a core idle
# once the first ends. The evaluations then run in pairs after the training (docs/measurements.md).
TRAINING_PRIORITY = 1


# Points of the held-out curve each LAPT job measures (training.curve_points). At 0 the lapt rule's inputs, outputs,
# params and command are exactly those of a config without the key: no existing LAPT job is rerun.
CURVE_POINTS = curve_points(config)


def lapt_curve(wc):
    """The cell's curve options: its points (step 0 alone for a seed evaluated on ppl only), the ppl step's text, n
    and batch size (STEPS: below)."""
    out = paths.curve(wc.model, wc.lang, wc.method, RESULTS)
    return STEPS.curve(wc, cell_curve_points(config, METHOD_BY_SLUG[wc.method]), out)


def lapt_curve_text(wc):
    """The held-out text of the cell's curve; none when training.curve_points is 0."""
    return lapt_curve(wc).inputs["text"] if CURVE_POINTS else []


def lapt_options(wc):
    """The lapt job's optional flags: the init report (lapt_rows_arg), the gate's off switch, the curve's and the
    tracking's when on."""
    curve = lapt_curve(wc).command() if CURVE_POINTS else ""
    flags = (lapt_rows_arg(wc), lapt_gate_arg(wc), curve, lapt_tracking(wc))
    return " ".join(x for x in flags if x)


def lapt_gate_arg(wc):
    """--no-init-gate for an initialized cell where training.init_gate is false (workflow_scripts/lapt/gate.py)."""
    return "--no-init-gate" if lapt_init_report(wc) and not init_gate(config) else ""


def lapt_tracking(wc):
    """--tracking with the cell's tracker run (workflow_scripts/lapt/tracking.py); none without a tracking block,
    so that the lapt jobs' commands are those of a config without it."""
    seed = METHOD_BY_SLUG[wc.method].train_seed(config["seed"])
    spec = cell_tracking(config, RESULTS, wc.model, wc.lang, wc.method, seed)
    return f"--tracking {shlex.quote(spec.to_json())}" if spec else ""


def hparams_json(wc):
    """The LAPT job's hparams (grid.cell_hparams, the precedence the planning checks read too) and the cell's
    training seed (the config's, or the method's own seed from the grid)."""
    m = METHOD_BY_SLUG[wc.method]
    hparams = cell_hparams(config, wc.model, m, FIRST_ENTRY[m.slug])
    return json.dumps({**hparams, "seed": m.train_seed(config["seed"])}, sort_keys=True)


def lapt_checkpoints(wc):
    return paths.checkpoints(wc.model, wc.lang, wc.method, RESULTS)


# GPUs of one node each LAPT job of a 7B/8B/9B model runs on: the fewest that workflow_scripts/gpu says hold it
# (FSDP over N processes, workflow_scripts/lapt/shard.py); every other job runs on one.
LAPT_GPUS = PLAN.lapt_gpus


def lapt_gpus(wildcards):
    """The lapt job's `gpu` resource: its planned GPU count (none where set-resources ask for GPUs by gres)."""
    if not gpus("lapt"):
        return 0
    return LAPT_GPUS.get((wildcards.model, wildcards.method), 1)


def lapt_mem_mb(wildcards, attempt):
    """Host memory: the cost table's per process (each loads the model before sharding it)."""
    return sized("lapt", "mem_mb")(wildcards, attempt) * max(lapt_gpus(wildcards), 1)


def lapt_launch(wildcards):
    """One process per GPU: torchrun on one node when the job is sharded, else a plain python."""
    n = lapt_gpus(wildcards)
    return f"torchrun --standalone --nproc-per-node {n}" if n > 1 else "python"


def mumo_target_tokenizer(wc):
    """What V_mono is taken from: mumo.target_tokenizer, else the language's auxiliary tokenizer trained on D."""
    path = config["mumo"]["target_tokenizer"]
    if path:
        return path.replace("{lang}", wc.lang)
    return paths.aux_tokenizer(wc.model, wc.lang, LAYOUT.vocab(wc.lang), RESULTS)


def mumo_hparams_json(wc):
    """Head training settings: `mumo` (MuMo section 4.1 defaults), then the MuMo methods entries' hparams, the seed."""
    keys = ("max_steps", "batch_size", "lr", "weight_decay", "warmup_steps", "seq_len")
    hparams = {k: config["mumo"][k] for k in keys}
    for m in METHODS:
        if m.is_mumo:
            hparams.update({k: v for k, v in dict(m.hparams).items() if k in keys})
    return json.dumps({**hparams, "seed": config["seed"]}, sort_keys=True)


# --- Evaluation: the evaluation rules (rules/evaluate.smk). Each task's step (its files and its
# command-line arguments) is written once in workflow_scripts/plan/steps.py; its own rule and evaluate_cell render it.
STEPS = Steps(config, LAYOUT, METHOD_BY_SLUG)


def step_inputs(task):
    """The input files of a task's rule, by name (for `unpack`)."""

    def get(wc):
        return STEPS.step(task, wc).inputs

    return get


def step_args(task):
    """The arguments of a task's command line, shell-quoted."""

    def get(wc):
        return STEPS.step(task, wc).command()

    return get


def cell_json(wc):
    return STEPS.cell(wc)


# evaluation.one_job_per_cell: a cell's ppl, mt, mc and speed steps in one job (workflow_scripts/evaluate_cell.py), so
# that torch, transformers and LightEval are imported once per cell, not once per task (docs/measurements.md). Each step
# writes the files its own rule writes; the per-task rules still serve every other cell and task.
CELL_JOB_STEPS = [s for s in CELL_STEPS if s in TASKS]


def cell_job_slugs():
    """A wildcard constraint: the methods whose cells evaluate_cell evaluates (none unless one_job_per_cell; MuMo
    cells and seeds evaluated on ppl alone, evaluated on fewer tasks, keep the per-task jobs).
    """
    if not config["evaluation"]["one_job_per_cell"] or not CELL_JOB_STEPS:
        return "^$"
    cells = [m for m in METHODS if not m.is_mumo and not ppl_only(m, config)]
    return slug_regex(cells) or "^$"


def cell_job_outputs():
    return [
        paths.eval_file(name=name, root=RESULTS)
        for step in CELL_JOB_STEPS
        for name in CELL_STEP_FILES[step]
    ]


def cell_job_inputs(wc):
    """The input files of the cell's steps, by name (for `unpack`)."""
    inputs = {}
    for step in CELL_JOB_STEPS:
        inputs.update(STEPS.step(step, wc).inputs)
    return inputs


def cell_step_args(wc):
    """--STEP 'ARGS' for each configured step (each ARGS one shell-quoted string)."""
    return " ".join(
        f"--{step} {shlex.quote(STEPS.step(step, wc).cell_command())}"
        for step in CELL_JOB_STEPS
    )


def task_runtime(task):
    """A task rule's time limit: for a task whose spec says so (speed), its planned workload's
    (workflow_scripts/plan/speed.py) where the model needs a GPU; else the cost table's.
    """
    if not task.planned_runtime:
        return sized(task.rule, "runtime")

    def get(wildcards, attempt):
        model = PLAN.models[wildcards.model]
        planned = speed_runtime_minutes(
            config,
            model,
            attempt,
            workflow_gpu_class(workflow.resource_settings, task.rule),
        )
        return (
            planned or sized_resources(task.rule, model.parameters, attempt)["runtime"]
        )

    return get


def bleurt_dir(wc):
    """The BLEURT checkpoint folder: a local folder, or the download rule's output."""
    return LAYOUT.bleurt()


# --- Tables: the tables, analysis and export rules (rules/tables.smk, rules/analysis.smk,
# rules/export.smk): which files each whole-run step collects.
def eval_files():
    """Every evaluation record of the grid (BLEURT's where sum is scored by it), read by rule tables."""
    bleurt = config["evaluation"]["sum"]["bleurt"]
    return [
        paths.eval_file(model, lang, m.slug, f"{task}.json", RESULTS)
        for model, lang, m in CELLS
        for task in tasks_of(m, TASKS, config)
    ] + [
        paths.eval_file(model, lang, m.slug, "sum_bleurt.json", RESULTS)
        for model, lang, m in CELLS
        if bleurt and "sum" in tasks_of(m, TASKS, config)
    ]


def lapt_cells():
    """(model, language, slug) of every LAPT run of the grid (an ElChat cell's is its adapted cell's)."""
    return sorted(
        {
            (model, lang, m.adapted.slug)
            for model, lang, m in CELLS
            if m.adapted.trains and not m.is_mumo
        }
    )


def lead_loss_files():
    """The loss curves of every trained cell, for the results page's lead."""
    return [
        paths.loss_curve(model, lang, slug, RESULTS)
        for model, lang, slug in lapt_cells()
    ]


def curve_files():
    """The held-out curves of every LAPT run when training.curve_points > 0 (rule findings)."""
    return [
        paths.curve(model, lang, slug, RESULTS)
        for model, lang, slug in lapt_cells()
        if CURVE_POINTS
    ]


def fragmentation_tokenizers(wc):
    return " ".join(shlex.quote(f"{m}={LAYOUT.source_model(m)}") for m in MODELS)


def fragmentation_pairs(wc):
    return " ".join(
        shlex.quote(f"{lang}={LAYOUT.data_file(lang, 'mt.tsv')}") for lang in LANGUAGES
    )


def fragmentation_label(wc):
    return "; ".join(sorted({data_label(LAYOUT, lang) for lang in LANGUAGES}))


def analysis_k():
    """|V_new| of the init analysis: the first expanding method's k (paper default 100 when none expands)."""
    ks = [m.k for m in METHODS if m.expands and m.k is not None]
    return ks[0] if ks else 100


def init_analysis_cells():
    """One init-analysis JSON per configured model x language (rules/analysis.smk)."""
    return [
        paths.analysis_file(
            f"init_analysis/{model}.{lang}.aux{LAYOUT.vocab(lang)}.k{analysis_k()}.json",
            RESULTS,
        )
        for model in MODELS
        for lang in LANGUAGES
    ]


def paper_sizes(wc):
    """--size arguments: each model's parameter count, for the requested hours of the cost table."""
    sizes = {m: PLAN.models[m].parameters for m in MODELS}
    return " ".join(f"--size {shlex.quote(f'{m}={size}')}" for m, size in sizes.items())


# The GGUF export of each non-MuMo cell (rules/export.smk, docs/serving.md), its check and serving speed in llama.cpp.

# each export.gguf entry by its name (f16, q4_0+emb_q8_0), the name of its file
GGUF_TYPES = [GgufType.of(entry).name for entry in config["export"]["gguf"]]
# Source: exported as a cell of its own, also where the grid does not list it (serve_speed times it next to each cell)
SOURCE_METHOD = Method(
    init="none",
    vocab="expand",
    k=None,
    procedure="none",
    objective=None,
    seq_len=None,
    posthoc="none",
)


def gguf_files(wc):
    return [
        paths.gguf_file(wc.model, wc.lang, wc.method, t, RESULTS) for t in GGUF_TYPES
    ]


def gguf_dir(wc):
    return paths.gguf_dir(wc.model, wc.lang, wc.method, RESULTS)


def non_mumo_slugs():
    """A wildcard constraint: the slugs of the methods with a single-model GGUF (all but MuMo's), and Source."""
    return slug_regex([m for m in METHODS if not m.is_mumo] + [SOURCE_METHOD])


def adapted_slugs():
    """A wildcard constraint: the non-MuMo methods other than Source (whose speed is timed next to theirs)."""
    return (
        slug_regex([m for m in METHODS if not m.is_mumo and m.slug != "Source"]) or "^$"
    )


def gguf_model(wc):
    """The folder a cell's GGUF is converted from: the evaluated model (the source model for Source)."""
    if wc.method == SOURCE_METHOD.slug:
        return LAYOUT.source_model(wc.model)
    return LAYOUT.model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method])


def source_gguf(wc):
    """Source's GGUF of the type whose serving speed is measured (the first of export.gguf)."""
    return paths.gguf_file(
        wc.model, wc.lang, SOURCE_METHOD.slug, GGUF_TYPES[0], RESULTS
    )


def cell_gguf(wc):
    return paths.gguf_file(wc.model, wc.lang, wc.method, GGUF_TYPES[0], RESULTS)


SERVE_ENGINE = config["export"]["speed"]["engine"]


def serve_ggufs(wc):
    """The cell's and Source's GGUF of the first export.gguf type, which llama.cpp times (none: vLLM serves the
    transformers folders)."""
    return [cell_gguf(wc), source_gguf(wc)] if SERVE_ENGINE == "llama.cpp" else []


def serve_engine_args(wc):
    """The engine's own arguments of workflow_scripts.serve.speed (its files: serve_ggufs)."""
    if SERVE_ENGINE == "vllm":
        return f"--engine vllm --max-new-tokens {config['export']['speed']['max_new_tokens']}"
    gguf, source = serve_ggufs(wc)
    return f"--engine llama.cpp --gguf {shlex.quote(gguf)} --source-gguf {shlex.quote(source)}"


def serve_speed_files():
    """The serving speed of every non-MuMo cell but Source (export.gguf set, or export.speed.engine vllm, which
    serves the transformers folders), read by rule tables."""
    if not GGUF_TYPES and SERVE_ENGINE != "vllm":
        return []
    return [
        paths.eval_file(model, lang, m.slug, "serve_speed.json", RESULTS)
        for model, lang, m in CELLS
        if not m.is_mumo and m.slug != SOURCE_METHOD.slug
    ]


def gguf_fidelity_files():
    """The GGUF checks of every non-MuMo cell (MuMo's head beside the source model has no single-model GGUF), read by
    rule findings."""
    if not GGUF_TYPES:
        return []
    return [
        paths.gguf_fidelity(model, lang, m.slug, RESULTS)
        for model, lang, m in CELLS
        if not m.is_mumo
    ]


def export_targets():
    """The GGUF checks and the serving speed of every non-MuMo cell."""
    return gguf_fidelity_files() + serve_speed_files()


# --- Publishing: the model card and publish rules (rules/publish.smk): which cells get a card and
# which are uploaded where (workflow_scripts/publish/plan.py), and what each card is told of its cell.
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
    corpus, mt = spec["corpus"], mt_sources.mt_of(config, lang)
    hub_id = mt_sources.of(config, lang).hub_id
    mt_hub = hub_id(mt) if hub_id else None
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
