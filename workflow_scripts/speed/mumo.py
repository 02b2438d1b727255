"""MuMo in the speed step: a ``decoders.Decoder``, so MuMo cells are timed by the
same code, on the same prompts and references, in the same units and paired with Source like every other method.

- ``generate``: ``mumo_generate`` per prompt (batch size 1 whatever the batch: the decoder is sequential, as the
  paper's), stopping at EOS or a newline as the mt task does.
- ``teacher_force``: the reference, segmented by forward maximum matching into V_mono words and fallback source
  tokens, fed one MuMo step per unit: each step computes the MuMo logits, takes the top k and (with verification)
  scores the multi-token candidates in one batched pass, exactly as a decoding step does, and then continues with the
  reference's unit instead of its own choice (``decode._choose(forced=...)``). So the time per character shows what
  the head buys on identical text, whatever the weakly trained head would have written.
- Own tokens are MuMo steps: ``own_tokens`` counts the units forward maximum matching cuts a text into, so
  ``tokens_per_second`` is MuMo steps per second and ``token_ratio_bound`` is source tokens ÷ MuMo steps.
"""

from __future__ import annotations

import dataclasses
import time

import torch

from workflow_scripts.mumo.decode import DecodeSettings, _choose, mumo_generate
from workflow_scripts.mumo.head import MuMo
from workflow_scripts.mumo.vocab import SourceSpeller, fmm_segment
from workflow_scripts.speed.decoders import Forced


class MuMoDecoder:
    """The speed step's decoder for a MuMo model (see the module docstring)."""

    def __init__(self, mumo: MuMo, tokenizer, settings: DecodeSettings):
        self.mumo, self.tokenizer, self.settings = mumo, tokenizer, settings
        self.speller = SourceSpeller(tokenizer)
        self.eos_ids = {tokenizer.eos_token_id} - {None}

    def sync(self) -> None:
        if self.mumo.device.type == "cuda":
            torch.cuda.synchronize(self.mumo.device)

    def units(self, ids: list[int]) -> list[int]:
        """The MuMo ids that spell the text of ``ids`` (continuing a prompt): a V_mono word is one, the characters
        no word covers are their source tokens."""
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        out: list[int] = []
        for unit in fmm_segment(text, self.mumo.v_mono, self.speller, initial=False):
            out += [self.mumo.n_multi + unit.word] if unit.word is not None else list(unit.source_ids)
        return out

    def own_tokens(self, ids: list[int]) -> int:
        return len(self.units(ids))

    def generate(
        self, prompt_ids: list[list[int]], max_new_tokens: int, *, decoding: str, seed: int
    ) -> tuple[list[list[int]], int]:
        """Each prompt decoded on its own (greedy: deterministic verification; paper: the paper's sampling)."""
        settings = dataclasses.replace(self.settings, sample=decoding == "paper", seed=seed)
        outputs, steps = [], 0
        for ids in prompt_ids:
            out = mumo_generate(
                self.mumo,
                ids,
                settings,
                max_new_tokens=max_new_tokens,
                eos_ids=self.eos_ids,
                stop_strings=("\n",),
                tokenizer=self.tokenizer,
            )
            outputs.append(out.source_ids)
            steps += len(out.steps)
        return outputs, steps

    @torch.no_grad()
    def teacher_force(self, prompt_ids: list[int], target_ids: list[int]) -> Forced:
        """One MuMo step per unit of the reference after a prefill of the prompt, the steps timed together."""
        units = self.units(target_ids)
        generator = torch.Generator().manual_seed(self.settings.seed)
        self.sync()
        t0 = time.perf_counter()
        h, cache = self.mumo.hidden(torch.tensor([prompt_ids], device=self.mumo.device), use_cache=True)
        h_last = h[:, -1]
        self.sync()
        t1 = time.perf_counter()
        matches = 0
        for unit in units:
            _, h_last, cache, own = _choose(self.mumo, h_last, cache, self.settings, generator, forced=unit)
            matches += own == unit
        self.sync()
        t2 = time.perf_counter()
        return Forced(steps=len(units), seconds=t2 - t1, prefill_seconds=t1 - t0, matches=matches)
