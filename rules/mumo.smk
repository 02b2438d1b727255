# MuMo (workflow_scripts/mumo): a target-language head trained on D on the frozen source model; its cells are
# evaluated on generation (mt, sum) through the same LightEval tasks as every method, and timed at batch size 1.
# A MuMo cell's "model" is the MuMo folder; its mt and sum jobs take precedence over the generic ones; the generic
# measure_speed times it (workflow_scripts.speed.mumo: MuMo's decoder in the speed step, paired with Source).


ruleorder: evaluate_mt_mumo > evaluate_mt
ruleorder: evaluate_sum_mumo > evaluate_sum


rule mumo_head:
    """V_mono from the target tokenizer, the head initialized (Multi- or Random-init) and trained on D; the source
    model is referenced, not copied."""
    input:
        source="results/models/{model}/source",
        target_tokenizer=mumo_target_tokenizer,
        corpus=corpus_train_file,
    output:
        model=directory("results/{model}/{lang}/mumo/{head_init}-init/head"),
        stats="results/{model}/{lang}/mumo/{head_init}-init/train_stats.json",
        loss="results/{model}/{lang}/mumo/{head_init}-init/loss.tsv",
    log:
        "results/logs/mumo_head/{model}.{lang}.{head_init}.log",
    benchmark:
        "results/benchmarks/mumo_head/{model}.{lang}.{head_init}.tsv"
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


rule evaluate_mt_mumo:
    """evaluate_mt for MuMo cells: the MuMo decoder behind LightEval's generate (verification unless noverify)."""
    input:
        model=evaluated_model,
        pairs=mt_file,
    output:
        result="results/{model}/{lang}/{method}/eval/mt.json",
        predictions="results/{model}/{lang}/{method}/eval/mt_predictions.tsv",
    log:
        "results/logs/evaluate_mt/{model}.{lang}.{method}.log",
    benchmark:
        "results/benchmarks/evaluate_mt/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=mumo_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_mt_mumo", "mem_mb"),
        runtime=sized("evaluate_mt_mumo", "runtime"),
        cpus_per_gpu=sized("evaluate_mt_mumo", "cpus_per_gpu"),
        gpu=gpus("evaluate_mt_mumo"),
    params:
        cell=cell_json,
        data_label=data_label_of,
        n=config["evaluation"]["mt"]["n"],
        max_new_tokens=config["evaluation"]["mt"]["max_new_tokens"],
        batch_size=config["evaluation"]["mt"]["batch_size"],
        decoding=config["evaluation"]["mt"]["decoding"],
        runs=config["evaluation"]["mt"]["runs"],
        seed=config["seed"],
        mumo=mumo_eval_args,
    # unquoted: params.mumo (mumo_eval_args: fixed flags and a number)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness --task mt --lang {wildcards.lang:q}"
        " --model {input.model:q} --pairs {input.pairs:q} --n {params.n:q} --max-new-tokens {params.max_new_tokens:q}"
        " --batch-size {params.batch_size:q} --decoding {params.decoding:q} --runs {params.runs:q} --seed {params.seed:q}"
        " --cell {params.cell:q} --data-label {params.data_label:q} --out {output.result:q}"
        " --predictions {output.predictions:q} {params.mumo} --threads {threads} 2>> {log:q}"


rule evaluate_sum_mumo:
    """evaluate_sum for MuMo cells."""
    input:
        model=evaluated_model,
        data=harness_data("sum"),
        spiece=mt5_spiece_file,
    output:
        result="results/{model}/{lang}/{method}/eval/sum.json",
        predictions="results/{model}/{lang}/{method}/eval/sum_predictions.tsv",
    log:
        "results/logs/evaluate_sum/{model}.{lang}.{method}.log",
    benchmark:
        "results/benchmarks/evaluate_sum/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=mumo_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_sum_mumo", "mem_mb"),
        runtime=sized("evaluate_sum_mumo", "runtime"),
        cpus_per_gpu=sized("evaluate_sum_mumo", "cpus_per_gpu"),
        gpu=gpus("evaluate_sum_mumo"),
    params:
        cell=cell_json,
        data=harness_data_arg("sum"),
        n=config["evaluation"]["sum"]["n"],
        max_new_tokens=config["evaluation"]["sum"]["max_new_tokens"],
        batch_size=config["evaluation"]["sum"]["batch_size"],
        decoding=config["evaluation"]["sum"]["decoding"],
        runs=config["evaluation"]["sum"]["runs"],
        seed=config["seed"],
        mumo=mumo_eval_args,
        rouge=rouge_args,
    # unquoted: params.data, params.mumo, params.rouge (harness_data_arg: a flag and its shlex-quoted folder; mumo_eval_args: fixed flags and a number; rouge_args: a flag and a shlex-quoted file)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness --task sum --lang {wildcards.lang:q}"
        " --model {input.model:q} {params.data} --n {params.n:q} --max-new-tokens {params.max_new_tokens:q}"
        " --batch-size {params.batch_size:q} --decoding {params.decoding:q} --runs {params.runs:q} --seed {params.seed:q}"
        " {params.rouge} --cell {params.cell:q} --out {output.result:q} --predictions {output.predictions:q} {params.mumo}"
        " --threads {threads} 2>> {log:q}"
