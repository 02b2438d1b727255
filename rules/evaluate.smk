# Evaluation of every cell: MT (chrF), held-out perplexity / bits per character, and generation speed.


rule evaluate_mt:
    """English->target translation, zero-shot, chrF (per-sentence mean, as in the paper)."""
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
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_mt", "mem_mb"),
        runtime=sized("evaluate_mt", "runtime"),
        cpus_per_gpu=sized("evaluate_mt", "cpus_per_gpu"),
        gpu=gpus("evaluate_mt"),
    params:
        cell=cell_json,
        data_label=data_label_of,
        n=config["evaluation"]["mt"]["n"],
        max_new_tokens=config["evaluation"]["mt"]["max_new_tokens"],
        batch_size=config["evaluation"]["mt"]["batch_size"],
        decoding=config["evaluation"]["mt"]["decoding"],
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.evaluate mt --model {input.model} --pairs {input.pairs} --lang {wildcards.lang}"
        " --n {params.n} --max-new-tokens {params.max_new_tokens} --batch-size {params.batch_size}"
        " --decoding {params.decoding} --seed {params.seed} --cell {params.cell:q} --data-label {params.data_label:q} --out {output.result}"
        " --predictions {output.predictions} --threads {threads} 2>> {log}"


rule evaluate_ppl:
    """Perplexity (same-vocabulary comparisons) and bits per character (comparable across vocabularies)."""
    input:
        model=evaluated_model,
        text=corpus_heldout_file,
    output:
        result="results/{model}/{lang}/{method}/eval/ppl.json",
    log:
        "results/logs/evaluate_ppl/{model}.{lang}.{method}.log",
    benchmark:
        "results/benchmarks/evaluate_ppl/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_ppl", "mem_mb"),
        runtime=sized("evaluate_ppl", "runtime"),
        cpus_per_gpu=sized("evaluate_ppl", "cpus_per_gpu"),
        gpu=gpus("evaluate_ppl"),
    params:
        cell=cell_json,
        data_label=data_label_of,
        n=config["evaluation"]["ppl"]["n"],
        batch_size=config["evaluation"]["ppl"]["batch_size"],
    shell:
        "python -m workflow_scripts.evaluate ppl --model {input.model} --text {input.text} --n {params.n}"
        " --batch-size {params.batch_size} --cell {params.cell:q} --data-label {params.data_label:q} --out {output.result}"
        " --threads {threads} 2>> {log}"


rule measure_speed:
    """Tokens (and characters) generated per second at batch size 1 on identical MT prompts for every method."""
    input:
        model=evaluated_model,
        pairs=mt_file,
    output:
        result="results/{model}/{lang}/{method}/eval/speed.json",
    log:
        "results/logs/measure_speed/{model}.{lang}.{method}.log",
    benchmark:
        "results/benchmarks/measure_speed/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("measure_speed", "mem_mb"),
        runtime=sized("measure_speed", "runtime"),
        cpus_per_gpu=sized("measure_speed", "cpus_per_gpu"),
        gpu=gpus("measure_speed"),
    params:
        cell=cell_json,
        data_label=data_label_of,
        n=config["evaluation"]["speed"]["n"],
        max_new_tokens=config["evaluation"]["speed"]["max_new_tokens"],
    shell:
        "python -m workflow_scripts.speed --model {input.model} --pairs {input.pairs} --lang {wildcards.lang}"
        " --n {params.n} --max-new-tokens {params.max_new_tokens} --cell {params.cell:q} --data-label {params.data_label:q}"
        " --out {output.result} --threads {threads} 2>> {log}"
