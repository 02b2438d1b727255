# Evaluation of every cell: one rule per evaluation task, BLEURT of summaries, and the per-cell job.


# One rule per evaluation task (workflow_scripts/tasks/: its module's spec gives the rule's name, docstring, inputs,
# outputs, cost and program); the per-cell job (evaluate_cell, below) takes precedence over the rule of each task it runs.
for task in TASK_SPECS.values():

    rule:
        name:
            task.rule
        input:
            unpack(step_inputs(task.name)),
        output:
            **{key: paths.eval_file(name=file) for key, file in task.outputs.items()},
        log:
            f"<results>/logs/{task.rule}/{{model}}.{{lang}}.{{method}}.log",
        benchmark:
            f"<results>/benchmarks/{task.rule}/{{model}}.{{lang}}.{{method}}.tsv"
        conda:
            "../envs/workflow.yaml"
        threads: 2
        resources:
            mem_mb=sized(task.rule, "mem_mb"),
            runtime=task_runtime(task),
            cpus_per_gpu=sized(task.rule, "cpus_per_gpu"),
            gpu=gpus(task.rule),
        params:
            program=task.shell_command,
            args=step_args(task.name),
        # unquoted: params.program, params.args (the task's program, TaskSpec.shell_command; the step's arguments,
        # each shell-quoted by workflow_scripts/plan/steps.py). A shell expression is evaluated again when the job runs,
        # after this loop has moved on: the program is a param, bound to this rule here.
        shell:
            "{params.program} {params.args} --threads {threads} 2>> {log:q}"

    workflow.get_rule(task.rule).docstring = task.doc
    if task.cell_job:
        workflow.ruleorder("evaluate_cell", task.rule)


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


rule evaluate_cell:
    """One cell's tasks whose spec says cell_job (those of evaluation.tasks) in one process
    (evaluation.one_job_per_cell): each writes the files, in the format, of its own rule. One thread: two cells side by
    side on two cores finish sooner than one after the other with two threads each (docs/measurements.md).
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
