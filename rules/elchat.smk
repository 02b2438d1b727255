# Post-hoc methods on an adapted model: ElChat (paper 002 section 8.2, Table 10).


rule elchat:
    """Merge the adapted model into the model's instruction-tuned sibling: slerp of layers 0, 1, -2, -1, every row from
    the adapted model, the special tokens' rows and the chat template from the chat model (workflow_scripts/elchat.py).
    """
    input:
        chat=chat_model_dir,
        adapted=adapted_model,
    output:
        model=directory(paths.trained_model()),
        report=paths.elchat_report(),
    log:
        "<results>/logs/elchat/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/elchat/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=posthoc_slugs("elchat"),
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("elchat", "mem_mb"),
        runtime=sized("elchat", "runtime"),
    shell:
        "python -m workflow_scripts.elchat --chat {input.chat:q} --adapted {input.adapted:q} --out {output.model:q}"
        " --report {output.report:q} --threads {threads} 2>> {log:q}"
