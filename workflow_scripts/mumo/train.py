"""Head-only training of MuMo (§3.2, eq. 4): maximize log p_mumo over D segmented by forward maximum matching.

The frozen model's final hidden states are computed under no_grad; only the head gets gradients. The paper's budget is
1,500 steps of batch 128, AdamW lr 1e-3, weight decay 0.01, 150 warmup steps (§4.1); ``HeadHparams`` defaults to it.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import asdict, dataclass

import torch

from workflow_scripts.mumo.head import MuMo
from workflow_scripts.mumo.vocab import SourceSpeller, fmm_segment, training_example

log = logging.getLogger("vocabexp")


@dataclass
class HeadHparams:
    """MuMo §4.1 defaults; the embedded default scales steps and batch down like LAPT."""

    max_steps: int = 1500
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 150
    seq_len: int = 512
    seed: int = 42

    @classmethod
    def from_dict(cls, values: dict) -> HeadHparams:
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__ and v is not None}
        return cls(**known)


def build_examples(mumo: MuMo, tokenizer, lines: list[str], seq_len: int) -> tuple[list, dict]:
    """Segment every line by FMM into (input ids, labels), truncated to ``seq_len``; and counts for the report."""
    speller = SourceSpeller(tokenizer)
    examples, words, units, tokens = [], 0, 0, 0
    for line in lines:
        segmented = fmm_segment(line, mumo.v_mono, speller)
        ids, labels = training_example(segmented, mumo.n_multi, tokenizer.bos_token_id)
        if len(ids) < 2:
            continue
        examples.append((ids[:seq_len], labels[:seq_len]))
        words += sum(u.word is not None for u in segmented)
        units += len(segmented)
        tokens += sum(len(u.source_ids) for u in segmented)
    stats = {"examples": len(examples), "fmm_units": units, "fmm_words": words, "source_tokens": tokens}
    return examples, stats


def _batch(examples: list, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids, _ in examples)
    ids = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    for i, (x, y) in enumerate(examples):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
    return ids.to(device), labels.to(device)


def mumo_loss(mumo: MuMo, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean NLL of the labels under softmax([f_multi(h); f_mono(h)]), eq. 4 (right padding is masked by the labels).

    The frozen LM head enters only through its log-sum-exp and the target's logit, both computed without gradient
    at the labelled positions: the same loss as a cross-entropy over the concatenated logits, without their graph.
    """
    keep = labels != -100
    with torch.no_grad():
        h, _ = mumo.hidden(ids)  # right padding: causal attention keeps pads out of every labelled position
        h = h[keep]
        target = labels[keep]
        base_logits = mumo.base_logits(h)
        base_lse = torch.logsumexp(base_logits, -1)
        in_multi = target < mumo.n_multi
        base_target = base_logits.gather(1, target.clamp(max=mumo.n_multi - 1)[:, None])[:, 0]
    head_logits = mumo.head(h.to(mumo.head.out.weight.dtype)).float()
    lse = torch.logaddexp(base_lse, torch.logsumexp(head_logits, -1)) if head_logits.shape[1] else base_lse
    word = (target - mumo.n_multi).clamp(min=0)
    head_target = head_logits.gather(1, word[:, None])[:, 0] if head_logits.shape[1] else base_target
    return (lse - torch.where(in_multi, base_target, head_target)).mean()


def train_head(mumo: MuMo, examples: list, hp: HeadHparams) -> list[dict]:
    """AdamW on the head only, linear warmup and decay; batches drawn in a seeded shuffled order. Returns the loss
    curve (one row per step)."""
    if not examples:
        raise ValueError("no training examples: D is empty after segmentation")
    params = [p for p in mumo.head.parameters()]
    opt = torch.optim.AdamW(params, lr=hp.lr, weight_decay=hp.weight_decay, betas=(0.9, 0.999), eps=1e-8)

    def schedule(step: int) -> float:
        if step < hp.warmup_steps:
            return (step + 1) / hp.warmup_steps
        return max(0.0, (hp.max_steps - step) / max(1, hp.max_steps - hp.warmup_steps))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    rng = random.Random(hp.seed)
    order: list[int] = []
    mumo.base.eval()
    mumo.head.train()
    curve = []
    for step in range(hp.max_steps):
        if len(order) < hp.batch_size:
            more = list(range(len(examples)))
            rng.shuffle(more)
            order += more * math.ceil(hp.batch_size / len(more))
        batch, order = order[: hp.batch_size], order[hp.batch_size :]
        ids, labels = _batch([examples[i] for i in batch], mumo.device)
        loss = mumo_loss(mumo, ids, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        curve.append({"step": step + 1, "loss": float(loss.item()), "lr": sched.get_last_lr()[0]})
        if step % 10 == 0 or step + 1 == hp.max_steps:
            log.info("mumo head step %d/%d loss %.4f", step + 1, hp.max_steps, loss.item())
    mumo.head.eval()
    return curve


def hparams_dict(hp: HeadHparams) -> dict:
    return asdict(hp)
