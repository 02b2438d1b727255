# Language-adaptive pre-training (LAPT): CPT-only on the source model, or the expanded model after initialization.
rule lapt:
    """Train exactly the parameters the procedure names; checkpoints let a killed job resume where it stopped."""
    input:
        model=lapt_input_model,
        corpus=corpus_train_file,
        init_report=lapt_init_report,
        curve_text=lapt_curve_text,
    output:
        **({"curve": paths.curve()} if CURVE_POINTS else {}),  # measured when training.curve_points > 0
        model=directory(paths.trained_model()),
        stats=paths.train_stats(),
        loss=paths.loss_curve(),
    log:
        "<results>/logs/lapt/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/lapt/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=posthoc_slugs("none"),  # a post-hoc method's model comes from its own rule (elchat)
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=lapt_mem_mb,
        runtime=sized("lapt", "runtime"),
        cpus_per_gpu=sized("lapt", "cpus_per_gpu"),
        gpu=lapt_gpus,
        # torchrun starts one process per GPU on one node (the job step is a single task holding all of them)
        nodes=1,
        # SIGUSR1 ten minutes before the time limit: checkpoint, exit, resume on the retry (resources.py)
        slurm_extra=slurm_signal(),
    params:
        procedure=method_attr("procedure"),
        objective=method_attr("objective"),
        seq_len=method_attr("seq_len"),
        hparams=hparams_json,
        checkpoints=lapt_checkpoints,
        rows=lapt_options,
        launch=lapt_launch,
    # unquoted: params.launch, params.rows (lapt_launch: python or a fixed torchrun command and a number; lapt_options: flags and shlex-quoted values).
    # params.rows carries every optional flag (EEVE's init report, the curve's): Snakemake reruns a job whose shell text changes.
    shell:
        "{params.launch} -m workflow_scripts.lapt --model {input.model:q} --train {input.corpus:q} --procedure {params.procedure:q}"
        " --objective {params.objective:q} --seq-len {params.seq_len:q} --hparams {params.hparams:q}"
        " --out {output.model:q} --stats {output.stats:q} --loss-curve {output.loss:q}"
        " --checkpoint-dir {params.checkpoints:q} {params.rows} --threads {threads} 2>> {log:q}"
