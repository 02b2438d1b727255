# One tidy long-format results table for the whole grid, and its Markdown rendering.
from workflow_scripts.findings.titles import report_labels as findings_labels
from workflow_scripts.paper.specs import report_category, report_labels, report_titles


localrules:
    tables,
    paper_tables,
    findings,


rule tables:
    """Collect every evaluation result into <results>/tables/results.csv (long format) and the results page: results.md
    (led by tokens per sentence, the paired speed-up, bits per character and the loss curves), its figure, and the
    HTML the report shows as its first page (report/workflow.rst)."""
    input:
        results=eval_files() + serve_speed_files(),
        losses=lead_loss_files(),
    output:
        csv=paths.table("results.csv"),
        markdown=paths.table("results.md"),
        figure=paths.table("results.png"),
        figure_pdf=paths.table("results.pdf"),
        html=paths.table("results.html"),
    log:
        "<results>/logs/tables/tables.log",
    conda:
        "../envs/workflow.yaml"
    params:
        seed=config["seed"],
    shell:
        "python -m workflow_scripts.tables --inputs {input.results:q} --losses {input.losses:q}"
        " --csv {output.csv:q} --markdown {output.markdown:q} --figure {output.figure:q} --html {output.html:q}"
        " --seed {params.seed:q} 2>> {log:q}"


rule paper_tables:
    """The paper's Tables 1-11 and 14, Figures 2-5, the loss curves and the cost per cell, from results.csv alone, into
    one folder: the tables and figures this run's results fill, and tables.md listing what the configuration did not
    run."""
    input:
        results=paths.table("results.csv"),
        markdown=paths.table("results.md"),
        fragmentation=paths.analysis_file("fragmentation.csv"),
    output:
        paper=report(
            directory(paths.paper_dir()),
            patterns=["{name}.html", "{name}.png"],
            caption="../report/paper.rst",
            category=report_category,
            labels=report_labels,
        ),
    log:
        "<results>/logs/paper_tables/paper_tables.log",
    conda:
        "../envs/workflow.yaml"
    params:
        sizes=paper_sizes,
        data=fragmentation_label,
        titles=report_titles(),
    # unquoted: params.sizes (paper_sizes: flags and shlex-quoted model=size values)
    shell:
        "python -m workflow_scripts.paper --results {input.results:q} --out {output.paper:q} {params.sizes}"
        " 2>> {log:q}"


rule findings:
    """The findings page (docs/findings.md): quality against speed, learning curves, the number of new tokens, a table
    per language and bullets generated from the numbers, from results.csv, the cells' curves, ppl results and GGUF
    checks.
    """
    input:
        results=paths.table("results.csv"),
        markdown=paths.table("results.md"),
        curves=curve_files(),
        fidelity=gguf_fidelity_files(),
    output:
        findings=report(
            directory(paths.findings_dir()),
            patterns=["{name}.html", "{name}.png"],
            caption="../report/findings.rst",
            category="Findings",
            labels=findings_labels,
        ),
    log:
        "<results>/logs/findings/findings.log",
    conda:
        "../envs/workflow.yaml"
    params:
        data=fragmentation_label,
    # the run folder (its cells' learning curves) is the one around results.csv: the command's default --root
    shell:
        "python -m workflow_scripts.findings --results {input.results:q} --out {output.findings:q}"
        " 2>> {log:q}"
