# Input functions and parameters of the tables, analysis and export rules (rules/tables.smk, rules/analysis.smk,
# rules/export.smk): which files each whole-run step collects.
from workflow_scripts.plan.steps import data_label


def eval_files():
    """Every evaluation record of the grid (BLEURT's where sum is scored by it), read by rule tables."""
    bleurt = config["evaluation"]["sum"]["bleurt"]
    return [
        paths.eval_file(model, lang, m.slug, f"{task}.json", RESULTS)
        for model, lang, m in CELLS
        for task in tasks_of(m, TASKS, config)
    ] + [
        paths.eval_file(model, lang, m.slug, "sum_bleurt.json", RESULTS)
        for model, lang, m in CELLS
        if bleurt and "sum" in tasks_of(m, TASKS, config)
    ]


def lapt_cells():
    """(model, language, slug) of every LAPT run of the grid (an ElChat cell's is its adapted cell's)."""
    return sorted(
        {
            (model, lang, m.adapted.slug)
            for model, lang, m in CELLS
            if m.adapted.trains and not m.is_mumo
        }
    )


def lead_loss_files():
    """The loss curves of every trained cell, for the results page's lead."""
    return [
        paths.loss_curve(model, lang, slug, RESULTS)
        for model, lang, slug in lapt_cells()
    ]


def curve_files():
    """The held-out curves of every LAPT run when training.curve_points > 0 (rule findings)."""
    return [
        paths.curve(model, lang, slug, RESULTS)
        for model, lang, slug in lapt_cells()
        if CURVE_POINTS
    ]


def fragmentation_tokenizers(wc):
    return " ".join(shlex.quote(f"{m}={LAYOUT.source_model(m)}") for m in MODELS)


def fragmentation_pairs(wc):
    return " ".join(
        shlex.quote(f"{lang}={LAYOUT.data_file(lang, 'mt.tsv')}") for lang in LANGUAGES
    )


def fragmentation_label(wc):
    return "; ".join(sorted({data_label(LAYOUT, lang) for lang in LANGUAGES}))


def analysis_k():
    """|V_new| of the init analysis: the first expanding method's k (paper default 100 when none expands)."""
    ks = [m.k for m in METHODS if m.expands and m.k is not None]
    return ks[0] if ks else 100


def init_analysis_cells():
    """One init-analysis JSON per configured model x language (rules/analysis.smk)."""
    return [
        paths.analysis_file(
            f"init_analysis/{model}.{lang}.aux{LAYOUT.vocab(lang)}.k{analysis_k()}.json",
            RESULTS,
        )
        for model in MODELS
        for lang in LANGUAGES
    ]


def paper_sizes(wc):
    """--size arguments: each model's parameter count, for the requested hours of the cost table."""
    sizes = {m: PLAN.models[m].parameters for m in MODELS}
    return " ".join(f"--size {shlex.quote(f'{m}={size}')}" for m, size in sizes.items())


# rules/export.smk (docs/serving.md): the GGUF export of each non-MuMo cell, its check and serving speed in llama.cpp.
from workflow_scripts.plan.grid import Method
from workflow_scripts.serve.export import GgufType

# each export.gguf entry by its name (f16, q4_0+emb_q8_0), the name of its file
GGUF_TYPES = [GgufType.of(entry).name for entry in config["export"]["gguf"]]
# Source: exported as a cell of its own, also where the grid does not list it (serve_speed times it next to each cell)
SOURCE_METHOD = Method(
    init="none",
    vocab="expand",
    k=None,
    procedure="none",
    objective=None,
    seq_len=None,
    posthoc="none",
)


def gguf_files(wc):
    return [
        paths.gguf_file(wc.model, wc.lang, wc.method, t, RESULTS) for t in GGUF_TYPES
    ]


def gguf_dir(wc):
    return paths.gguf_dir(wc.model, wc.lang, wc.method, RESULTS)


def non_mumo_slugs():
    """A wildcard constraint: the slugs of the methods with a single-model GGUF (all but MuMo's), and Source."""
    return slug_regex([m for m in METHODS if not m.is_mumo] + [SOURCE_METHOD])


def adapted_slugs():
    """A wildcard constraint: the non-MuMo methods other than Source (whose speed is timed next to theirs)."""
    return (
        slug_regex([m for m in METHODS if not m.is_mumo and m.slug != "Source"]) or "^$"
    )


def gguf_model(wc):
    """The folder a cell's GGUF is converted from: the evaluated model (the source model for Source)."""
    if wc.method == SOURCE_METHOD.slug:
        return LAYOUT.source_model(wc.model)
    return LAYOUT.model_folder(wc.model, wc.lang, METHOD_BY_SLUG[wc.method])


def source_gguf(wc):
    """Source's GGUF of the type whose serving speed is measured (the first of export.gguf)."""
    return paths.gguf_file(
        wc.model, wc.lang, SOURCE_METHOD.slug, GGUF_TYPES[0], RESULTS
    )


def cell_gguf(wc):
    return paths.gguf_file(wc.model, wc.lang, wc.method, GGUF_TYPES[0], RESULTS)


SERVE_ENGINE = config["export"]["speed"]["engine"]


def serve_ggufs(wc):
    """The cell's and Source's GGUF of the first export.gguf type, which llama.cpp times (none: vLLM serves the
    transformers folders)."""
    return [cell_gguf(wc), source_gguf(wc)] if SERVE_ENGINE == "llama.cpp" else []


def serve_engine_args(wc):
    """The engine's own arguments of workflow_scripts.serve.speed (its files: serve_ggufs)."""
    if SERVE_ENGINE == "vllm":
        return f"--engine vllm --max-new-tokens {config['export']['speed']['max_new_tokens']}"
    gguf, source = serve_ggufs(wc)
    return f"--engine llama.cpp --gguf {shlex.quote(gguf)} --source-gguf {shlex.quote(source)}"


def serve_speed_files():
    """The serving speed of every non-MuMo cell but Source (export.gguf set, or export.speed.engine vllm, which
    serves the transformers folders), read by rule tables."""
    if not GGUF_TYPES and SERVE_ENGINE != "vllm":
        return []
    return [
        paths.eval_file(model, lang, m.slug, "serve_speed.json", RESULTS)
        for model, lang, m in CELLS
        if not m.is_mumo and m.slug != SOURCE_METHOD.slug
    ]


def gguf_fidelity_files():
    """The GGUF checks of every non-MuMo cell (MuMo's head beside the source model has no single-model GGUF), read by
    rule findings."""
    if not GGUF_TYPES:
        return []
    return [
        paths.gguf_fidelity(model, lang, m.slug, RESULTS)
        for model, lang, m in CELLS
        if not m.is_mumo
    ]


def export_targets():
    """The GGUF checks and the serving speed of every non-MuMo cell."""
    return gguf_fidelity_files() + serve_speed_files()
