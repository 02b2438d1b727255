# Input functions and job parameters of the lapt, evaluate_cell and tables rules (snakemake --lint: rule files hold
# rules, functions live in common modules). Included after common.smk, whose names they use.
# lapt (rules/lapt.smk)
# GPUs of one node each LAPT job of a 7B/8B/9B model runs on: the fewest that tools/gpu_estimate says hold it
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


def lapt_checkpoints(wc):
    return f"{RESULTS}/{wc.model}/{wc.lang}/{wc.method}/checkpoints"


def lapt_launch(wildcards):
    """One process per GPU: torchrun on one node when the job is sharded, else a plain python."""
    n = lapt_gpus(wildcards)
    return f"torchrun --standalone --nproc-per-node {n}" if n > 1 else "python"


# evaluation.one_job_per_cell: a cell's ppl, mt, mc and speed steps in one job (workflow_scripts/evaluate_cell.py), so
# that torch, transformers and LightEval are imported once per cell, not once per task (docs/measurements.md). Each step
# writes the files its own rule writes; the rules above still serve every other cell and task.
CELL_STEPS = ("ppl", "mt", "mc", "speed")
# the files each step writes (those of evaluate_ppl, evaluate_mt, evaluate_mc, measure_speed)
CELL_STEP_FILES = {
    "ppl": ["ppl.json"],
    "mt": ["mt.json", "mt_predictions.tsv"],
    "mc": ["mc.json"],
    "speed": ["speed.json"],
}
CELL_JOB_STEPS = [s for s in CELL_STEPS if s in TASKS]


def cell_job_slugs():
    """A wildcard constraint: the methods whose cells evaluate_cell evaluates (none unless one_job_per_cell; MuMo
    cells, evaluated on fewer tasks, keep the per-task jobs)."""
    if not config["evaluation"]["one_job_per_cell"] or not CELL_JOB_STEPS:
        return "^$"
    return slug_regex([m for m in METHODS if not m.is_mumo]) or "^$"


def cell_job_outputs():
    return [
        f"{RESULTS}/{{model}}/{{lang}}/{{method}}/eval/{name}"
        for step in CELL_JOB_STEPS
        for name in CELL_STEP_FILES[step]
    ]


def cell_mc_data(wc):
    return harness_data("mc")(wc) if "mc" in TASKS else []


def cell_step_args(wc):
    """--STEP 'ARGS' for each configured step (each ARGS one shell-quoted string)."""
    args = {
        "ppl": cell_ppl_args,
        "mt": cell_mt_args,
        "mc": cell_mc_args,
        "speed": cell_speed_args,
    }
    return " ".join(
        f"--{step} {shlex.quote(args[step](wc))}" for step in CELL_JOB_STEPS
    )


def eval_file(wc, name):
    return f"{RESULTS}/{wc.model}/{wc.lang}/{wc.method}/eval/{name}"


def cli(**options):
    """Options as one shell-quoted string: max_new_tokens=40 -> --max-new-tokens 40."""
    return shlex.join(
        x for k, v in options.items() for x in (f"--{k.replace('_', '-')}", str(v))
    )


def cell_ppl_args(wc):
    ppl = config["evaluation"]["ppl"]
    return cli(
        text=corpus_heldout_file(wc),
        n=ppl["n"],
        batch_size=ppl["batch_size"],
        data_label=data_label_of(wc),
        out=eval_file(wc, "ppl.json"),
    )


def cell_mt_args(wc):
    mt = config["evaluation"]["mt"]
    args = cli(
        lang=wc.lang,
        pairs=mt_file(wc),
        n=mt["n"],
        max_new_tokens=mt["max_new_tokens"],
        batch_size=mt["batch_size"],
        decoding=mt["decoding"],
        runs=mt["runs"],
        seed=config["seed"],
        data_label=data_label_of(wc),
        out=eval_file(wc, "mt.json"),
        predictions=eval_file(wc, "mt_predictions.tsv"),
    )
    return f"{args} {chat_template_arg(wc)}".rstrip()  # ElChat: --chat-template


def cell_mc_args(wc):
    # harness_choice_args: flags and numbers, its data folder already shlex-quoted
    out = cli(data_label=mc_label(wc), out=eval_file(wc, "mc.json"))
    return f"{cli(lang=wc.lang)} {harness_choice_args('mc')(wc)} {out} {chat_template_arg(wc)}".rstrip()


def cell_speed_args(wc):
    """measure_speed's arguments (its shell, less --model, --cell and --threads)."""
    speed = config["evaluation"]["speed"]
    args = cli(
        source_tokenizer=source_model_of(wc),
        pairs=mt_file(wc),
        lang=wc.lang,
        n=speed["n"],
        max_new_tokens=speed["max_new_tokens"],
        repeats=speed["repeats"],
        warmup=speed["warmup"],
        batch_size=speed["batch_size"],
        reference_chars=speed["reference_chars"] or 0,
        seed=config["seed"],
        data_label=data_label_of(wc),
        out=eval_file(wc, "speed.json"),
    )
    flags = [
        f"--decodings {shlex.join(speed['decodings'])}",
        "" if speed["teacher_forced"] else "--no-teacher-forced",
        "--paired" if speed["paired"] else "",
        speed_sum_arg(wc),  # these three: flags and shlex-quoted values
        speed_choice_args(wc),
        speed_large_batch_args(wc),
    ]
    return " ".join([args, *filter(None, flags)])


# tables (rules/tables.smk)
def lead_loss_files():
    """The loss curves of every trained cell (an ElChat cell's are its adapted cell's), for the results page's lead."""
    slugs = {
        (model, lang, m.adapted.slug)
        for model, lang, m in CELLS
        if m.adapted.trains and not m.is_mumo
    }
    return [
        f"{RESULTS}/{model}/{lang}/{slug}/loss.tsv"
        for model, lang, slug in sorted(slugs)
    ]


# rules/export.smk (docs/serving.md): the GGUF export of each non-MuMo cell, its check and serving speed in llama.cpp.
from workflow_scripts.grid import Method

GGUF_TYPES = config["export"]["gguf"]
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
        f"{RESULTS}/{wc.model}/{wc.lang}/{wc.method}/gguf/model.{t}.gguf"
        for t in GGUF_TYPES
    ]


def gguf_dir(wc):
    return f"{RESULTS}/{wc.model}/{wc.lang}/{wc.method}/gguf"


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
        return source_model_dir(wc.model)
    return evaluated_model(wc)


def source_gguf(wc):
    """Source's GGUF of the type whose serving speed is measured (the first of export.gguf)."""
    return f"{RESULTS}/{wc.model}/{wc.lang}/Source/gguf/model.{GGUF_TYPES[0]}.gguf"


def cell_gguf(wc):
    return f"{RESULTS}/{wc.model}/{wc.lang}/{wc.method}/gguf/model.{GGUF_TYPES[0]}.gguf"


def serve_speed_files():
    """The llama.cpp serving speed of every non-MuMo cell but Source (export.gguf set), read by rule tables."""
    if not GGUF_TYPES:
        return []
    return [
        f"{RESULTS}/{model}/{lang}/{m.slug}/eval/serve_speed.json"
        for model, lang, m in CELLS
        if not m.is_mumo and m.slug != SOURCE_METHOD.slug
    ]


def export_targets():
    """The GGUF checks of every non-MuMo cell (MuMo's head beside the source model has no single-model GGUF)."""
    if not GGUF_TYPES:
        return []
    return [
        f"{RESULTS}/{model}/{lang}/{m.slug}/gguf/fidelity.json"
        for model, lang, m in CELLS
        if not m.is_mumo
    ] + serve_speed_files()
