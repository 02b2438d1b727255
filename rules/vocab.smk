# Auxiliary tokenizer on D and the expanded target tokenizer T_t (a real BPE over V_s + V_new).


rule train_aux_tokenizer:
    """T_aux with |V_aux| tokens trained on D, by the route the source tokenizer's family requires."""
    input:
        source=paths.source_model(),
        corpus=corpus_train_file,
    output:
        paths.aux_tokenizer(),
    log:
        "<results>/logs/train_aux_tokenizer/{model}.{lang}.aux{aux}.log",
    benchmark:
        "<results>/benchmarks/train_aux_tokenizer/{model}.{lang}.aux{aux}.tsv"
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("train_aux_tokenizer", "mem_mb"),
        runtime=sized("train_aux_tokenizer", "runtime"),
    params:
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.vocab aux --source-tokenizer {input.source:q} --corpus {input.corpus:q}"
        " --vocab-size {wildcards.aux:q} --seed {params.seed:q} --out {output:q}"
        " --threads {threads} 2>> {log:q}"


rule expand_tokenizer:
    """V_new = the k most frequent aux tokens not in V_s, added as BPE vocabulary entries and merges placed before
    (tokenizer.new_merges: first) or after (last, the default) the source merges."""
    input:
        source=paths.source_model(),
        aux=paths.aux_tokenizer(),
        corpus=corpus_train_file,
        heldout=corpus_heldout_file,
    output:
        tokenizer=directory(paths.tokenizer_dir(name="aux{aux}.k{k}")),
        report=paths.report(paths.tokenizer_dir(name="aux{aux}.k{k}")),
    log:
        "<results>/logs/expand_tokenizer/{model}.{lang}.aux{aux}.k{k}.log",
    benchmark:
        "<results>/benchmarks/expand_tokenizer/{model}.{lang}.aux{aux}.k{k}.tsv"
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("expand_tokenizer", "mem_mb"),
        runtime=sized("expand_tokenizer", "runtime"),
    params:
        new_merges=config["tokenizer"]["new_merges"],
        selection=config["tokenizer"]["selection"],
    shell:
        "python -m workflow_scripts.vocab expand --source-tokenizer {input.source:q} --aux {input.aux:q}"
        " --corpus {input.corpus:q} --heldout {input.heldout:q} --k {wildcards.k:q} --out {output.tokenizer:q}"
        " --new-merges {params.new_merges:q} --selection {params.selection:q} --report {output.report:q} 2>> {log:q}"


rule replace_tokenizer:
    """vocab replace (Table 11): a tokenizer of replace_vocab_size tokens trained on D by the source family's route,
    replacing V_s; the source's special tokens keep their meaning (ids mapped in the report).
    """
    input:
        source=paths.source_model(),
        corpus=corpus_train_file,
        heldout=corpus_heldout_file,
    output:
        tokenizer=directory(paths.tokenizer_dir(name="replace{size}")),
        report=paths.report(paths.tokenizer_dir(name="replace{size}")),
    log:
        "<results>/logs/replace_tokenizer/{model}.{lang}.replace{size}.log",
    benchmark:
        "<results>/benchmarks/replace_tokenizer/{model}.{lang}.replace{size}.tsv"
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("replace_tokenizer", "mem_mb"),
        runtime=sized("replace_tokenizer", "runtime"),
    params:
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.vocab replace --source-tokenizer {input.source:q} --corpus {input.corpus:q}"
        " --heldout {input.heldout:q} --vocab-size {wildcards.size:q} --seed {params.seed:q} --out {output.tokenizer:q}"
        " --report {output.report:q} --threads {threads} 2>> {log:q}"
