"""MuMo decoding (MuMo §3.3): top-k candidates from the MuMo distribution, verified by the frozen model.

Each step: the k most probable MuMo ids (V_multi tokens and V_mono words); a V_mono word is fed back as its source
spelling (§3.3.1); each candidate c of l source tokens gets σ(c) = (1/l) Σ log p_multi(c_j | c_<j, x) under the frozen
model (§3.3.2, eq. 5). Deterministic decoding emits the candidate with the highest σ. Sampling (the paper's:
temperature 0.1, top-k 10, top-p 0.7) draws from softmax(σ / T) over the k candidates after a top-p cut (our reading of
"from the k candidates, the ultimate prediction can be derived ... in stochastic manners"). Without verification (the
ablation, Table 6) the MuMo distribution itself is decoded: its argmax, or a draw after temperature, top-k and top-p.

All candidates longer than one token are scored by one batched forward pass over the cached context (the cache
repeated per candidate); the chosen one's cache row and last hidden state continue the generation, so verification
costs no extra pass for the emitted word. One MuMo step = one accepted candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from workflow_scripts.mumo.head import MuMo

PAPER_SAMPLING = {"temperature": 0.1, "top_k": 10, "top_p": 0.7}


@dataclass
class DecodeSettings:
    """How MuMo decodes: k candidates, verification on/off, deterministic or sampling (the paper's values)."""

    k: int = 10
    verify: bool = True
    sample: bool = False
    temperature: float = PAPER_SAMPLING["temperature"]
    top_k: int = PAPER_SAMPLING["top_k"]
    top_p: float = PAPER_SAMPLING["top_p"]
    seed: int = 0


@dataclass
class MuMoOutput:
    """One generation: the source ids emitted, the MuMo ids chosen (one per step) and why it stopped."""

    source_ids: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    stopped_by: str = "length"


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """``probs`` (1-D, any order) with everything outside the smallest set of mass >= top_p zeroed."""
    order = torch.argsort(probs, descending=True)
    cum = torch.cumsum(probs[order], 0)
    keep = order[: int((cum < top_p).sum().item()) + 1]
    out = torch.zeros_like(probs)
    out[keep] = probs[keep]
    return out / out.sum()


def _draw(scores: torch.Tensor, s: DecodeSettings, generator: torch.Generator) -> int:
    """Index drawn from softmax(scores / T) after top-k and top-p."""
    k = min(s.top_k, scores.numel())
    top = torch.topk(scores, k)
    probs = _nucleus(torch.softmax(top.values / s.temperature, 0), s.top_p)
    return int(top.indices[torch.multinomial(probs.cpu(), 1, generator=generator)].item())


def _check_cache(cache: Any) -> list:
    """The cache's layers, when MuMo can branch them: full-attention ``DynamicLayer``s, and sliding-window layers
    (Mistral, Gemma-2), which are switched to keep their past so that a candidate's surplus can be cropped away."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    layers = getattr(cache, "layers", None)
    kinds = {type(layer) for layer in layers or []}
    if layers is None or not kinds <= {DynamicLayer, DynamicSlidingWindowLayer}:
        names = sorted(k.__name__ for k in kinds)
        raise NotImplementedError(f"MuMo decoding needs a DynamicCache of full or sliding-window layers (got {names})")
    for layer in layers:
        if type(layer) is DynamicSlidingWindowLayer and not layer.record_past:
            layer.activate_past_recording()
    return layers


def _state(layer) -> tuple:
    return layer.keys, layer.values, getattr(layer, "cumulative_length", None)


def _score_words(mumo: MuMo, cache: Any, spellings: list[list[int]], first_logp: torch.Tensor):
    """σ of multi-token candidates: one forward over all of them on the repeated cache. Returns σ, the hidden states
    and the cache holding one row per candidate (caller selects and crops), and the cache's state before."""
    layers = _check_cache(cache)
    saved = [_state(layer) for layer in layers]
    longest = max(len(s) for s in spellings)
    pad = spellings[0][0]  # right padding: causal attention keeps it out of every real position
    rows = torch.tensor([s + [pad] * (longest - len(s)) for s in spellings], device=mumo.device)
    for layer in layers:
        layer.batch_repeat_interleave(len(spellings))
    h, cache = mumo.hidden(rows, past_key_values=cache, use_cache=True)
    logp = torch.log_softmax(mumo.base_logits(h[:, :-1]), -1)
    sigma = []
    for i, s in enumerate(spellings):
        rest = logp[i, torch.arange(len(s) - 1, device=logp.device), torch.tensor(s[1:], device=logp.device)]
        sigma.append((first_logp[s[0]] + rest.sum()) / len(s))
    return torch.stack(sigma), h, cache, saved


def _restore(cache: Any, saved: list) -> None:
    for layer, (keys, values, length) in zip(cache.layers, saved, strict=True):
        layer.keys, layer.values = keys, values
        if length is not None:
            layer.cumulative_length = length


def _trim(cache: Any) -> None:
    """Sliding-window layers back to their window (they keep their past while candidates are scored)."""
    for layer in getattr(cache, "layers", []):
        if getattr(layer, "is_sliding", False) and layer.is_initialized:
            layer.crop(0)


def _choose(
    mumo: MuMo, h_last, cache, s: DecodeSettings, generator, forced: int | None = None
) -> tuple[int, torch.Tensor, Any, int]:
    """One MuMo step: the chosen MuMo id, the hidden state after feeding it back, the extended cache, and the id the
    decoder itself would have chosen.

    ``forced`` (teacher forcing): the step does the work of a decoding step, then continues with ``forced`` instead of
    its own choice. Under verification ``forced`` takes the last candidate's place when it is not among the top k, so
    the scoring pass has the same shape and the chosen row's cache is reused exactly as when decoding emits it.
    """
    base_logits, head_logits = mumo.logits(h_last)
    scores = torch.cat([base_logits, head_logits], -1)[0]
    if not s.verify:
        own = _draw(scores, s, generator) if s.sample else int(torch.argmax(scores).item())
        choice = own if forced is None else forced
        h, cache = mumo.hidden(torch.tensor([mumo.source_ids(choice)], device=mumo.device), None, cache, True)
        _trim(cache)
        return choice, h[:, -1], cache, own
    cands = torch.topk(scores, min(s.k, scores.numel())).indices.tolist()
    if forced is not None and forced not in cands:
        cands[-1] = forced
    first_logp = torch.log_softmax(base_logits[0], -1)
    sigma = torch.empty(len(cands), device=first_logp.device)
    multi = [i for i, c in enumerate(cands) if len(mumo.source_ids(c)) > 1]
    for i, c in enumerate(cands):
        if i not in multi:
            sigma[i] = first_logp[mumo.source_ids(c)[0]]
    if multi:
        spellings = [mumo.source_ids(cands[i]) for i in multi]
        sigma_m, h_m, cache, saved = _score_words(mumo, cache, spellings, first_logp)
        sigma[multi] = sigma_m
    best = _draw(sigma, s, generator) if s.sample else int(torch.argmax(sigma).item())
    own = cands[best]
    if forced is not None:
        best = cands.index(forced)
    choice = cands[best]
    if best in multi:
        row, length = multi.index(best), len(mumo.source_ids(choice))
        surplus = h_m.shape[1] - length
        for layer in cache.layers:
            layer.batch_select_indices(torch.tensor([row], device=mumo.device))
            if surplus:
                layer.crop(-surplus)
        _trim(cache)
        return choice, h_m[row : row + 1, length - 1], cache, own
    if multi:
        _restore(cache, saved)
    h, cache = mumo.hidden(torch.tensor([[choice]], device=mumo.device), None, cache, True)
    _trim(cache)
    return choice, h[:, -1], cache, own


@torch.no_grad()
def mumo_generate(
    mumo: MuMo,
    prompt_ids: list[int],
    settings: DecodeSettings,
    *,
    max_new_tokens: int,
    eos_ids: set[int] = frozenset(),
    stop_strings: tuple[str, ...] = (),
    tokenizer: Any = None,
) -> MuMoOutput:
    """Generate at most ``max_new_tokens`` source tokens after ``prompt_ids`` by MuMo decoding.

    Stops at an EOS id (kept, as ``generate`` keeps it) or once the decoded continuation holds a stop string; a word
    that overruns the token budget is cut at the budget, so every method gets the same budget in source tokens.
    """
    generator = torch.Generator().manual_seed(settings.seed)
    h, cache = mumo.hidden(torch.tensor([prompt_ids], device=mumo.device), use_cache=True)
    h_last, out = h[:, -1], MuMoOutput()
    while len(out.source_ids) < max_new_tokens:
        choice, h_last, cache, _ = _choose(mumo, h_last, cache, settings, generator)
        ids = mumo.source_ids(choice)
        out.steps.append(choice)
        if eos_ids & set(ids):
            out.source_ids += ids[: min(i for i, t in enumerate(ids) if t in eos_ids) + 1]
            out.stopped_by = "eos"
            break
        out.source_ids += ids
        if stop_strings and any(x in tokenizer.decode(out.source_ids) for x in stop_strings):
            out.stopped_by = "stop_string"
            break
    out.source_ids = out.source_ids[:max_new_tokens]
    return out


class MuMoGenerator(nn.Module):
    """MuMo behind the part of a transformers model that LightEval's generation uses (``generate`` returning
    ``sequences``), so that the harness's prompts, stop sequences and metrics apply to MuMo unchanged."""

    def __init__(self, mumo: MuMo, tokenizer: Any, settings: DecodeSettings):
        super().__init__()
        self.mumo, self.tokenizer, self.settings = mumo, tokenizer, settings
        self.generation_config = mumo.base.generation_config
        self.outputs: list[MuMoOutput] = []

    @property
    def config(self):
        return self.mumo.base.config

    @property
    def device(self) -> torch.device:
        return self.mumo.device

    @property
    def dtype(self) -> torch.dtype:
        return self.mumo.base.dtype

    def generate(self, input_ids, attention_mask=None, stopping_criteria=None, max_new_tokens=128, **kwargs):
        """Each row decoded on its own (pads dropped); rows padded on the right with the pad id afterwards."""
        eos = kwargs.get("eos_token_id", self.tokenizer.eos_token_id)
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        pad = kwargs.get("pad_token_id") or self.tokenizer.pad_token_id or 0
        stops = tuple(c.sequence for c in stopping_criteria or [] if hasattr(c, "sequence"))
        rows = []
        for i in range(input_ids.shape[0]):
            ids = input_ids[i] if attention_mask is None else input_ids[i][attention_mask[i].bool()]
            out = mumo_generate(
                self.mumo,
                ids.tolist(),
                self.settings,
                max_new_tokens=max_new_tokens,
                eos_ids=eos_ids,
                stop_strings=stops,
                tokenizer=self.tokenizer,
            )
            self.outputs.append(out)
            rows.append(input_ids[i].tolist() + out.source_ids)
        width = max(len(r) for r in rows)
        seqs = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=input_ids.device)
        return SimpleNamespace(sequences=seqs)
