# What separates Align from Mean (docs/align-mean.md): boundary crossings of new tokens in D, rows differing from Mean under new
# merges first and last, and held-out nats/char without training. A separate target, not part of `rule all`:
#   snakemake --cores 2 init_analysis


rule init_analysis_cell:
    """One model x language: T_t with new merges first and last, crossings, differing rows, nats/char (no training)."""
    input:
        source=paths.source_model(),
        aux=paths.aux_tokenizer(),
        corpus=corpus_train_file,
        heldout=corpus_heldout_file,
    output:
        paths.analysis_file("init_analysis/{model}.{lang}.aux{aux}.k{k}.json"),
    log:
        "<results>/logs/init_analysis_cell/{model}.{lang}.aux{aux}.k{k}.log",
    benchmark:
        "<results>/benchmarks/init_analysis_cell/{model}.{lang}.aux{aux}.k{k}.tsv"
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("init_analysis_cell", "mem_mb"),
        runtime=sized("init_analysis_cell", "runtime"),
        cpus_per_gpu=sized("init_analysis_cell", "cpus_per_gpu"),
        gpu=gpus("init_analysis_cell"),
    params:
        seed=config["seed"],
        batch_size=config["evaluation"]["ppl"]["batch_size"],
        max_heldout=config["evaluation"]["ppl"]["n"],
    shell:
        "python -m workflow_scripts.init_analysis cell --source-model {input.source:q} --aux {input.aux:q}"
        " --corpus {input.corpus:q} --heldout {input.heldout:q} --k {wildcards.k:q} --seed {params.seed:q}"
        " --batch-size {params.batch_size:q} --max-heldout {params.max_heldout:q} --model {wildcards.model:q}"
        " --language {wildcards.lang:q} --aux-vocab-size {wildcards.aux:q} --out {output:q}"
        " --threads {threads} 2>> {log:q}"


rule init_analysis:
    """The table of every configured model x language: <results>/analysis/init_analysis.csv."""
    input:
        init_analysis_cells(),
    output:
        paths.analysis_file("init_analysis.csv"),
    log:
        "<results>/logs/init_analysis/collect.log",
    conda:
        "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.init_analysis collect --out {output:q} {input:q} 2>> {log:q}"


localrules:
    fragmentation,


rule fragmentation:
    """Mean tokens per sentence per language for each source tokenizer (the paper's Figure 2)."""
    input:
        tokenizers=[LAYOUT.source_model(m) for m in MODELS],
        pairs=[LAYOUT.data_file(lang, "mt.tsv") for lang in LANGUAGES],
    output:
        paths.analysis_file("fragmentation.csv"),
    log:
        "<results>/logs/fragmentation/fragmentation.log",
    conda:
        "../envs/workflow.yaml"
    params:
        tokenizers=fragmentation_tokenizers,
        pairs=fragmentation_pairs,
        label=fragmentation_label,
    # unquoted: params.pairs, params.tokenizers (fragmentation_pairs: shlex-quoted lang=file values; fragmentation_tokenizers: shlex-quoted model=folder values)
    shell:
        "python -m workflow_scripts.fragmentation --tokenizers {params.tokenizers} --pairs {params.pairs}"
        " --texts-label {params.label:q} --out {output:q} 2>> {log:q}"
