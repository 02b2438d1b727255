"""Translation (paper 002 Table 2; workflow_scripts/harness): English to the target language through LightEval, chrF."""

from functools import partial

from workflow_scripts.labels import mt_data_label
from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli, item_id


def mt_doc(line: dict, task_name: str, lang: str):
    """One mt item: the paper's prompt on the English source; the target sentence is the reference."""
    from lighteval.tasks.requests import Doc

    from workflow_scripts import prompts

    return Doc(
        query=prompts.mt_query(line["source"], lang),
        choices=[line["reference"]],
        gold_index=0,
        task_name=task_name,
        specific=item_id(line),
    )


def lighteval(kit, lang: str, folder, generation_size: int = 128, tokenizer_dir: str | None = None):
    """``mt_<lang>``: English→target, zero-shot, at most ``generation_size`` new tokens, stop at newline; chrF. It
    reads the pairs layout of ``harness.datasets.pairs_dataset``."""
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    from workflow_scripts.languages import flores_subset

    return LightevalTaskConfig(
        name=f"mt_{lang}",
        hf_repo=str(folder),
        hf_avail_splits=["train", "dev", "test"],
        prompt_function=partial(mt_doc, lang=lang),
        hf_subset=flores_subset(lang),
        evaluation_splits=["test"],
        metrics=kit.lighteval_metrics.chrf_metrics(),
        generation_size=generation_size,
        stop_sequence=["\n"],
    )


def step(steps, wc):
    """The MT pairs, the shared decoding options, the cell and data label; mt.json and its predictions."""
    pairs, model = steps.layout.data_file(wc.lang, "mt.tsv"), steps.model(wc)
    return Step(
        {"model": model, "pairs": pairs},
        cli(task="mt", lang=wc.lang, model=model, pairs=pairs)
        + steps.generation("mt", wc)
        + cli(
            cell=steps.cell(wc),
            data_label=mt_data_label(steps.layout, wc.lang),
            out=steps.out(wc, "mt.json"),
            predictions=steps.out(wc, "mt_predictions.tsv"),
        )
        + steps.chat(wc)
        + steps.mumo(wc),
    )


SPEC = register(
    TaskSpec(
        name="mt",
        order=10,
        rule="evaluate_mt",
        cost=((7000, 29), (6000, 5.5), (2000, 15)),
        rule_words="translation",
        words="translation",
        card_type="translation",
        columns=(Column("translation chrF (0–100)", "chrF", "{:.1f}", 10),),
        mumo=True,
        predictions=True,
        cell_job=True,
        cell_order=2,
        doc="English->target translation with the paper's prompt through LightEval; chrF per sentence, averaged (and "
        "corpus). A MuMo cell's model is its MuMo folder: its decoder behind LightEval's generate (verification unless "
        "noverify).",
        step=step,
        lighteval=lighteval,
        prompt=True,
        prompt_tokens=512,
    )
)
