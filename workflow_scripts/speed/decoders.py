"""The decoder interface the timing code drives, and its implementation for a Hugging Face causal LM.

A decoder turns prompt token ids into new token ids; the timing code (``measure``) times its calls and converts what
it emitted into text. Another decoding scheme (MuMo: an extra LM head plus verification) plugs in by implementing the
same three members; see the package docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class Forced:
    """One teacher-forced pass: model steps over the target, their synchronised wall time, and the prompt's."""

    steps: int  # forward passes that fed target tokens (one per target token for a plain LM)
    seconds: float  # wall time of those steps only, device synchronised before and after
    prefill_seconds: float  # the prompt's forward pass (not part of ``seconds``)
    matches: int  # target tokens the model's argmax predicted (a by-product, not a speed figure)


@dataclass
class Scored:
    """One log-likelihood pass over an item's choices: the choices' log-probabilities and the synchronised seconds."""

    logprobs: list[float]  # summed over each choice's tokens, given the context
    seconds: float


class Decoder(Protocol):
    """What the speed measurement needs from a decoding scheme."""

    def sync(self) -> None:
        """Wait for queued device work (CUDA), so that a host timer measures it."""

    def generate(
        self, prompt_ids: list[list[int]], max_new_tokens: int, *, decoding: str, seed: int
    ) -> tuple[list[list[int]], int]:
        """New ids per prompt (cut after the stop token) and the number of model forward passes."""

    def teacher_force(self, prompt_ids: list[int], target_ids: list[int]) -> Forced:
        """Feed ``target_ids`` one at a time after the prompt through the KV cache, timing those steps."""

    def score_choices(self, context_ids: list[int], choice_ids: list[list[int]]) -> Scored:
        """Log-probability of each choice after the context, in one forward pass over the context and the choices
        (the log-likelihood tasks; MuMo cells are not evaluated on them)."""

    def own_tokens(self, ids: list[int]) -> int:
        """How many of the model's own tokens (decoding steps) ``ids`` (tokenizer ids) take: ``len(ids)`` for a plain
        LM; MuMo counts a V_mono word as one."""


def newline_token_mask(tokenizer, vocab_size: int):
    """Boolean tensor over token ids: True where the token's text contains a newline (the stop condition).

    A fast tokenizer's backend decodes the ids itself, about 8x faster than transformers' ``batch_decode`` over a 49K
    vocabulary; the only difference, transformers' clean-up of spaces before punctuation, never adds or removes a
    newline."""
    import torch

    n = min(len(tokenizer), vocab_size)
    from workflow_scripts.pieces import backend_of

    ids = [[i] for i in range(n)]
    backend = backend_of(tokenizer)
    if backend is not None:
        texts = backend.decode_batch(ids, skip_special_tokens=False)
    else:
        texts = tokenizer.batch_decode(ids, skip_special_tokens=False)
    mask = torch.zeros(vocab_size, dtype=torch.bool)
    mask[:n] = torch.tensor(["\n" in t for t in texts], dtype=torch.bool)
    return mask


