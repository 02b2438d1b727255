"""The evaluation steps of a cell, written once: for each task the files it reads and its command-line arguments.

Both the per-task rules (rules/evaluate.smk: evaluate_ppl, evaluate_mt, evaluate_sum, evaluate_mc and its siblings,
measure_speed) and the per-cell job (evaluate_cell, evaluation.one_job_per_cell) render their commands from
``Steps.step``: a task rule runs ``python -m <module> <args> --threads N``; evaluate_cell passes each step's arguments
less ``--task``, ``--model`` and ``--cell`` (workflow_scripts/evaluate_cell.py gives those to every step).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

from workflow_scripts.orchid import LABEL as ORCHID_LABEL
from workflow_scripts.paths import Layout
from workflow_scripts.tasks import TASKS as TASK_SPECS
from workflow_scripts.tasks import cell_tasks

# The evaluation tasks (workflow_scripts/tasks/: one module each), in their order: one rule each in
# rules/evaluate.smk, writing results/<run>/{model}/{lang}/{method}/eval/{task}.json (paths.eval_file).
# mt, sum, mc, gmmlu run through LightEval (workflow_scripts/harness); mc_en, gmmlu_en are the English retention checks
# (Table 9): English Belebele, and the original English MMLU (lighteval/mmlu, LightEval's MMLU prompt).
TASKS = tuple(TASK_SPECS)
# evaluation.one_job_per_cell: the steps one evaluate_cell job runs (cheapest first: a bad input file stops the job
# before the long steps), and the files each writes (those of evaluate_ppl, evaluate_mt, evaluate_mc, measure_speed)
CELL_STEP_FILES = {task: list(files) for task, files in cell_tasks().items()}
CELL_STEPS = tuple(CELL_STEP_FILES)
L10N_LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"
# the log-likelihood tasks, and the label each one's records carry where it is fixed (mc's depends on its source: see
# Steps.mc_label)
CHOICE_TASKS = tuple(name for name, spec in TASK_SPECS.items() if spec.choice)
CHOICE_LABELS = {name: spec.label for name, spec in TASK_SPECS.items() if spec.choice and spec.label}
# the options evaluate_cell passes to every step itself
CELL_SHARED = ("--task", "--model", "--cell")


@dataclass
class Step:
    """One task of one cell: its input files by name, and its options in the command's order (each a list: the flag
    and its values, or a lone flag)."""

    inputs: dict[str, str | list[str]]
    options: list[list[str]] = field(default_factory=list)

    def command(self) -> str:
        """The arguments of the task's own command line, shell-quoted."""
        return shlex.join(x for option in self.options for x in option)

    def cell_command(self) -> str:
        """The arguments evaluate_cell gives the step: those of its own command line but the shared ones."""
        return shlex.join(x for option in self.options if option[0] not in CELL_SHARED for x in option)


def cli(**options) -> list[list[str]]:
    """Options in the given order: max_new_tokens=40 -> ["--max-new-tokens", "40"]."""
    return [[f"--{k.replace('_', '-')}", str(v)] for k, v in options.items()]


# what each corpus kind's text is (the adaptation corpus D and the held-out set), and each MT kind's pairs, where the
# config gives no `label`; your own files (corpus kind text, mt kinds tsv and jsonl) are named by their file
CORPUS_LABELS = {"cc100": "CC-100", "orchid": ORCHID_LABEL, "text": "your text ({file})"}
MT_LABELS = {
    "flores": "FLORES-200",
    "l10n": "stand-in for FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)",
    "tsv": "your pairs ({file})",
    "jsonl": "your pairs ({file})",
}


def _label(spec: dict, labels: dict[str, str]) -> str:
    if spec.get("label"):
        return spec["label"]
    file = str(spec.get("path") or spec.get("url") or "").rstrip("/").rsplit("/", 1)[-1]
    return labels[spec["kind"]].format(file=file)


def corpus_label(config: dict, lang: str) -> str:
    """What a language's corpus D and held-out text are: the config's `label`, else its kind's."""
    return _label(config["languages"][lang]["corpus"], CORPUS_LABELS | {"l10n": L10N_LABEL})


def mt_label(config: dict, lang: str) -> str:
    """What a language's MT test pairs are: the config's `label`, else its kind's."""
    return _label(config["languages"][lang].get("mt", {"kind": "l10n"}), MT_LABELS)


