# Input functions and job parameters of the lapt, evaluate_cell and tables rules (snakemake --lint: rule files hold
# rules, functions live in common modules). Included after common.smk, whose names they use.
from workflow_scripts.gpu_fit import lapt_gpu_counts

# lapt (rules/lapt.smk)
# GPUs of one node each LAPT job of a 7B/8B/9B model runs on: the fewest that tools/gpu_estimate says hold it
# (FSDP over N processes, workflow_scripts/lapt/shard.py); every other job runs on one.
LAPT_GPUS = lapt_gpu_counts(
    config,
    workflow_gpu_class(workflow.resource_settings),
    workflow_node_gpus(workflow.resource_settings),
)


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
