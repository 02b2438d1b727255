# MuMo (workflow_scripts/mumo): a target-language head trained on D on the frozen source model; its cells are
# evaluated on generation (mt, sum) through the same LightEval tasks as every method, and timed at batch size 1.
# A MuMo cell's "model" is the MuMo folder: the generic evaluate_mt and evaluate_sum put its decoder behind
# LightEval's generate (workflow_scripts/plan/steps.py Steps.mumo: k, and noverify), and measure_speed times it
# (workflow_scripts.speed.mumo: MuMo's decoder in the speed step, paired with Source).


rule mumo_head:
    """V_mono from the target tokenizer, the head initialized (Multi- or Random-init) and trained on D; the source
    model is referenced, not copied."""
    input:
        source=paths.source_model(),
        target_tokenizer=mumo_target_tokenizer,
        corpus=corpus_train_file,
    output:
        model=directory(paths.mumo_head()),
        stats=paths.mumo_file("train_stats.json"),
        loss=paths.mumo_file("loss.tsv"),
    log:
        "<results>/logs/mumo_head/{model}.{lang}.{head_init}.log",
    benchmark:
        "<results>/benchmarks/mumo_head/{model}.{lang}.{head_init}.tsv"
    wildcard_constraints:
        head_init="Multi|Random",
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("mumo_head", "mem_mb"),
        runtime=sized("mumo_head", "runtime"),
        cpus_per_gpu=sized("mumo_head", "cpus_per_gpu"),
        gpu=gpus("mumo_head"),
    params:
        hparams=mumo_hparams_json,
        max_words=(
            f"--max-words {config['mumo']['max_words']}"
            if config["mumo"]["max_words"]
            else ""
        ),
    # unquoted: params.max_words (a flag and a schema-checked integer, or nothing)
    shell:
        "python -m workflow_scripts.mumo train --source-model {input.source:q} --target-tokenizer {input.target_tokenizer:q}"
        " --lang {wildcards.lang:q} --corpus {input.corpus:q} --init {wildcards.head_init:q} {params.max_words}"
        " --hparams {params.hparams:q} --out {output.model:q} --stats {output.stats:q} --loss-curve {output.loss:q}"
        " --threads {threads} 2>> {log:q}"
