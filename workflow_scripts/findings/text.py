"""The words of the findings page, generated from the numbers (numbers.py): the per-language tables, the captions and
the one sentence saying what the run can and cannot say about the paper's models and data."""

from __future__ import annotations

from workflow_scripts.findings.numbers import Panel, relative
from workflow_scripts.languages import PAPER_LANGUAGES
from workflow_scripts.paper.names import PAPER_MODELS, model_name
from workflow_scripts.serve.fidelity import gguf_name

MISSING = "–"
FIT_WORDS = "a power law, bits per character = a + b · tokens^(−c), fitted by least squares to the curve after step 0"


def tokens_text(value: float) -> str:
    """A token count in words: 950, 16K, 2.3M, 1.2B."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= size:
            number = value / size
            return f"{number:.0f}{unit}" if number >= 100 or number == round(number) else f"{number:.1f}{unit}"
    return f"{value:.0f}"


def _num(value: float | None, fmt: str) -> str:
    return MISSING if value is None else fmt.format(value)


def _percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:+.1f}%"


def _paired(row: dict) -> str:
    value, low, high = row["paired"]
    if value is None:
        return MISSING
    return f"{value:.2f}x" + (f" [{low:.2f}–{high:.2f}]" if low is not None and high is not None else "")


def _ratio(value: float | None, bound: float | None) -> str:
    return f"{value / bound:.2f}" if value is not None and bound else MISSING


def _reach(row: dict) -> str:
    if row["curve"] is None:
        return MISSING
    return tokens_text(row["reach"]) if row["reach"] is not None else "not reached"


def ordered(panel: Panel) -> list[dict]:
    """The panel's rows in the page's order: CPT-only, the expanded cells at the main number of new tokens (in the
    run's order), those at other numbers (by number), the others."""
    rank, main = {"cpt": 0, "expanded": 1, "other": 3}, panel.main_k()
    return sorted(
        panel.rows,
        key=lambda r: (rank[r["kind"]] + (r["k"] != main and r["kind"] == "expanded"), r["k"] if r["k"] != main else 0),
    )


def table(panel: Panel) -> list[str]:
    """The panel's Markdown table: Source, then each adapted cell; the curve columns only where a cell has a curve."""
    curves = bool(panel.curves())
    served = any(r.get("served", (None,))[0] is not None for r in panel.rows)
    cpt = panel.cpt()
    base = cpt["bpc"][1] if cpt else None
    head = [
        "Method",
        "final bits per character",
        "vs CPT-only",
        "paired speed-up [worst–best]",
        "bound",
        "speed-up ÷ bound",
        "translation chrF",
    ]
    if served:
        head[-1:-1] = ["llama.cpp speed-up ÷ its bound"]
    if curves:
        head[1:1] = ["bits per character at step 0"]
        head[-1:-1] = ["training tokens to reach Source's bits per character"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    src = panel.source
    rows = [
        [
            "Source",
            _num(src["bpc"], "{:.3f}"),
            _percent(relative(src["bpc"], base)),
            MISSING,
            MISSING,
            MISSING,
            _num(src["chrf"], "{:.1f}"),
        ]
    ]
    if served:
        rows[0][-1:-1] = [MISSING]
    if curves:
        rows[0][1:1], rows[0][-1:-1] = [MISSING], [MISSING]
    for r in ordered(panel):
        value, bound = r["paired"][0], r["bound"]
        cells = [
            r["name"],
            _num(r["bpc"][1], "{:.3f}"),
            _percent(relative(r["bpc"][1], base)) if r is not cpt else MISSING,
            _paired(r),
            _num(bound, "{:.2f}x"),
            _ratio(value, bound),
            _num(r["chrf"], "{:.1f}"),
        ]
        if served:
            cells[-1:-1] = [_ratio(r.get("served", (None,))[0], r.get("served_bound"))]
        if curves:
            cells[1:1], cells[-1:-1] = [_num(r["bpc0"], "{:.3f}")], [_reach(r)]
        rows.append(cells)
    return [*lines, *("| " + " | ".join(c) + " |" for c in rows), ""]


def _agreement(result: dict) -> str:
    text = f"{result['greedy_token_agreement']:.2f} ({result['greedy_equal_prompts']}/{result['greedy_prompts']})"
    return text + (f", {result['token_mismatches']} token-id mismatches" if result["token_mismatches"] else "")


def _tensor_types(name: str, types: dict | None) -> str:
    if not types:
        return f"{name}: tensor types not recorded"
    output = "tied to the embeddings" if types["output"] is None else types["output"]
    blocks = ", ".join(f"{t} ×{n}" for t, n in types["blocks"].items())
    return f"{name}: token embeddings {types['token_embd']}, output {output}, block matrices {blocks}"


def fidelity_table(panel: Panel) -> list[str]:
    """The panel's GGUF checks (rule check_gguf), one row per cell and one column per GGUF type: the share of greedy
    positions where llama.cpp continues as transformers does (equal prompts in brackets); then each type's tensor
    types. Empty where the run exported nothing."""
    if not panel.fidelity:
        return []
    names = {r["method"]: r["name"] for r in panel.rows}
    methods = [m for m in panel.fidelity if m not in names]  # Source
    methods += [r["method"] for r in ordered(panel) if r["method"] in panel.fidelity]
    files = {m: {gguf_name(f): result for f, result in panel.fidelity[m].items()} for m in methods}
    gtypes = list(dict.fromkeys(t for m in methods for t in files[m]))
    lines = ["| Method | " + " | ".join(gtypes) + " |", "|---|" + "---:|" * len(gtypes)]
    for m in methods:
        cells = [_agreement(files[m][t]) if t in files[m] else MISSING for t in gtypes]
        lines.append(f"| {names.get(m, m)} | " + " | ".join(cells) + " |")
    first = {t: next(files[m][t] for m in methods if t in files[m]) for t in gtypes}
    kinds = "; ".join(_tensor_types(t, first[t].get("tensor_types")) for t in gtypes)
    return [*lines, "", f"Tensor types (the first cell's files): {kinds}.", ""]


def stand_in_models(models: list[str], langs: list[str]) -> list[str]:
    """The run's models that stand in for the paper's: those not the paper's, in a run on the paper's languages (a
    grid of other languages is a study of its own, compared with nothing of the paper's)."""
    if not set(langs) & set(PAPER_LANGUAGES):
        return []
    return [model_name(m) for m in models if m not in PAPER_MODELS]


def scope(models: list[str], labels: list[str], n_seeds: int, langs: list[str]) -> str:
    """The one sentence saying what the run can and cannot say about the paper's models and data, from the models,
    data labels, seeds and languages it has."""
    small = stand_in_models(models, langs)
    paper = ", ".join(model_name(m) for m in PAPER_MODELS)
    parts = []
    if small:
        parts.append(
            f"{' and '.join(small)} standing in for the paper's 7–9B models ({paper}), whose numbers may "
            "differ in size and even in direction"
        )
    parts.append(f"data: {'; '.join(labels)}" if labels else "data: not recorded in the results")
    parts.append(
        "one training run (one seed) a cell, so the intervals are over the held-out sentences, not over training seeds"
        if n_seeds < 2
        else f"up to {n_seeds} training seeds a method, the intervals over seeds and held-out sentences"
    )
    return "These numbers hold for this run and its training length: " + "; ".join(parts) + "."


CAPTIONS = {
    "quality_speed": "Each point is one cell: its paired teacher-forced speed-up over Source (the same reference "
    "translations decoded by both models, Source timed in the same job; the bar spans the worst and best repeat) "
    "against its final held-out bits per character relative to Source's (lower is better). The black tick at the "
    "same height is the cell's bound: Source tokens ÷ the cell's tokens of that text, the speed-up of a model whose "
    "every step costs what Source's does. Dotted: Source; dashed: CPT-only (training without new tokens).",
    "learning_curves": "Held-out bits per character measured during training (step 0: the initialized model, before "
    "any training) against the training tokens each model read, counted in its own tokens (an expanded model reads "
    "more text per token). Dotted: Source's final bits per character; the tables give the interpolated tokens at "
    "which each curve reaches it.",
    "k_tradeoff": "For each initialization run with several numbers of new tokens: tokens per held-out sentence, the "
    "paired speed-up over Source with its bound (black), and the final bits per character, at the numbers of new "
    "tokens run (evenly spaced categories, not to scale). Dotted: Source; dashed: CPT-only.",
    "table_k": "Methods at {k} new tokens unless their name gives another number. ",
    "table": "Final bits per character and translation chrF: the evaluation of the finished model. vs CPT-only: "
    "relative to CPT-only's final bits per character (lower is better). Paired speed-up, bound and their ratio as in "
    "the first figure.",
    "table_served": " llama.cpp speed-up ÷ its bound: the same paired teacher-forced speed-up measured in llama.cpp "
    "(the cell's and Source's GGUF of the first export.gguf type, docs/serving.md) over the bound of the text it "
    "timed.",
    "fidelity": "Greedy continuations of held-out sentences in llama.cpp against transformers (fp32) from the same "
    "input ids: the share of equal positions, and in brackets the prompts equal over all their tokens (f16 is "
    "expected to agree in full). A type named +emb_<type> keeps the token embeddings and the output layer (where the "
    "new tokens' rows are) at that type; the plain type leaves them to llama.cpp's own choice, listed below the "
    "table.",
    "ranking": "The expanded cells at the main number of new tokens, best first by final bits per character (the "
    "mean over seeds ± their standard deviation). vs the method above: the difference in bits per character to the "
    "method one place up (positive: worse), with its 95% paired bootstrap interval over the seeds and the held-out "
    'sentences (docs/findings.md, "Seeds, intervals and noise"); a place is marked better only where the interval '
    'excludes zero, "within noise" otherwise.',
    "extrapolation": f"Extrapolation, not a measurement ({FIT_WORDS}), for each expanded cell with a learning curve "
    "where none ends within 5% of CPT-only: the training tokens at which its fitted curve comes down to CPT-only's "
    'final bits per character plus 5%, and that as a multiple of the tokens it trained; "levels off" where the fit '
    "flattens above the target.",
    "table_curves": " Step 0 and the tokens to reach Source's bits per character come from the learning curve, "
    "linearly interpolated between the measured points around the crossing.",
}
