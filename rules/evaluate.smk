# Evaluation of every cell: MT (chrF), held-out perplexity / bits per character, and generation speed.


rule evaluate_mt:
    """English->target translation with the paper's prompt through LightEval; chrF per sentence, averaged (and corpus).
    A MuMo cell's model is its MuMo folder: its decoder behind LightEval's generate (verification unless noverify).
    """
    input:
        unpack(step_inputs("mt")),
    output:
        result=paths.eval_file(name="mt.json"),
        predictions=paths.eval_file(name="mt_predictions.tsv"),
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
        args=step_args("mt"),
    # unquoted: params.args (step_args: the step's arguments, each shell-quoted by workflow_scripts/steps.py)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness {params.args} --threads {threads}"
        " 2>> {log:q}"


rule evaluate_sum:
    """Summarization with the paper's prompt (XL-Sum / MLSUM / GreekSUM) through LightEval; ROUGE-L F1 on mT5 pieces
    (rougeL_mt5) or script-aware (rougeL_script), as evaluation.sum.rouge_tokenizer says.
    """
    input:
        unpack(step_inputs("sum")),
    output:
        result=paths.eval_file(name="sum.json"),
        predictions=paths.eval_file(name="sum_predictions.tsv"),
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
        args=step_args("sum"),
    # unquoted: params.args (step_args: the step's arguments, each shell-quoted by workflow_scripts/steps.py)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness {params.args} --threads {threads}"
        " 2>> {log:q}"


rule score_bleurt:
    """BLEURT-20 (Table 8) of every sum prediction of every run, through the PyTorch port's weights
    (workflow_scripts/bleurt.py); one record per run, the mean over items, averaged over runs in the tables.
    """
    input:
        predictions=paths.eval_file(name="sum_predictions.tsv"),
        sum_result=paths.eval_file(name="sum.json"),
        bleurt=bleurt_dir,
    output:
        result=paths.eval_file(name="sum_bleurt.json"),
        per_item=paths.eval_file(name="sum_bleurt_items.tsv"),
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
        unpack(step_inputs("mc")),
    output:
        result=paths.eval_file(name="mc.json"),
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
        args=step_args("mc"),
    # unquoted: params.args (step_args: the step's arguments, each shell-quoted by workflow_scripts/steps.py)
    shell:
        "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m workflow_scripts.harness {params.args} --threads {threads}"
        " 2>> {log:q}"


use rule evaluate_mc as evaluate_gmmlu with:
    input:
        unpack(step_inputs("gmmlu")),
    output:
        result=paths.eval_file(name="gmmlu.json"),
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
        args=step_args("gmmlu"),


use rule evaluate_mc as evaluate_mc_en with:
    input:
        unpack(step_inputs("mc_en")),
    output:
        result=paths.eval_file(name="mc_en.json"),
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
        args=step_args("mc_en"),


use rule evaluate_mc as evaluate_gmmlu_en with:
    input:
        unpack(step_inputs("gmmlu_en")),
    output:
        result=paths.eval_file(name="gmmlu_en.json"),
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
        args=step_args("gmmlu_en"),


rule evaluate_ppl:
    """Perplexity (same-vocabulary comparisons) and bits per character (comparable across vocabularies)."""
    input:
        unpack(step_inputs("ppl")),
    output:
        result=paths.eval_file(name="ppl.json"),
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
        args=step_args("ppl"),
    # unquoted: params.args (step_args: the step's arguments, each shell-quoted by workflow_scripts/steps.py)
    shell:
        "python -m workflow_scripts.perplexity {params.args} --threads {threads} 2>> {log:q}"


rule measure_speed:
    """Speed on the mt prompts, and sum's where sum is evaluated (the harness's prompts): generation (greedy / paper
    decoding, batch 1 and larger) and teacher forcing of the references, repeated, in characters, source-tokenizer
    tokens and own tokens per second; and the forward passes of mc / gmmlu over prompt and choices. Each task's
    records are saved as it finishes (speed.partial.json): a rerun skips them.
    """
    input:
        unpack(step_inputs("speed")),
    output:
        result=paths.eval_file(name="speed.json"),
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
        args=step_args("speed"),
    # unquoted: params.args (step_args: the step's arguments, each shell-quoted by workflow_scripts/steps.py)
    shell:
        "python -m workflow_scripts.speed {params.args} --threads {threads} 2>> {log:q}"


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
        unpack(cell_job_inputs),
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
