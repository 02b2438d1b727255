"""Summarization (paper 002 Table 13 b; workflow_scripts/harness): ROUGE-L by segmentation and BLEURT."""

from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli


def rouge(steps) -> list[list[str]]:
    """ROUGE-L's segmentation: mT5 pieces (the spiece.model file) or script-aware."""
    spiece = steps.layout.mt5_spiece()
    if spiece:
        return cli(rouge_tokenizer=steps.evaluation["sum"]["rouge_tokenizer"], mt5_spiece=spiece)
    return cli(rouge_tokenizer="script")


def step(steps, wc):
    """The articles (a mirror's folder), the shared decoding options, ROUGE-L's segmentation; sum.json and its
    predictions."""
    data, model = steps.layout.harness_data("sum", wc.lang), steps.model(wc)
    return Step(
        {"model": model, "data": data, "spiece": steps.layout.mt5_spiece()},
        cli(task="sum", lang=wc.lang, model=model)
        + (cli(data=data) if data else [])
        + steps.generation("sum", wc)
        + rouge(steps)
        + cli(cell=steps.cell(wc), out=steps.out(wc, "sum.json"), predictions=steps.out(wc, "sum_predictions.tsv"))
        + steps.chat(wc)
        + steps.mumo(wc),
    )


SPEC = register(
    TaskSpec(
        name="sum",
        order=40,
        rule="evaluate_sum",
        # 500 articles, prompts up to 4,096 tokens, 5 sampled runs with 5 beams (Table 13 b)
        cost=((7000, 57), (6000, 25.5), (2000, 30)),
        rule_words="summarization",
        words="summarization",
        card_type="summarization",
        # one column per ROUGE-L segmentation (harness/metrics.py): their numbers never share a column
        columns=(
            Column("summarization ROUGE-L (mT5 pieces)", "rougeL_mt5", "{:.1f}", 20),
            Column("summarization ROUGE-L (script-aware)", "rougeL_script", "{:.1f}", 21),
            Column("summarization ROUGE-L (reference code)", "rougeL_reference", "{:.1f}", 22),
            Column("summarization BLEURT", "bleurt", "{:.3f}", 23),
        ),
        mumo=True,
        not_run_note="no target-language document/summary pairs for this data are reachable offline; the task runs "
        "on XL-Sum, MLSUM, GreekSUM mirrors and is tested on XL-Sum-layout fixtures",
        step=step,
    )
)
