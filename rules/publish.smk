# Publishing what is adapted (docs/publishing.md): a Hugging Face model card per adapted cell, written from results.csv
# (workflow_scripts/publish/card.py; also the README.md of a model folder the cell owns), and, where publish.repo_prefix
# is set, each selected cell's model folder, card and GGUF files uploaded to its hub repository. Both rules run where
# Snakemake runs (the login node on a cluster: the upload needs the network).


localrules:
    model_card,
    publish,


rule model_card:
    """The cell's Hugging Face model card: metadata and model-index (every result of the cell in results.csv) by
    huggingface_hub, the recipe, provenance and limitations generated from the numbers.
    """
    input:
        results=paths.table("results.csv"),
        model=publish_model,
        stats=card_stats,
    output:
        paths.model_card(),
    log:
        "<results>/logs/model_card/{model}.{lang}.{method}.log",
    wildcard_constraints:
        method=card_slugs(),
    conda:
        "../envs/workflow.yaml"
    params:
        spec=card_spec_json,
        options=card_options,
    # unquoted: params.options (card_options: flags and shlex-quoted paths)
    shell:
        "python -m workflow_scripts.publish card --results {input.results:q} --spec {params.spec:q}"
        " {params.options} --out {output:q} 2>> {log:q}"


rule publish:
    """Upload the cell's model folder, its card as README.md and its GGUF files to its hub repository (created where
    missing); only what differs from the repository is sent. The record names the commit.
    """
    input:
        model=publish_model,
        card=paths.model_card(),
        gguf=publish_gguf,
    output:
        paths.publish_record(),
    log:
        "<results>/logs/publish/{model}.{lang}.{method}.log",
    wildcard_constraints:
        method=publish_slugs(),
    conda:
        "../envs/workflow.yaml"
    params:
        repo=publish_repo,
        private="--private" if PUBLISH["private"] else "",
        gguf=publish_gguf_option,
    # unquoted: params.private, params.gguf (a fixed flag; a flag and shlex-quoted paths; or nothing)
    shell:
        "python -m workflow_scripts.publish upload --repo {params.repo:q} --model {input.model:q}"
        " --card {input.card:q} {params.gguf} {params.private} --out {output:q} 2>> {log:q}"
