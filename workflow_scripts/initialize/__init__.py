"""Initialize the target model's new embedding and LM-head rows (paper 002 §4; docs/initialization.md,
"Initialization").

Input: a source model folder (HF, safetensors, its tokenizer inside) and an expanded target tokenizer folder: a real BPE
over V_s ∪ V_new whose new ids follow the source ids contiguously. Output: the target model folder, with embeddings and
LM head resized to the target vocabulary, the source rows copied bit for bit, every other row set explicitly (never by
``resize_token_embeddings``'s own initialization), config.vocab_size updated and the target tokenizer saved alongside.

Untied input embeddings and LM head are initialized separately by the same rule; a tied model has one matrix and stays
tied. Methods live in a registry (``INIT_METHODS``): a method maps (source matrix, context, role) to the new rows and
one record per new token. Random draws; every other method is a weighted sum of source rows (a "plan": source id ->
weight), computed once per run and applied to each matrix:

- Mean: equal weights over the source BPE model's spelling of the new token's own piece (see ``source_subwords``).
- Merge: hierarchical mean down T_t's merge tree (BPE replayed on the piece) until every part is in V_s; no rule: Mean.
- Align: over the corpus D (``--corpus``), the source tokens inside each occurrence's span (byte spans, special tokens
  excluded, every occurrence counted), weighted by tuple frequency; a token unseen in D: Merge. See ``align_counts``.
- FOCUS: fastText CBOW on D tokenized with T_t (PyPI fasttext-wheel), sparsemax over cosine similarities to the
  overlapping tokens' vectors; a token without a fastText vector: Random, as deepfocus does.
- EEVE: input rows as Mean, output rows the first subword's LM-head row; a tied model gets the input rule only.
- OMP (tokensurgeon's): the Mean row's k-atom Orthogonal Matching Pursuit over the source input rows; the same atoms
  and weights give an untied head's row.
- TokenDistillation: input rows trained (from Mean) so that the model's last hidden states on snippets of D with the
  new token match those on its old split (``needs_model``: the source model is handed over); output rows as Mean.

Vocabulary padding (``pad_to_multiple_of``, 1 = none; 8 is the reference practice on GPU): the matrices get extra rows
after the last target id so that their size is a multiple of N. No tokenizer id maps to them, so they must never be
produced: their rows are the mean of the source rows, and their ids go into the saved generation_config's
``suppress_tokens`` so that ``generate()`` masks them. config.vocab_size is the padded size; len(tokenizer) is not.

Layout: ``tokens`` (V_new and its mapping onto the source BPE, with the two wrong mappings kept to measure them),
``registry`` (InitContext, InitResult, register_method, MethodSpec, INIT_METHODS, METHOD_SPECS, CORPUS_METHODS and the
row arithmetic),
``methods/`` (one module per method), ``apply`` (resize, padding, tied/untied, diagnostics, initialize_model),
``replace`` (vocabulary replacement, Table 11: every row new, ``--vocab replace``) and ``__main__`` (the command
line). Importing the package loads neither torch nor fasttext.

To add a method, add one module to ``methods/`` with a function ``(source, ctx, role) -> InitResult`` decorated with
``@register_method("Name", ...)``, declaring there what the package needs to know about it (``MethodSpec``: reads D,
compared with Mean, report entries, vocab: replace, place in reports); ``methods/`` imports every module it holds, and
the command line's --method choices, the config check and ``init: Name`` in a config follow. Import torch and other
heavy packages inside the function.
"""

from workflow_scripts.initialize import methods
from workflow_scripts.initialize.apply import (
    initialize,
    initialize_model,
    is_tied,
    mapping_diagnostics,
    method_stats,
    padded_size,
)
from workflow_scripts.initialize.methods.align import align_counts, align_plans
from workflow_scripts.initialize.methods.eeve import init_eeve
from workflow_scripts.initialize.methods.focus import (
    FASTTEXT_DEFAULTS,
    fasttext_word,
    focus_plans,
    init_focus,
    sparsemax,
    train_fasttext,
)
from workflow_scripts.initialize.methods.merge import bpe_merge_ranks, init_merge, merge_plans, merge_tree
from workflow_scripts.initialize.methods.random_mean import init_mean, init_random
from workflow_scripts.initialize.registry import (
    CORPUS_METHODS,
    INIT_METHODS,
    METHOD_SPECS,
    InitContext,
    InitMethod,
    InitResult,
    MethodSpec,
    Plan,
    combine_rows,
    mean_of_rows,
    method_options,
    register_method,
    source_row_stats,
)
from workflow_scripts.initialize.tokens import (
    NewToken,
    find_new_tokens,
    map_decode_encode,
    map_full_tokenizer_on_piece,
    source_subwords,
)


def main(argv: list[str] | None = None) -> None:
    """The command line (``python -m workflow_scripts.initialize``), imported on call so that ``-m`` runs it once."""
    from workflow_scripts.initialize.__main__ import main as cli_main

    cli_main(argv)


__all__ = [
    "CORPUS_METHODS",
    "FASTTEXT_DEFAULTS",
    "INIT_METHODS",
    "METHOD_SPECS",
    "InitContext",
    "InitMethod",
    "InitResult",
    "MethodSpec",
    "NewToken",
    "Plan",
    "align_counts",
    "align_plans",
    "bpe_merge_ranks",
    "combine_rows",
    "fasttext_word",
    "find_new_tokens",
    "focus_plans",
    "init_eeve",
    "init_focus",
    "init_mean",
    "init_merge",
    "init_random",
    "initialize",
    "initialize_model",
    "is_tied",
    "main",
    "map_decode_encode",
    "map_full_tokenizer_on_piece",
    "mapping_diagnostics",
    "mean_of_rows",
    "merge_plans",
    "merge_tree",
    "method_options",
    "method_stats",
    "methods",
    "padded_size",
    "register_method",
    "source_row_stats",
    "source_subwords",
    "sparsemax",
    "train_fasttext",
]