def _newline_criterion(mask, prompt_len: int):
    """A per-sequence stopping criterion: a row is done once any generated token contains a newline.

    Rows stop individually (transformers pads finished rows), and generation ends when every row is done.
    """
    from transformers import StoppingCriteria

    on_device = {}  # one copy of the mask per device, made at the first step and reused (no host copy per step)

    class NewlineStop(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            generated = input_ids[:, prompt_len:]
            if generated.device not in on_device:
                on_device[generated.device] = mask.to(generated.device)
            return on_device[generated.device][generated].any(dim=1)

    return NewlineStop()


class HFDecoder:
    """A transformers causal LM: ``model.generate`` for generation, the KV cache step by step for teacher forcing.

    Generation stops at the first token whose text holds a newline, or EOS (the mt/sum stop, paper §6.4). Forward
    passes are counted by a hook on the model, so the step counts are what the model actually ran.
    """

    def __init__(self, model, tokenizer=None):
        """``tokenizer`` None: teacher forcing only (random-weight benchmarks without a tokenizer)."""
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.vocab_size = model.get_output_embeddings().weight.shape[0]
        if tokenizer is None:
            self.newline_mask = torch.zeros(self.vocab_size, dtype=torch.bool)
        else:
            self.newline_mask = newline_token_mask(tokenizer, self.vocab_size)
        self.forward_calls = 0
        model.register_forward_pre_hook(self._count)

    def _count(self, module, args) -> None:
        self.forward_calls += 1

    def own_tokens(self, ids: list[int]) -> int:
        return len(ids)

    def sync(self) -> None:
        import torch

        if self.model.device.type == "cuda":
            torch.cuda.synchronize(self.model.device)

    def _stop_length(self, row) -> int:
        hits = (self.newline_mask[row] | (row == self.tokenizer.eos_token_id)).nonzero()
        return int(hits[0]) + 1 if len(hits) else len(row)

    def generate(
        self, prompt_ids: list[list[int]], max_new_tokens: int, *, decoding: str, seed: int
    ) -> tuple[list[list[int]], int]:
        """Left-padded batch generation with the given decoding (``evaluation.DECODING``), seeded."""
        import torch
        from transformers import GenerationConfig, StoppingCriteriaList

        from workflow_scripts.inference import DECODING

        width = max(map(len, prompt_ids))
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompt_ids], device=self.model.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompt_ids], device=self.model.device)
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            pad_token_id=pad,
            eos_token_id=self.tokenizer.eos_token_id,
            bos_token_id=self.tokenizer.bos_token_id,
            **DECODING[decoding],
        )
        criteria = StoppingCriteriaList([_newline_criterion(self.newline_mask, width)])
        torch.manual_seed(seed)
        before = self.forward_calls
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids, attention_mask=mask, generation_config=config, stopping_criteria=criteria
            )
        steps = self.forward_calls - before
        new = out[:, width:].cpu()
        return [row[: self._stop_length(row)].tolist() for row in new], steps

    def teacher_force(self, prompt_ids: list[int], target_ids: list[int]) -> Forced:
        """One forward pass per target token after a prefill of the prompt; each step also picks its argmax, as a
        greedy generation step does, and the steps are timed together between two device synchronisations."""
        import time

        import torch

        device = self.model.device
        target = torch.tensor(target_ids, device=device).view(1, -1)
        with torch.inference_mode():
            self.sync()
            t0 = time.perf_counter()
            # the prompt's last position is all a step needs: no logits over a 4K-token prompt's every position
            out = self.model(input_ids=torch.tensor([prompt_ids], device=device), use_cache=True, logits_to_keep=1)
            predicted = [out.logits[:, -1].argmax(-1)]
            self.sync()
            t1 = time.perf_counter()
            before = self.forward_calls
            past = out.past_key_values
            for i in range(target.shape[1]):
                out = self.model(input_ids=target[:, i : i + 1], past_key_values=past, use_cache=True)
                past = out.past_key_values
                predicted.append(out.logits[:, -1].argmax(-1))
            self.sync()
            t2 = time.perf_counter()
        steps = self.forward_calls - before
        matches = int((torch.cat(predicted[: len(target_ids)]) == target[0]).sum())
        return Forced(steps=steps, seconds=t2 - t1, prefill_seconds=t1 - t0, matches=matches)

    def score_choices(self, context_ids: list[int], choice_ids: list[list[int]]) -> Scored:
        """The choices' log-probabilities after the context in one forward pass, timed between two device
        synchronisations. Single-token choices (the lettered MCF answers of the multiple-choice tasks) are all scored by
        the context's last position: one pass over the context. Longer choices: one batch of the ``context + choice``
        sequences (right-padded), as LightEval's transformers backend batches an item's choices. Logits are computed for
        the scored positions only (``logits_to_keep``)."""
        import time

        import torch

        device = self.model.device
        if all(len(c) == 1 for c in choice_ids):
            ids = torch.tensor([context_ids], device=device)
            mask = torch.ones_like(ids)
            keep, rows = 1, [0] * len(choice_ids)
        else:
            seqs = [context_ids + c for c in choice_ids]
            width = max(map(len, seqs))
            pad = getattr(self.tokenizer, "pad_token_id", None) or 0  # masked out: any id will do
            ids = torch.tensor([r + [pad] * (width - len(r)) for r in seqs], device=device)
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in seqs], device=device)
            # every row shares the context: kept logits start at the position predicting each choice's first token
            keep, rows = width - len(context_ids) + 1, list(range(len(choice_ids)))
        targets = [torch.tensor(c, device=device).view(-1, 1) for c in choice_ids]
        with torch.inference_mode():
            self.sync()
            t0 = time.perf_counter()
            logits = self.model(input_ids=ids, attention_mask=mask, logits_to_keep=keep, use_cache=False).logits
            logprobs = []
            for row, choice, target in zip(rows, choice_ids, targets, strict=True):
                scored = torch.log_softmax(logits[row, : len(choice)].float(), dim=-1)
                logprobs.append(scored.gather(-1, target).sum())
            total = torch.stack(logprobs).tolist()
            self.sync()
            seconds = time.perf_counter() - t0
        return Scored(logprobs=total, seconds=seconds)
