# Language-adaptive pre-training (LAPT): CPT-only on the source model, or the expanded model after initialization.
from workflow_scripts.gpu_fit import lapt_gpu_counts

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


def lapt_launch(wildcards):
    """One process per GPU: torchrun on one node when the job is sharded, else a plain python."""
    n = lapt_gpus(wildcards)
    return f"torchrun --standalone --nproc-per-node {n}" if n > 1 else "python"


rule lapt:
    """Train exactly the parameters the procedure names; checkpoints let a killed job resume where it stopped."""
    input:
        model=lapt_input_model,
        corpus=corpus_train_file,
        init_report=lapt_init_report,
    output:
        model=directory("results/{model}/{lang}/{method}/model"),
        stats="results/{model}/{lang}/{method}/train_stats.json",
        loss="results/{model}/{lang}/{method}/loss.tsv",
    log:
        "results/logs/lapt/{model}.{lang}.{method}.log",
    benchmark:
        "results/benchmarks/lapt/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=posthoc_slugs("none"),  # a post-hoc method's model comes from its own rule (elchat)
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
        checkpoints="results/{model}/{lang}/{method}/checkpoints",
        rows=lapt_rows_arg,
        launch=lapt_launch,
    # unquoted: params.launch, params.rows (lapt_launch: python or a fixed torchrun command and a number; lapt_rows_arg: a flag and its shlex-quoted report path)
    shell:
        "{params.launch} -m workflow_scripts.lapt --model {input.model:q} --train {input.corpus:q} --procedure {params.procedure:q}"
        " --objective {params.objective:q} --seq-len {params.seq_len:q} --hparams {params.hparams:q}"
        " --out {output.model:q} --stats {output.stats:q} --loss-curve {output.loss:q}"
        " --checkpoint-dir {params.checkpoints:q} {params.rows} --threads {threads} 2>> {log:q}"
