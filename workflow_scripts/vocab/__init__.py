"""Auxiliary tokenizer and vocabulary expansion (paper 002 §3, §6.6).

An auxiliary BPE tokenizer T_aux is trained on the target-language corpus D with the source tokenizer's own normalizer
and pre-tokenizer; V_new is taken from its most frequent tokens that the source vocabulary V_s lacks; the target
tokenizer T_t is a real BPE over V_s ∪ V_new (vocabulary entries plus merge rules), never "added tokens", which are
matched before BPE and garble byte-level decoding. The new merges go after the source merges (``new_merges="last"``,
the default: target text never gets longer) or before them ("first": the paper's priority for new pieces, with
unreachable or unused tokens replaced); see ``pipeline``. Either way text without a new token's string tokenizes
exactly as before.

The route follows from the source tokenizer's tokenizer.json (``detect_family``), never from a flag:
- byte-level BPE (GPT-2, SmolLM2, Llama-3 converted from tiktoken): T_aux is trained with Hugging Face tokenizers'
  BPE trainer under the source's normalizer and pre-tokenizer; pieces are bytes in GPT-2's byte-to-unicode form.
- SentencePiece byte-fallback BPE (Llama-2, Mistral, Gemma): T_aux is trained with the ``sentencepiece`` library
  (BPE, byte fallback, the source's trainer and normalizer options: ``sentencepiece_options``) and converted to a
  tokenizer.json with the source's normalizer, pre-tokenizer and decoder; pieces are characters with "▁" for spaces.
  Here a character that V_s lacks (so far spelled by byte-fallback pieces <0xXX>) is a new token with no merge: BPE
  starts from the characters in the vocabulary, so adding one changes only text that contains it. (Reference practice
  appends SentencePiece pieces with score 0, the highest priority: ``new_merges="first"`` is that priority, written
  into the tokenizer.json's merge list.)
Other models (WordPiece, Unigram, WordLevel) are rejected with a message naming the model.

Modules, in the order of the step:
- ``source``: read the source tokenizer, decide the route;
- ``aux``: train T_aux;
- ``select``: rank the candidates and plan exactly k reachable new tokens (the algorithm is in its docstring), or
  take the paper's plain top-k (``plan_topk``);
- ``target``: write T_t (new merges first or last) and report what it changes;
- ``crossing``: occurrences of new tokens in D that cross a source-token boundary (byte spans);
- ``replace``: the replacement tokenizer of vocabulary replacement (Table 11), trained on D by the same route;
- ``pipeline``: ``expand``, the whole sequence (rank → plan → [refill] → expand → report), used by the rule, the
  analysis step, tools and tests;
- ``cli``: ``python -m workflow_scripts.vocab aux|expand|replace``.
Byte and piece helpers live in ``workflow_scripts.pieces``.
"""

from workflow_scripts.pieces import (
    BYTE_LEVEL_BPE,
    METASPACE,
    SENTENCEPIECE_BPE,
    SUPPORTED_FAMILIES,
    byte_level_form,
    bytes_to_unicode,
    detect_family,
    piece_bytes,
    piece_text,
)
from workflow_scripts.vocab.aux import sentencepiece_options, train_aux_tokenizer, train_sentencepiece_aux
from workflow_scripts.vocab.cli import main
from workflow_scripts.vocab.crossing import boundary_crossings, byte_lengths
from workflow_scripts.vocab.pipeline import Expansion, expand
from workflow_scripts.vocab.select import (
    ExpansionPlan,
    aux_merge_parts,
    plan_expansion,
    plan_topk,
    rank_candidates,
    select_new_tokens,
)
from workflow_scripts.vocab.source import as_tokenizer, load_source, pre_tokens, tokenizer_json_path
from workflow_scripts.vocab.target import (
    NEW_MERGES,
    build_expanded_json,
    expand_tokenizer,
    expansion_report,
    next_free_id,
)

__all__ = [
    "BYTE_LEVEL_BPE",
    "METASPACE",
    "NEW_MERGES",
    "SENTENCEPIECE_BPE",
    "SUPPORTED_FAMILIES",
    "Expansion",
    "ExpansionPlan",
    "as_tokenizer",
    "aux_merge_parts",
    "boundary_crossings",
    "build_expanded_json",
    "byte_lengths",
    "byte_level_form",
    "bytes_to_unicode",
    "detect_family",
    "expand",
    "expand_tokenizer",
    "expansion_report",
    "load_source",
    "main",
    "next_free_id",
    "piece_bytes",
    "piece_text",
    "plan_expansion",
    "plan_topk",
    "pre_tokens",
    "rank_candidates",
    "select_new_tokens",
    "sentencepiece_options",
    "tokenizer_json_path",
    "train_aux_tokenizer",
    "train_sentencepiece_aux",
]