def data_label(layout: Layout, lang: str) -> str:
    """What a language's corpus and MT pairs are, copied into each record's details (the "Data:" line of every
    table and figure)."""
    spec = layout.config["languages"][lang]
    corpus, mt = spec["corpus"], spec.get("mt", {"kind": "l10n"})
    if corpus["kind"] == "l10n" and mt["kind"] == "l10n" and not corpus.get("label") and not mt.get("label"):
        return L10N_LABEL
    if (corpus["kind"], mt["kind"]) == ("cc100", "flores") and not corpus.get("label") and not mt.get("label"):
        return "CC-100 / FLORES-200"
    return f"{corpus_label(layout.config, lang)} for adaptation and held-out text; MT: {mt_label(layout.config, lang)}"


def mt_data_label(layout: Layout, lang: str) -> str:
    """``data_label`` of the mt records, which also say where a prompt that is not the paper's comes from (the
    config's, or the English-instruction template: workflow_scripts.prompts)."""
    from workflow_scripts import prompts

    source = prompts.prompt_source("mt", lang)
    label = data_label(layout, lang)
    return label if source == "paper" else f"{label}; mt prompt: {prompts.PROMPT_SOURCES[source]}"


class Steps:
    """The evaluation steps of the configured grid: ``methods`` maps a slug to its Method."""

    def __init__(self, config: dict, layout: Layout, methods: dict) -> None:
        self.config, self.layout, self.methods = config, layout, methods
        self.evaluation = config["evaluation"]

    def step(self, task: str, wc) -> Step:
        """The step of ``task`` (an evaluation task, or ``speed``) for the cell of wildcards ``wc``."""
        if task in CHOICE_TASKS:
            return self.choice(task, wc)
        return {"ppl": self.ppl, "mt": self.mt, "sum": self.sum, "speed": self.speed}[task](wc)

    def model(self, wc) -> str:
        """The model folder a method's evaluation reads."""
        return self.layout.model_folder(wc.model, wc.lang, self.methods[wc.method])

    def cell(self, wc) -> str:
        """The grid cell as JSON, copied into each record."""
        m = self.methods[wc.method]
        size = self.layout.vocab(wc.lang, "replace" if m.vocab == "replace" else "aux")
        return json.dumps(m.cell(wc.model, wc.lang, size), sort_keys=True)

    def chat(self, wc) -> list[list[str]]:
        """--chat-template for an ElChat cell: evaluated as the chat model it is (Table 10); plain text elsewhere."""
        return [["--chat-template"]] if self.methods[wc.method].posthoc == "elchat" else []

    def mumo(self, wc) -> list[list[str]]:
        """A MuMo cell's decoding options for its mt, sum and speed jobs: k, and the verification ablation."""
        m = self.methods[wc.method]
        if not m.is_mumo:
            return []
        return [["--mumo-k", str(self.config["mumo"]["k"])]] + (
            [["--mumo-no-verify"]] if m.posthoc == "noverify" else []
        )

    def out(self, wc, name: str) -> str:
        return self.layout.eval_file(wc.model, wc.lang, wc.method, name)

    def heldout(self, wc) -> str:
        """The held-out text of a cell's ppl step and of its LAPT job's curve."""
        return self.layout.data_file(wc.lang, "heldout.txt")

    def ppl(self, wc) -> Step:
        settings, text = self.evaluation["ppl"], self.heldout(wc)
        return Step(
            {"model": self.model(wc), "text": text},
            cli(model=self.model(wc), text=text, n=settings["n"], batch_size=settings["batch_size"], cell=self.cell(wc),
                data_label=data_label(self.layout, wc.lang), out=self.out(wc, "ppl.json")),
        )  # fmt: skip

    def curve(self, wc, points: int, out: str) -> Step:
        """The held-out curve options of a cell's LAPT job (training.curve_points; workflow_scripts/lapt/curve.py):
        the ppl step's text, n and batch size, so that its last point is the ppl step's bits per character."""
        settings, text = self.evaluation["ppl"], self.heldout(wc)
        return Step(
            {"text": text},
            cli(curve_points=points, curve_text=text, curve_n=settings["n"], curve_batch_size=settings["batch_size"],
                curve=out),
        )  # fmt: skip

    def generation(self, task: str, wc) -> list[list[str]]:
        """The decoding options mt and sum share."""
        s = self.evaluation[task]
        return cli(n=s["n"], max_new_tokens=s["max_new_tokens"], batch_size=s["batch_size"], decoding=s["decoding"],
                   runs=s["runs"], seed=self.config["seed"])  # fmt: skip

    def mt(self, wc) -> Step:
        pairs = self.layout.data_file(wc.lang, "mt.tsv")
        return Step(
            {"model": self.model(wc), "pairs": pairs},
            cli(task="mt", lang=wc.lang, model=self.model(wc), pairs=pairs)
            + self.generation("mt", wc)
            + cli(cell=self.cell(wc), data_label=mt_data_label(self.layout, wc.lang), out=self.out(wc, "mt.json"),
                  predictions=self.out(wc, "mt_predictions.tsv"))
            + self.chat(wc)
            + self.mumo(wc),
        )  # fmt: skip

    def rouge(self) -> list[list[str]]:
        """ROUGE-L's segmentation: mT5 pieces (the spiece.model file) or script-aware."""
        spiece = self.layout.mt5_spiece()
        if spiece:
            return cli(rouge_tokenizer=self.evaluation["sum"]["rouge_tokenizer"], mt5_spiece=spiece)
        return cli(rouge_tokenizer="script")

    def sum(self, wc) -> Step:
        data = self.layout.harness_data("sum", wc.lang)
        return Step(
            {"model": self.model(wc), "data": data, "spiece": self.layout.mt5_spiece()},
            cli(task="sum", lang=wc.lang, model=self.model(wc))
            + (cli(data=data) if data else [])
            + self.generation("sum", wc)
            + self.rouge()
            + cli(cell=self.cell(wc), out=self.out(wc, "sum.json"), predictions=self.out(wc, "sum_predictions.tsv"))
            + self.chat(wc)
            + self.mumo(wc),
        )

    def mc_label(self) -> str:
        if self.evaluation["mc"]["source"] == "l10n_proxy":
            return "mc proxy: 4-way choice of the translation of a held-out l10n sentence (not Belebele)"
        return "Belebele"

    def choice(self, task: str, wc) -> Step:
        """A log-likelihood task: mc, gmmlu, and their English retention checks mc_en, gmmlu_en (Table 9)."""
        base = task.removesuffix("_en")
        settings, data = self.evaluation[base], self.layout.harness_data(task, wc.lang)
        label = self.mc_label() if task == "mc" else CHOICE_LABELS[task]
        return Step(
            {"model": self.model(wc), "data": data},
            cli(task=base, lang=wc.lang, model=self.model(wc))
            + (cli(lang="en") if task.endswith("_en") else [])
            + (cli(data=data) if data else [])
            + cli(fewshot=settings["fewshot"], batch_size=settings["batch_size"])
            + (cli(n=settings["n"]) if settings.get("n") else [])
            + cli(cell=self.cell(wc), data_label=label, out=self.out(wc, f"{task}.json"))
            + self.chat(wc),
        )

    def choice_data(self, wc) -> dict[str, str]:
        """The log-likelihood tasks the speed step times and their datasets (mc, gmmlu where the cell is evaluated on
        them and the language has data; never for MuMo cells, which are not)."""
        if self.methods[wc.method].is_mumo:
            return {}
        out = {t: self.layout.harness_data(t, wc.lang) for t in ("mc", "gmmlu") if t in self.evaluation["tasks"]}
        return {t: folder for t, folder in out.items() if folder}

    def sum_data(self, wc) -> str | list:
        """The sum dataset the speed step times next to mt (when sum is evaluated and the language has data)."""
        return self.layout.harness_data("sum", wc.lang) if "sum" in self.evaluation["tasks"] else []

    def speed(self, wc) -> Step:
        s, pairs = self.evaluation["speed"], self.layout.data_file(wc.lang, "mt.tsv")
        source = self.layout.source_model(wc.model)
        choices, sum_data = self.choice_data(wc), self.sum_data(wc)
        options = (
            cli(model=self.model(wc), cell=self.cell(wc), source_tokenizer=source, pairs=pairs, lang=wc.lang,
                n=s["n"], max_new_tokens=s["max_new_tokens"], repeats=s["repeats"], warmup=s["warmup"],
                batch_size=s["batch_size"], reference_chars=s["reference_chars"] or 0, seed=self.config["seed"],
                data_label=data_label(self.layout, wc.lang), out=self.out(wc, "speed.json"))
            + [["--decodings", *s["decodings"]]]
            + ([] if s["teacher_forced"] else [["--no-teacher-forced"]])
            + ([["--paired"]] if s["paired"] else [])
            + self.mumo(wc)
            + (cli(sum_data=sum_data) if sum_data else [])
            + [x for t, folder in choices.items()
               for x in cli(choice_data=f"{t}={folder}", choice_fewshot=f"{t}={self.evaluation[t]['fewshot']}")]
            + ([["--large-batch-decodings", *s["large_batch_decodings"]]] if s["large_batch_decodings"] else [])
        )  # fmt: skip
        inputs = {"model": self.model(wc), "source": source, "pairs": pairs, "sum_data": sum_data,
                  "choice_data": list(choices.values())}  # fmt: skip
        return Step(inputs, options)
