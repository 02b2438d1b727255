# Source models as plain Hugging Face folders (GGUF package -> safetensors once; hub or local folder; random for tests).


rule prepare_source_model:
    """Materialize a config `models` entry as a save_pretrained folder (safetensors + tokenizer)."""
    output:
        model=directory(paths.source_model()),
        info=paths.model_info(),
    log:
        "<results>/logs/prepare_source_model/{model}.log",
    benchmark:
        "<results>/benchmarks/prepare_source_model/{model}.tsv"
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("prepare_source_model", "mem_mb"),
        runtime=sized("prepare_source_model", "runtime"),
    params:
        spec=model_spec_json,
    shell:
        "python -m workflow_scripts.source_model --spec {params.spec:q} --out {output.model:q}"
        " --info {output.info:q} 2>> {log:q}"


use rule prepare_source_model as prepare_chat_model with:
    output:
        model=directory(paths.source_model(role="chat")),
        info=paths.model_info(role="chat"),
    log:
        "<results>/logs/prepare_chat_model/{model}.log",
    benchmark:
        "<results>/benchmarks/prepare_chat_model/{model}.tsv"
    resources:
        mem_mb=sized("prepare_chat_model", "mem_mb"),
        runtime=sized("prepare_chat_model", "runtime"),
    params:
        spec=chat_spec_json,
