"""Speed (workflow_scripts/speed): the cell's decoding timed against Source's in the same job, with its token bound."""

from workflow_scripts.labels import data_label
from workflow_scripts.tasks import TASKS, TaskSpec, register
from workflow_scripts.tasks.base import Step, cli


def choice_data(steps, wc) -> dict[str, str]:
    """The log-likelihood tasks the speed step times (``timed``) and their datasets, where the cell is evaluated on
    them and the language has data; never for MuMo cells, which are not."""
    if steps.methods[wc.method].is_mumo:
        return {}
    tasks = [name for name, spec in TASKS.items() if spec.timed and name in steps.evaluation["tasks"]]
    out = {t: steps.layout.harness_data(t, wc.lang) for t in tasks}
    return {t: folder for t, folder in out.items() if folder}


def sum_data(steps, wc) -> str | list:
    """The sum dataset the speed step times next to mt (when sum is evaluated and the language has data)."""
    return steps.layout.harness_data("sum", wc.lang) if "sum" in steps.evaluation["tasks"] else []


def step(steps, wc):
    """The cell's model and Source's tokenizer, the MT pairs (and the sum and log-likelihood data it times), the
    workload and decodings; speed.json."""
    s, pairs = steps.evaluation["speed"], steps.layout.data_file(wc.lang, "mt.tsv")
    source, model = steps.layout.source_model(wc.model), steps.model(wc)
    choices, sums = choice_data(steps, wc), sum_data(steps, wc)
    options = (
        cli(
            model=model,
            cell=steps.cell(wc),
            source_tokenizer=source,
            pairs=pairs,
            lang=wc.lang,
            n=s["n"],
            max_new_tokens=s["max_new_tokens"],
            repeats=s["repeats"],
            warmup=s["warmup"],
            batch_size=s["batch_size"],
            reference_chars=s["reference_chars"] or 0,
            seed=steps.config["seed"],
            data_label=data_label(steps.layout, wc.lang),
            out=steps.out(wc, "speed.json"),
        )
        + [["--decodings", *s["decodings"]]]
        + ([] if s["teacher_forced"] else [["--no-teacher-forced"]])
        + ([["--paired"]] if s["paired"] else [])
        + steps.mumo(wc)
        + (cli(sum_data=sums) if sums else [])
        + [
            x
            for t, folder in choices.items()
            for x in cli(choice_data=f"{t}={folder}", choice_fewshot=f"{t}={steps.evaluation[t]['fewshot']}")
        ]
        + ([["--large-batch-decodings", *s["large_batch_decodings"]]] if s["large_batch_decodings"] else [])
    )
    inputs = {"model": model, "source": source, "pairs": pairs, "sum_data": sums, "choice_data": list(choices.values())}
    return Step(inputs, options)


SPEC = register(
    TaskSpec(
        name="speed",
        order=30,
        rule="measure_speed",
        # the time limit of a model that needs a GPU follows its planned workload (workflow_scripts/plan/speed.py,
        # rule measure_speed's speed_runtime: 144-189 min for configs/paper.yaml); this one serves the smaller models
        cost=((7000, 28), (6000, 13), (2000, 15)),
        rule_words="speed",
        words=None,
        card_type="text-generation",
        mumo=True,
        cell_job=True,
        cell_order=4,
        doc="Speed on the mt prompts, and sum's where sum is evaluated (the harness's prompts): generation (greedy / "
        "paper decoding, batch 1 and larger) and teacher forcing of the references, repeated, in characters, "
        "source-tokenizer tokens and own tokens per second; and the forward passes of the log-likelihood tasks over "
        "prompt and choices. Each task's records are saved as it finishes (speed.partial.json): a rerun skips them.",
        program="workflow_scripts.speed",
        planned_runtime=True,
        step=step,
    )
)
