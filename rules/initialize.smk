# Target parameter initialization of the new embedding and LM-head rows (paper 002 section 4).


rule initialize:
    """Resize the source model to T_t and set the new rows by the named method; writes a loadable HF folder."""
    input:
        source=paths.source_model(),
        tokenizer=paths.tokenizer_dir(name="aux{aux}.k{k}"),
        corpus=corpus_train_file,
    output:
        model=directory(paths.initialized_model()),
        report=paths.report(paths.initialized_model()),
    log:
        "<results>/logs/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.log",
    benchmark:
        "<results>/benchmarks/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.tsv"
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("initialize", "mem_mb"),
        runtime=sized("initialize", "runtime"),
    params:
        seed=config["seed"],
        pad=config["tokenizer"]["pad_to_multiple_of"],
    shell:
        "python -m workflow_scripts.initialize --source-model {input.source:q} --target-tokenizer {input.tokenizer:q}"
        " --corpus {input.corpus:q}"
        " --method {wildcards.init:q} --seed {params.seed:q} --pad-to-multiple-of {params.pad:q}"
        " --out {output.model:q} --report {output.report:q} --threads {threads} 2>> {log:q}"


rule initialize_replace:
    """vocab replace (Table 11): every embedding and LM-head row set for the replacement tokenizer (Random, Mean,
    FOCUS; special tokens and, except under Random, the tokens V_s shares copy their source rows).
    """
    input:
        source=paths.source_model(),
        tokenizer=paths.tokenizer_dir(name="replace{size}"),
        corpus=corpus_train_file,
    output:
        model=directory(paths.initialized_model(vocab="replace{size}")),
        report=paths.report(paths.initialized_model(vocab="replace{size}")),
    log:
        "<results>/logs/initialize_replace/{model}.{lang}.{init}.replace{size}.log",
    benchmark:
        "<results>/benchmarks/initialize_replace/{model}.{lang}.{init}.replace{size}.tsv"
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("initialize_replace", "mem_mb"),
        runtime=sized("initialize_replace", "runtime"),
    params:
        seed=config["seed"],
        pad=config["tokenizer"]["pad_to_multiple_of"],
    shell:
        "python -m workflow_scripts.initialize --vocab replace --source-model {input.source:q}"
        " --target-tokenizer {input.tokenizer:q} --corpus {input.corpus:q}"
        " --method {wildcards.init:q} --seed {params.seed:q} --pad-to-multiple-of {params.pad:q}"
        " --out {output.model:q} --report {output.report:q} --threads {threads} 2>> {log:q}"


# A training seed other than the config's (a methods entry's `seed`, workflow_scripts/plan/grid.py) initializes its own
# model: <init>.<vocab>.s<seed> (grid.SEED_SUFFIX), drawn with that seed.
use rule initialize as initialize_seeded with:
    output:
        model=directory(paths.initialized_model(vocab="aux{aux}.k{k}.s{seed}")),
        report=paths.report(paths.initialized_model(vocab="aux{aux}.k{k}.s{seed}")),
    log:
        "<results>/logs/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.s{seed}.log",
    benchmark:
        "<results>/benchmarks/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.s{seed}.tsv"
    wildcard_constraints:
        seed=r"\d+",
    params:
        seed=init_seed,
        pad=config["tokenizer"]["pad_to_multiple_of"],


# A method with settings in the config (`initialization.<method>`: registry.method_options) is initialized by these
# two rules, which pass the settings on; every other method keeps the plain rules above, so naming settings for one
# method replans only its cells.
rule initialize_configured:
    """initialize, for a method with settings in the config's `initialization` block."""
    input:
        source=paths.source_model(),
        tokenizer=paths.tokenizer_dir(name="aux{aux}.k{k}"),
        corpus=corpus_train_file,
    output:
        model=directory(paths.initialized_model()),
        report=paths.report(paths.initialized_model()),
    log:
        "<results>/logs/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.log",
    benchmark:
        "<results>/benchmarks/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.tsv"
    wildcard_constraints:
        init=CONFIGURED_INITS,
    priority: TRAINING_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: 2
    resources:
        mem_mb=sized("initialize", "mem_mb"),
        runtime=sized("initialize", "runtime"),
    params:
        seed=config["seed"],
        pad=config["tokenizer"]["pad_to_multiple_of"],
        options=init_options,
    shell:
        "python -m workflow_scripts.initialize --source-model {input.source:q} --target-tokenizer {input.tokenizer:q}"
        " --corpus {input.corpus:q} --method-options {params.options:q}"
        " --method {wildcards.init:q} --seed {params.seed:q} --pad-to-multiple-of {params.pad:q}"
        " --out {output.model:q} --report {output.report:q} --threads {threads} 2>> {log:q}"


use rule initialize_configured as initialize_configured_seeded with:
    output:
        model=directory(paths.initialized_model(vocab="aux{aux}.k{k}.s{seed}")),
        report=paths.report(paths.initialized_model(vocab="aux{aux}.k{k}.s{seed}")),
    log:
        "<results>/logs/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.s{seed}.log",
    benchmark:
        "<results>/benchmarks/initialize/{model}.{lang}.{init}.aux{aux}.k{k}.s{seed}.tsv"
    wildcard_constraints:
        init=CONFIGURED_INITS,
        seed=r"\d+",
    params:
        seed=init_seed,
        pad=config["tokenizer"]["pad_to_multiple_of"],
        options=init_options,


ruleorder: initialize_configured > initialize
ruleorder: initialize_configured_seeded > initialize_seeded


use rule initialize_replace as initialize_replace_seeded with:
    output:
        model=directory(paths.initialized_model(vocab="replace{size}.s{seed}")),
        report=paths.report(paths.initialized_model(vocab="replace{size}.s{seed}")),
    log:
        "<results>/logs/initialize_replace/{model}.{lang}.{init}.replace{size}.s{seed}.log",
    benchmark:
        "<results>/benchmarks/initialize_replace/{model}.{lang}.{init}.replace{size}.s{seed}.tsv"
    wildcard_constraints:
        seed=r"\d+",
    params:
        seed=init_seed,
        pad=config["tokenizer"]["pad_to_multiple_of"],
