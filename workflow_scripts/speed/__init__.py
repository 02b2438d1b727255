"""Inference efficiency you can trust (paper 002 §6.5, Table 4): per task, repeated, in units that compare
across vocabularies, against the token-count bound.

For each task (mt; the prompts are ``workflow_scripts/prompts.yaml``, the templates LightEval evaluation uses),
the speed step times

- **generation** at batch size 1 (the paper's) and at a larger batch, with greedy decoding and the paper's decoding
  (Table 13 b, seeded), stopping at the first newline as the task does; and
- **teacher forcing**: the reference target text fed one token per model step through the KV cache after the prompt
  (one forward pass per target token, the steps timed together as generation's are). It measures what the vocabulary
  buys on identical text, whatever a weakly trained model chooses to write.

Each measurement is preceded by warm-up calls and repeated; a record holds the median (``value``), ``min``, ``max``
and every repeat, in three units: ``chars_per_second``, ``source_tokens_per_second`` (the same text re-tokenized with
the SOURCE model's tokenizer) and ``tokens_per_second`` (the model's own). ``token_ratio_bound`` = source-tokenizer
tokens ÷ model tokens on the text timed is the bound of the speed-up. Records carry ``mode`` (generate,
teacher_forced), ``decoding`` (greedy, paper; teacher forcing takes the argmax each step) and ``batch_size``. Devices
are synchronised around every timed call; ``details.hardware`` records the device, threads and versions.

Plugging in another decoder (MuMo's extra head plus verification): implement ``decoders.Decoder``:

- ``sync()``: wait for queued device work;
- ``generate(prompt_ids, max_new_tokens, *, decoding, seed) -> (new_ids_per_prompt, model_steps)``: new ids in the
  model tokenizer's vocabulary, each cut after its stop token, and the forward passes run;
- ``teacher_force(prompt_ids, target_ids) -> Forced(steps, seconds, prefill_seconds, matches)``: the timed steps
  after the prompt (a MuMo step may consume several target tokens: ``steps`` says how many it ran).

and hand it to ``measure.run_task``; the units, bound and records stay the same.
"""

from workflow_scripts.speed.decoders import Decoder, Forced, HFDecoder
from workflow_scripts.speed.measure import Item, Settings, run_task
from workflow_scripts.speed.units import TextCounts, bound, new_token_share, rates

__all__ = [
    "Decoder",
    "Forced",
    "HFDecoder",
    "Item",
    "Settings",
    "TextCounts",
    "bound",
    "new_token_share",
    "rates",
    "run_task",
]
