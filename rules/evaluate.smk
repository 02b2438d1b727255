# Evaluation of every cell: MT (chrF), held-out perplexity / bits per character, and generation speed.


rule evaluate_mt:
    """English->target translation with the paper's prompt through LightEval; chrF per sentence, averaged (and corpus).
    A MuMo cell's model is its MuMo folder: its decoder behind LightEval's generate (verification unless noverify).
    """
    input:
        model=evaluated_model,
        pairs=mt_file,
    output:
        result="<results>/{model}/{lang}/{method}/eval/mt.json",
        predictions="<results>/{model}/{lang}/{method}/eval/mt_predictions.tsv",
    log:
        "<results>/logs/evaluate_mt/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_mt/{model}.{lang}.{method}.tsv"
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
        chat=chat_template_arg,
        data_label=data_label_of,
        n=config["evaluation"]["mt"]["n"],
        max_new_tokens=config["evaluation"]["mt"]["max_new_tokens"],
        batch_size=config["evaluation"]["mt"]["batch_size"],
        decoding=config["evaluation"]["mt"]["decoding"],
        runs=config["evaluation"]["mt"]["runs"],
        seed=config["seed"],
        mumo=mumo_args,
    # unquoted: params.chat, params.mumo (chat_template_arg: a fixed flag or nothing; mumo_args: fixed flags and a number, or nothing)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness --task mt --lang {wildcards.lang:q}"
        " --model {input.model:q} --pairs {input.pairs:q} --n {params.n:q} --max-new-tokens {params.max_new_tokens:q}"
        " --batch-size {params.batch_size:q} --decoding {params.decoding:q} --runs {params.runs:q} --seed {params.seed:q}"
        " --cell {params.cell:q} --data-label {params.data_label:q} --out {output.result:q}"
        " --predictions {output.predictions:q} {params.chat} {params.mumo} --threads {threads} 2>> {log:q}"


rule evaluate_sum:
    """Summarization with the paper's prompt (XL-Sum / MLSUM / GreekSUM) through LightEval; ROUGE-L F1 on mT5 pieces
    (rougeL_mt5) or script-aware (rougeL_script), as evaluation.sum.rouge_tokenizer says.
    """
    input:
        model=evaluated_model,
        data=harness_data("sum"),
        spiece=mt5_spiece_file,
    output:
        result="<results>/{model}/{lang}/{method}/eval/sum.json",
        predictions="<results>/{model}/{lang}/{method}/eval/sum_predictions.tsv",
    log:
        "<results>/logs/evaluate_sum/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_sum/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_sum", "mem_mb"),
        runtime=sized("evaluate_sum", "runtime"),
        cpus_per_gpu=sized("evaluate_sum", "cpus_per_gpu"),
        gpu=gpus("evaluate_sum"),
    params:
        cell=cell_json,
        chat=chat_template_arg,
        data=harness_data_arg("sum"),
        n=config["evaluation"]["sum"]["n"],
        max_new_tokens=config["evaluation"]["sum"]["max_new_tokens"],
        batch_size=config["evaluation"]["sum"]["batch_size"],
        decoding=config["evaluation"]["sum"]["decoding"],
        runs=config["evaluation"]["sum"]["runs"],
        seed=config["seed"],
        rouge=rouge_args,
        mumo=mumo_args,
    # unquoted: params.chat, params.data, params.mumo, params.rouge (chat_template_arg: a fixed flag or nothing; harness_data_arg: a flag and its shlex-quoted folder; mumo_args: fixed flags and a number, or nothing; rouge_args: a flag and a shlex-quoted file)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness --task sum --lang {wildcards.lang:q}"
        " --model {input.model:q} {params.data} --n {params.n:q} --max-new-tokens {params.max_new_tokens:q}"
        " --batch-size {params.batch_size:q} --decoding {params.decoding:q} --runs {params.runs:q} --seed {params.seed:q}"
        " {params.rouge} --cell {params.cell:q} --out {output.result:q} --predictions {output.predictions:q}"
        " {params.chat} {params.mumo} --threads {threads} 2>> {log:q}"


rule score_bleurt:
    """BLEURT-20 (Table 8) of every sum prediction of every run, through the PyTorch port's weights
    (workflow_scripts/bleurt.py); one record per run, the mean over items, averaged over runs in the tables.
    """
    input:
        predictions="<results>/{model}/{lang}/{method}/eval/sum_predictions.tsv",
        sum_result="<results>/{model}/{lang}/{method}/eval/sum.json",
        bleurt=bleurt_dir,
    output:
        result="<results>/{model}/{lang}/{method}/eval/sum_bleurt.json",
        per_item="<results>/{model}/{lang}/{method}/eval/sum_bleurt_items.tsv",
    log:
        "<results>/logs/score_bleurt/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/score_bleurt/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("score_bleurt", "mem_mb"),
        runtime=sized("score_bleurt", "runtime"),
        cpus_per_gpu=sized("score_bleurt", "cpus_per_gpu"),
        gpu=gpus("score_bleurt"),
    params:
        batch_size=config["evaluation"]["sum"]["bleurt_batch_size"],
    shell:
        "python -m workflow_scripts.bleurt --model {input.bleurt:q} --predictions {input.predictions:q}"
        " --sum-result {input.sum_result:q} --batch-size {params.batch_size:q} --out {output.result:q}"
        " --items {output.per_item:q} --threads {threads} 2>> {log:q}"


