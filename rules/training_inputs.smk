# Input functions and parameters of the model, tokenizer, initialization, LAPT, ElChat and MuMo rules (rules/model.smk,
# rules/vocab.smk, rules/initialize.smk, rules/lapt.smk, rules/elchat.smk, rules/mumo.smk).


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
    and batch size (STEPS: rules/evaluate_inputs.smk)."""
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
