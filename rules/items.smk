# Which items mt and sum evaluate (evaluation.items; workflow_scripts/items.py, docs/evaluation.md "Which items").
# mt's selection happens in rule flores_mt (rules/data.smk); sum's here, from the mirrored dataset.


localrules:
    download_items_tokenizer,


rule download_items_tokenizer:
    """Fetch the tokenizer files (no weights) of evaluation.items_tokenizer once (run where the network is)."""
    output:
        directory(paths.items_tokenizer()),
    log:
        "<results>/logs/download_items_tokenizer.log",
    conda:
        "../envs/workflow.yaml"
    params:
        hub_id=config["evaluation"]["items_tokenizer"],
    shell:
        "python -m workflow_scripts.items tokenizer --hub-id {params.hub_id:q} --out {output:q} 2>> {log:q}"


rule select_sum_items:
    """sum's items as a hub-layout folder the harness reads whole (paper: the n shortest articles of test +
    validation by the items tokenizer's length; first: the first n), and the chosen ids.
    """
    input:
        data=sum_mirror,
        tokenizer=items_tokenizer,
    output:
        data=directory(paths.sum_items()),
        ids=paths.sum_item_ids(),
    log:
        "<results>/logs/select_sum_items/{lang}.{selection}.log",
    benchmark:
        "<results>/benchmarks/select_sum_items/{lang}.{selection}.tsv"
    wildcard_constraints:
        selection="paper|first",
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("select_sum_items", "mem_mb"),
        runtime=sized("select_sum_items", "runtime"),
    params:
        n=config["evaluation"]["sum"]["n"],
        tokenizer=items_tokenizer_arg,
    # unquoted: params.tokenizer (items_tokenizer_arg: a flag and its shlex-quoted folder)
    shell:
        "python -m workflow_scripts.items sum --data {input.data:q} --lang {wildcards.lang:q}"
        " --items {wildcards.selection:q} --n {params.n:q} {params.tokenizer} --out {output.data:q} --ids {output.ids:q} 2>> {log:q}"