rule evaluate_mc:
    """Belebele (or the default's l10n proxy), 3-shot, log-likelihood accuracy through LightEval."""
    input:
        model=evaluated_model,
        data=harness_data("mc"),
    output:
        result="<results>/{model}/{lang}/{method}/eval/mc.json",
    log:
        "<results>/logs/evaluate_mc/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_mc/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("evaluate_mc", "mem_mb"),
        runtime=sized("evaluate_mc", "runtime"),
        cpus_per_gpu=sized("evaluate_mc", "cpus_per_gpu"),
        gpu=gpus("evaluate_mc"),
    params:
        args=harness_choice_args("mc"),
        cell=cell_json,
        chat=chat_template_arg,
        data_label=mc_label,
    # unquoted: params.args, params.chat (harness_choice_args: flags and numbers, the data folder shlex-quoted; chat_template_arg: a fixed flag or nothing)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness --task mc --lang {wildcards.lang:q}"
        " --model {input.model:q} {params.args} --cell {params.cell:q} --data-label {params.data_label:q}"
        " --out {output.result:q} {params.chat} --threads {threads} 2>> {log:q}"


use rule evaluate_mc as evaluate_gmmlu with:
    input:
        model=evaluated_model,
        data=harness_data("gmmlu"),
    output:
        result="<results>/{model}/{lang}/{method}/eval/gmmlu.json",
    log:
        "<results>/logs/evaluate_gmmlu/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_gmmlu/{model}.{lang}.{method}.tsv"
    resources:
        mem_mb=sized("evaluate_gmmlu", "mem_mb"),
        runtime=sized("evaluate_gmmlu", "runtime"),
        cpus_per_gpu=sized("evaluate_gmmlu", "cpus_per_gpu"),
        gpu=gpus("evaluate_gmmlu"),
    params:
        args=harness_choice_args("gmmlu"),
        cell=cell_json,
        chat=chat_template_arg,
        data_label="Global-MMLU (57 subject tasks; acc = mean over subjects)",


use rule evaluate_mc as evaluate_mc_en with:
    input:
        model=evaluated_model,
        data=harness_data("mc_en"),
    output:
        result="<results>/{model}/{lang}/{method}/eval/mc_en.json",
    log:
        "<results>/logs/evaluate_mc_en/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_mc_en/{model}.{lang}.{method}.tsv"
    resources:
        mem_mb=sized("evaluate_mc_en", "mem_mb"),
        runtime=sized("evaluate_mc_en", "runtime"),
        cpus_per_gpu=sized("evaluate_mc_en", "cpus_per_gpu"),
        gpu=gpus("evaluate_mc_en"),
    params:
        args=harness_choice_args("mc_en"),
        cell=cell_json,
        chat=chat_template_arg,
        data_label="English Belebele (retention, Table 9)",


use rule evaluate_mc as evaluate_gmmlu_en with:
    input:
        model=evaluated_model,
        data=harness_data("gmmlu_en"),
    output:
        result="<results>/{model}/{lang}/{method}/eval/gmmlu_en.json",
    log:
        "<results>/logs/evaluate_gmmlu_en/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_gmmlu_en/{model}.{lang}.{method}.tsv"
    resources:
        mem_mb=sized("evaluate_gmmlu_en", "mem_mb"),
        runtime=sized("evaluate_gmmlu_en", "runtime"),
        cpus_per_gpu=sized("evaluate_gmmlu_en", "cpus_per_gpu"),
        gpu=gpus("evaluate_gmmlu_en"),
    params:
        args=harness_choice_args("gmmlu_en"),
        cell=cell_json,
        chat=chat_template_arg,
        data_label="English MMLU (lighteval/mmlu, 57 subject tasks; retention, Table 9)",


rule evaluate_ppl:
    """Perplexity (same-vocabulary comparisons) and bits per character (comparable across vocabularies)."""
    input:
        model=evaluated_model,
        text=corpus_heldout_file,
    output:
        result="<results>/{model}/{lang}/{method}/eval/ppl.json",
    log:
        "<results>/logs/evaluate_ppl/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_ppl/{model}.{lang}.{method}.tsv"
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
        "python -m workflow_scripts.perplexity --model {input.model:q} --text {input.text:q} --n {params.n:q}"
        " --batch-size {params.batch_size:q} --cell {params.cell:q} --data-label {params.data_label:q} --out {output.result:q}"
        " --threads {threads} 2>> {log:q}"


