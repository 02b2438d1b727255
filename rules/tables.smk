# One tidy long-format results table for the whole grid, and its Markdown rendering.


localrules:
    tables,


rule tables:
    """Collect every evaluation result into results/tables/results.csv (long format) and results.md."""
    input:
        eval_files(),
    output:
        csv="results/tables/results.csv",
        markdown="results/tables/results.md",
    log:
        "results/logs/tables/tables.log",
    conda:
        "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.tables --inputs {input} --csv {output.csv} --markdown {output.markdown}"
        " 2>> {log}"
