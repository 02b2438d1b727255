"""MuMo (paper 000, "Accelerating Multilingual Language Model for Excessively Tokenized Languages"): a target-language
LM head on the frozen source model, trained on D, decoded with top-k verification. No public code exists; this is the
reference implementation of the project. Modules: ``vocab`` (V_mono, source spellings, forward maximum matching),
``head`` (the head, Multi-/Random-init, the saved folder), ``train`` (head-only training), ``decode`` (the decoder and
its LightEval adapter), ``cli``; its decoder in the speed step is ``workflow_scripts.speed.mumo``.

Choices the paper leaves open, and ours:
- V_mono comes from the auxiliary tokenizer trained on D (the paper used off-the-shelf monolingual tokenizers): its
  pieces whose text is, after at most one leading space, entirely in the target script (Unicode's Script property,
  ``languages.all_in_script``), byte pieces and partial UTF-8 sequences dropped; a word is "in V_s" when its source
  spelling is one token. Order: the target tokenizer's id order; ``max_size`` keeps the first ones.
- A word's source spelling is its text as inside running text (no start-of-text "▁"), tokenized by the source BPE;
  the same ids are fed back at decoding, averaged by Multi-init and used as the training input.
- FFN: residual SwiGLU, d_ffn = d/4, d_mono = d, output projection zero at start (so Multi-init rows act on h as the
  source LM head's rows do); no biases. Random-init: N(mean, std) per dimension of the source LM-head rows.
- Training: each sentence of D is one example (BOS first when the tokenizer has one), truncated to ``seq_len`` source
  tokens; labels are the next FMM unit, positions inside a word ignored; loss = mean NLL over the concatenated softmax
  (V_multi ∪ V_mono); linear warmup then linear decay; base in eval mode and frozen (hidden states under no_grad).
- Decoding: candidates are the top-k of the MuMo logits (k = 10); sampling draws from softmax(σ / T) over them (top-p
  cut), the no-verification ablation decodes the MuMo distribution directly; ``max_new_tokens`` counts source tokens
  (a word overrunning the budget is cut), so every method gets the same budget of text.
- Speed: the speed step times MuMo like every method (``workflow_scripts.speed.mumo``, a ``Decoder``); own tokens
  are MuMo steps (one accepted candidate each), so ``tokens_per_second`` is steps per second; teacher forcing feeds
  the reference one forward-maximum-matching unit per step, the forced unit taking the last of the k candidates'
  places when it is not among them.
- Random-init is a grid row of its own (``{procedure: MuMo, init: Random}``); ``init: none`` takes ``mumo.init``.
"""