rule measure_speed:
    """Speed on the mt prompts, and sum's where sum is evaluated (the harness's prompts): generation (greedy / paper
    decoding, batch 1 and larger) and teacher forcing of the references, repeated, in characters, source-tokenizer
    tokens and own tokens per second; and the forward passes of mc / gmmlu over prompt and choices. Each task's
    records are saved as it finishes (speed.partial.json): a rerun skips them.
    """
    input:
        model=evaluated_model,
        source=source_model_of,
        pairs=mt_file,
        sum_data=speed_sum_data,
        choice_data=speed_choice_data,
    output:
        result="<results>/{model}/{lang}/{method}/eval/speed.json",
    log:
        "<results>/logs/measure_speed/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/measure_speed/{model}.{lang}.{method}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("measure_speed", "mem_mb"),
        runtime=speed_runtime,
        cpus_per_gpu=sized("measure_speed", "cpus_per_gpu"),
        gpu=gpus("measure_speed"),
    params:
        cell=cell_json,
        data_label=data_label_of,
        n=config["evaluation"]["speed"]["n"],
        max_new_tokens=config["evaluation"]["speed"]["max_new_tokens"],
        repeats=config["evaluation"]["speed"]["repeats"],
        warmup=config["evaluation"]["speed"]["warmup"],
        batch_size=config["evaluation"]["speed"]["batch_size"],
        decodings=config["evaluation"]["speed"]["decodings"],
        teacher_forced=(
            ""
            if config["evaluation"]["speed"]["teacher_forced"]
            else "--no-teacher-forced"
        ),
        paired="--paired" if config["evaluation"]["speed"]["paired"] else "",
        reference_chars=config["evaluation"]["speed"]["reference_chars"] or 0,
        seed=config["seed"],
        mumo=mumo_args,
        sum_data=speed_sum_arg,
        choice_data=speed_choice_args,
        large_batch=speed_large_batch_args,
    # unquoted: params.choice_data, params.large_batch, params.mumo, params.paired, params.sum_data, params.teacher_forced (speed_choice_args: flags and shlex-quoted values; speed_large_batch_args: a flag and schema-enum decodings; mumo_args: fixed flags and a number, or nothing; a fixed flag or nothing; speed_sum_arg: a flag and its shlex-quoted folder; a fixed flag or nothing)
    shell:
        "python -m workflow_scripts.speed --model {input.model:q} --source-tokenizer {input.source:q}"
        " --pairs {input.pairs:q} --lang {wildcards.lang:q} --n {params.n:q} --max-new-tokens {params.max_new_tokens:q}"
        " --repeats {params.repeats:q} --warmup {params.warmup:q} --batch-size {params.batch_size:q}"
        " --decodings {params.decodings:q} {params.teacher_forced} {params.paired} --reference-chars {params.reference_chars:q}"
        " --seed {params.seed:q} {params.mumo} {params.sum_data} {params.choice_data} {params.large_batch}"
        " --cell {params.cell:q}"
        " --data-label {params.data_label:q} --out {output.result:q} --threads {threads} 2>> {log:q}"


ruleorder: evaluate_cell > evaluate_ppl
ruleorder: evaluate_cell > evaluate_mt
ruleorder: evaluate_cell > evaluate_mc
ruleorder: evaluate_cell > measure_speed


rule evaluate_cell:
    """One cell's ppl, mt, mc and speed (those of evaluation.tasks) in one process (evaluation.one_job_per_cell):
    each writes the files, in the format, of evaluate_ppl, evaluate_mt, evaluate_mc and measure_speed. One thread: two
    cells side by side on two cores finish sooner than one after the other with two threads each (docs/measurements.md).
    """
    input:
        model=evaluated_model,
        text=corpus_heldout_file,
        pairs=mt_file,
        mc=cell_mc_data,
        source=source_model_of,
        sum_data=speed_sum_data,
        choice_data=speed_choice_data,
    output:
        cell_job_outputs(),
    log:
        "<results>/logs/evaluate_cell/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/evaluate_cell/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=cell_job_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=sized("evaluate_cell", "mem_mb"),
        runtime=sized("evaluate_cell", "runtime"),
        cpus_per_gpu=sized("evaluate_cell", "cpus_per_gpu"),
        gpu=gpus("evaluate_cell"),
    params:
        cell=cell_json,
        steps=cell_step_args,
    # unquoted: params.steps (cell_step_args: fixed flags, each followed by one shlex-quoted string)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.evaluate_cell --model {input.model:q}"
        " --cell {params.cell:q} {params.steps} --threads {threads} 2>> {log:q}"
