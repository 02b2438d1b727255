"""Summarization (paper 002 Table 13 b; workflow_scripts/harness): ROUGE-L by segmentation and BLEURT."""

from functools import cache, partial

from workflow_scripts.languages import language
from workflow_scripts.tasks import Column, TaskSpec, register
from workflow_scripts.tasks.base import Source, Step, Unavailable, cli, item_id

# XL-Sum's 45 subsets (csebuetnlp/xlsum), the languages' English names in lower case where one language has one
# subset; German and Greek come from MLSUM and GreekSUM.
XLSUM_SUBSETS = frozenset(
    "amharic arabic azerbaijani bengali burmese chinese_simplified chinese_traditional english french gujarati hausa "
    "hindi igbo indonesian japanese kirundi korean kyrgyz marathi nepali oromo pashto persian pidgin portuguese "
    "punjabi russian scottish_gaelic serbian_cyrillic serbian_latin sinhala somali spanish swahili tamil telugu thai "
    "tigrinya turkish ukrainian urdu uzbek vietnamese welsh yoruba".split()
)


def xlsum_subset(lang: str) -> str:
    """XL-Sum's subset of a language (its English name in lower case), or Unavailable."""
    name = "english" if lang == "en" else language(lang).name.lower().replace(" ", "_")
    if name not in XLSUM_SUBSETS:
        raise Unavailable(f"XL-Sum has no subset for {lang} ({name}); give a sum dataset of your own (docs/data.md)")
    return name


def source(lang: str) -> Source:
    """XL-Sum's subset (test; few-shot train), MLSUM for German, GreekSUM for Greek."""
    if lang == "de":
        return Source("mlsum", "de", "test", "train")
    if lang == "el":
        return Source("greeksum", "el", "test", "train")
    return Source("xlsum", xlsum_subset(lang), "test", "train")


@cache
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def sum_doc(line: dict, task_name: str, lang: str, tokenizer_dir: str | None = None):
    """One sum item: the paper's one-line prompt on the (truncated) article; the summary is the reference."""
    from lighteval.tasks.requests import Doc

    from workflow_scripts import prompts

    tokenizer = _tokenizer(tokenizer_dir) if tokenizer_dir is not None else None
    return Doc(
        query=prompts.sum_prompt(line["text"], lang, tokenizer),
        choices=[line["summary"]],
        gold_index=0,
        task_name=task_name,
        specific=item_id(line),
    )


def lighteval(kit, lang: str, folder, generation_size: int = 128, tokenizer_dir: str | None = None):
    """``sum_<lang>``: zero-shot, the article cut so that the prompt fits 4,096 tokens of the evaluated tokenizer;
    ROUGE-L F1 (as evaluation.sum.rouge_tokenizer segments)."""
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    data = source(lang)
    return LightevalTaskConfig(
        name=f"sum_{lang}",
        hf_repo=str(folder),
        hf_avail_splits=["train", "dev", "test"],
        prompt_function=partial(sum_doc, lang=lang, tokenizer_dir=tokenizer_dir),
        hf_subset=data.subset,
        evaluation_splits=[data.split],
        few_shots_split=data.fewshot_split or data.split,
        metrics=kit.lighteval_metrics.rouge_metrics(),
        generation_size=generation_size,
        stop_sequence=["\n"],
    )


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
        doc="Summarization with the paper's prompt (XL-Sum / MLSUM / GreekSUM) through LightEval; ROUGE-L F1 on mT5 "
        "pieces (rougeL_mt5) or script-aware (rougeL_script), as evaluation.sum.rouge_tokenizer says.",
        predictions=True,
        step=step,
        lighteval=lighteval,
        source=source,
        prompt=True,
    )
)
