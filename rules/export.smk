# Serving what is adapted (docs/serving.md): each non-MuMo cell's model written as GGUF by llama.cpp's own converter
# (export.gguf: the types; none by default), checked in llama.cpp against transformers, and its serving speed in
# llama.cpp measured next to Source's. Needs `make llama-cpp`.


rule export_gguf:
    """A cell's model (LoRA merged by LAPT) and its tokenizer as GGUF, one file per export.gguf type."""
    input:
        model=gguf_model,
        source=source_model_of,
    output:
        [paths.gguf_file(gguf_type=t) for t in GGUF_TYPES],
    log:
        "<results>/logs/export_gguf/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/export_gguf/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=non_mumo_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=sized("export_gguf", "mem_mb"),
        runtime=sized("export_gguf", "runtime"),
    params:
        types=GGUF_TYPES,
        out_dir=gguf_dir,
    shell:
        "python -m workflow_scripts.serve.export --model {input.model:q} --source {input.source:q}"
        " --types {params.types:q} --out-dir {params.out_dir:q} --log {log:q}"


rule check_gguf:
    """Token ids of the held-out sentences in llama.cpp against the HF tokenizer, and greedy continuations from
    llama.cpp against transformers', for each GGUF file of a cell."""
    input:
        gguf=gguf_files,
        model=gguf_model,
        text=corpus_heldout_file,
    output:
        paths.gguf_fidelity(),
    log:
        "<results>/logs/check_gguf/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/check_gguf/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=non_mumo_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=sized("check_gguf", "mem_mb"),
        runtime=sized("check_gguf", "runtime"),
    params:
        cell=cell_json,
        n=config["export"]["check"]["n"],
        prompts=config["export"]["check"]["prompts"],
        tokens=config["export"]["check"]["tokens"],
    shell:
        "python -m workflow_scripts.serve.fidelity --gguf {input.gguf:q} --model {input.model:q}"
        " --text {input.text:q} --n {params.n:q} --prompts {params.prompts:q} --tokens {params.tokens:q}"
        " --lang {wildcards.lang:q} --cell {params.cell:q} --threads {threads} --out {output:q} --log {log:q}"


rule serve_speed:
    """The cell and Source timed item by item in one job: teacher forcing of the mt references in llama.cpp (their
    GGUF files), or fixed-length greedy generation in vLLM (export.speed.engine): paired speed-up and its bound.
    """
    input:
        model=gguf_model,
        source=source_model_of,
        pairs=mt_file,
        ggufs=serve_ggufs,
    output:
        paths.eval_file(name="serve_speed.json"),
    log:
        "<results>/logs/serve_speed/{model}.{lang}.{method}.log",
    benchmark:
        "<results>/benchmarks/serve_speed/{model}.{lang}.{method}.tsv"
    wildcard_constraints:
        method=adapted_slugs(),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=sized("serve_speed", "mem_mb"),
        runtime=sized("serve_speed", "runtime"),
    params:
        cell=cell_json,
        n=config["export"]["speed"]["n"],
        repeats=config["export"]["speed"]["repeats"],
        reference_chars=config["export"]["speed"]["reference_chars"] or 0,
        engine=serve_engine_args,
    # unquoted: params.engine (serve_engine_args: fixed flags and shlex-quoted file paths)
    shell:
        "python -m workflow_scripts.serve.speed {params.engine}"
        " --model {input.model:q} --source {input.source:q} --pairs {input.pairs:q} --lang {wildcards.lang:q}"
        " --n {params.n:q} --repeats {params.repeats:q} --reference-chars {params.reference_chars:q}"
        " --threads {threads} --cell {params.cell:q} --out {output:q} --log {log:q}"
