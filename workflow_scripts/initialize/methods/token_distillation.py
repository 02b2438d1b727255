"""Token Distillation (Dobler, Elliott & de Melo 2025, arXiv 2505.20133; docs/initialization.md "TokenDistillation"):
each new token's input row is learned so that the model's hidden states with the new token match those it computes
on the token's old split.

For snippets of D that contain the new token's source spelling, the *teacher* is the source model on the source
token ids; the *student* is the same frozen model on the same ids with each occurrence of the spelling merged into
the new token, whose input row is the only trainable parameter. The loss is the mean squared error between the last
layer's hidden states (after the final norm, the authors' ``target_layer=-1``) of student and teacher at every student
position, each matched with the teacher position it stands for (a merged token with the last subword of its
spelling); positions before the first occurrence are equal in both and add zero, as in the authors' code. Rows start
from Mean and are trained by Adam (no weight decay, constant learning rate) over one shuffled epoch of every token's
snippets. The untied LM head's new rows are Mean's (the authors' ``subtoken_mean`` option; their default trains them
with next-token prediction). A tied model has one matrix, which gets the distilled rows.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from workflow_scripts.initialize.methods.random_mean import init_mean
from workflow_scripts.initialize.registry import InitContext, InitResult, register_method

# The authors' settings (their README and code): 100 snippets of 50 source tokens per new token, batch 16,
# learning rate 1e-4, one epoch. A config's ``initialization.TokenDistillation`` may change any of them
# (registry.method_options; the initialize step's --method-options).
TOKDIST_DEFAULTS = {"snippets_per_token": 100, "snippet_len": 50, "batch_size": 16, "lr": 1e-4, "epochs": 1}


@dataclass(frozen=True)
class Snippet:
    """One training example: a window of a sentence of D around an occurrence of new token ``row``'s spelling.

    ``teacher``: source ids (the source tokenizer's special prefix, then the window); ``student``: the same with each
    occurrence of the spelling replaced by the new id; ``keep``: per teacher position, whether it has a student
    position (all but the subwords before the last one of a merged occurrence), in order.
    """

    row: int  # index of the token in ctx.new_tokens
    teacher: list[int]
    student: list[int]
    keep: list[bool]


def _special_prefix(tokenizer: Any) -> list[int]:
    """The special ids the source tokenizer puts before a text (a BOS, or none), as the model sees a sentence."""
    enc = tokenizer.backend_tokenizer.encode("a", add_special_tokens=True)
    prefix = []
    for i, special in zip(enc.ids, enc.special_tokens_mask, strict=True):
        if not special:
            break
        prefix.append(i)
    return prefix


def merge_occurrences(ids: list[int], start: int, pattern: list[int], new_id: int) -> tuple[list[int], list[bool]]:
    """``ids`` with every occurrence of ``pattern`` at or after ``start`` replaced by ``new_id`` (left to right, not
    overlapping), and per position of ``ids`` whether it has a position in the result (a merged occurrence keeps
    its last subword's)."""
    student, keep, j, p = [], [], 0, len(pattern)
    while j < len(ids):
        if j >= start and ids[j : j + p] == pattern:
            student.append(new_id)
            keep += [False] * (p - 1) + [True]
            j += p
        else:
            student.append(ids[j])
            keep.append(True)
            j += 1
    return student, keep


def token_snippets(ctx: InitContext, snippets_per_token: int, snippet_len: int) -> list[Snippet]:
    """Up to ``snippets_per_token`` snippets per new token from D, one per occurrence of the token's source spelling
    in the source tokenization of a sentence, sentences visited in a seeded random order.

    The window holds ``snippet_len`` source tokens around the occurrence (half the free room before it where the
    sentence allows, the rest after), as the authors cut theirs; a sentence shorter than that gives all it has. A
    token whose spelling is longer than ``snippet_len``, or that has none, gets no snippet.
    """
    backend = ctx.source_tokenizer.backend_tokenizer
    sentences = ctx.corpus("TokenDistillation")
    order = list(range(len(sentences)))
    random.Random(ctx.seed).shuffle(order)
    prefix = _special_prefix(ctx.source_tokenizer)
    by_first: dict[int, list[tuple[int, list[int]]]] = {}
    for k, tok in enumerate(ctx.new_tokens):
        ids, _ = ctx.subwords(tok)
        if ids and len(ids) <= snippet_len:
            by_first.setdefault(ids[0], []).append((k, ids))
    counts = [0] * len(ctx.new_tokens)
    wanted = sum(len(v) for v in by_first.values()) * snippets_per_token
    out: list[Snippet] = []
    for s in range(0, len(order), 1024):
        batch = [sentences[i] for i in order[s : s + 1024]]
        for enc in backend.encode_batch(batch, add_special_tokens=False):
            ids = enc.ids
            for i, first in enumerate(ids):
                for k, pattern in by_first.get(first, ()):
                    p = len(pattern)
                    if counts[k] >= snippets_per_token or ids[i : i + p] != pattern:
                        continue
                    free = snippet_len - p
                    before = min(i, free // 2)
                    after = min(len(ids) - i - p, free - before)
                    teacher = prefix + ids[i - before : i + p + after]
                    student, keep = merge_occurrences(teacher, len(prefix), pattern, ctx.new_tokens[k].id)
                    out.append(Snippet(k, teacher, student, keep))
                    counts[k] += 1
            if len(out) == wanted:
                return out
    return out


def hidden_state_mse(model: Any, snippets: list[Snippet], rows: Any, new_ids: list[int]) -> Any:
    """Token Distillation's loss on a batch: the MSE between the student's and the teacher's last hidden states over
    every student position and its matched teacher position (``Snippet``), averaged over positions and dimensions.

    ``rows`` [len(new_ids), d] are the new input rows (the trainable tensor); ``model`` is the source model, whose
    own rows give every other input. Sequences are right-padded and causal, so padding never reaches a kept position.
    """
    import torch

    decoder = model.get_decoder()
    embed = model.get_input_embeddings().weight
    row_of = {i: r for r, i in enumerate(new_ids)}
    width = max(len(s.teacher) for s in snippets)
    teacher = torch.zeros(len(snippets), width, dtype=torch.long)
    student = torch.zeros(len(snippets), width, dtype=torch.long)
    new_row = torch.full((len(snippets), width), -1, dtype=torch.long)
    keep = torch.zeros(len(snippets), width, dtype=torch.bool)
    real = torch.zeros(len(snippets), width, dtype=torch.bool)
    for b, s in enumerate(snippets):
        teacher[b, : len(s.teacher)] = torch.as_tensor(s.teacher)
        keep[b, : len(s.keep)] = torch.as_tensor(s.keep)
        real[b, : len(s.student)] = True
        for j, i in enumerate(s.student):
            if i in row_of:
                new_row[b, j] = row_of[i]
            else:
                student[b, j] = i
    device = embed.device
    with torch.no_grad():
        target = decoder(input_ids=teacher.to(device)).last_hidden_state[keep.to(device)]
    inputs = embed.detach()[student.to(device)]
    is_new = (new_row >= 0).to(device)
    inputs = torch.where(is_new[..., None], rows[new_row.clamp(min=0).to(device)].to(inputs.dtype), inputs)
    got = decoder(inputs_embeds=inputs).last_hidden_state[real.to(device)]
    return torch.nn.functional.mse_loss(got.float(), target.float())


def distill_rows(model: Any, ctx: InitContext, start: Any) -> tuple[Any, list[dict], dict]:
    """Token Distillation of the new input rows from ``start`` [k, d] (float64, Mean's rows): the rows (float64), one
    record per token and the run's statistics. Deterministic for a seed on one device and thread count."""
    import copy

    import torch

    opts = {**TOKDIST_DEFAULTS, **ctx.resources.get("options", {})}
    t0 = time.perf_counter()
    snippets = token_snippets(ctx, int(opts["snippets_per_token"]), int(opts["snippet_len"]))
    t_snip = time.perf_counter() - t0
    per_token = [0] * len(ctx.new_tokens)
    for s in snippets:
        per_token[s.row] += 1
    # The frozen model in float32 (a copy where it is stored in another dtype), in eval mode: no dropout.
    work = model if next(model.parameters()).dtype == torch.float32 else copy.deepcopy(model).float()
    flags = {p: p.requires_grad for p in work.parameters()}
    was_training = work.training
    new_ids = [t.id for t in ctx.new_tokens]
    rows = torch.nn.Parameter(start.to(torch.float32).clone().to(next(work.parameters()).device))
    opt = torch.optim.Adam([rows], lr=float(opts["lr"]), betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    rng = random.Random(ctx.seed)
    losses: list[float] = []
    batch_size = int(opts["batch_size"])
    try:
        work.eval()
        for p in work.parameters():
            p.requires_grad_(False)
        with torch.enable_grad():
            for _ in range(int(opts["epochs"])):
                order = list(range(len(snippets)))
                rng.shuffle(order)
                for b in range(0, len(order), batch_size):
                    loss = hidden_state_mse(work, [snippets[i] for i in order[b : b + batch_size]], rows, new_ids)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(float(loss.detach()))
    finally:
        for p, flag in flags.items():
            p.requires_grad_(flag)
        work.train(was_training)
    out = start.clone()
    trained = [k for k, n in enumerate(per_token) if n]
    out[trained] = rows.detach().to(torch.float64).cpu()[trained]
    records = []
    for k, tok in enumerate(ctx.new_tokens):
        ids, fallback = ctx.subwords(tok)
        if per_token[k]:
            rec = {"rule": "token_distillation", "snippets": per_token[k], "source_ids": ids, "fallback": fallback}
        else:
            rule = "mean_of_source_subwords" if ids else "mean_of_source_rows"
            rec = {"rule": rule, "snippets": 0, "source_ids": ids, "fallback": fallback or "no_snippets"}
        records.append(rec)
    head = losses[: min(10, len(losses))]
    tail = losses[-min(10, len(losses)) :]
    stats = {
        **opts,
        "snippets": len(snippets),
        "tokens_distilled": len(trained),
        "steps": len(losses),
        "loss_first_steps": sum(head) / len(head) if head else None,
        "loss_last_steps": sum(tail) / len(tail) if tail else None,
        "seconds_snippets": round(t_snip, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return out, records, stats


def tokdist_stats(ctx: InitContext) -> dict:
    """The report's statistics and timing of Token Distillation (snippets, steps, loss at the start and the end)."""
    return {"token_distillation": ctx.cache["TokenDistillation"][2]} if "TokenDistillation" in ctx.cache else {}


@register_method(
    "TokenDistillation",
    needs_corpus=True,
    needs_model=True,
    stats=tokdist_stats,
    order=80,
    options=TOKDIST_DEFAULTS,
    draws=True,
)
def init_token_distillation(source: Any, ctx: InitContext, role: str) -> InitResult:
    """Token Distillation (arXiv 2505.20133): input rows distilled from the hidden states of the old split, starting
    from Mean; untied output rows as Mean."""
    mean = init_mean(source, ctx, role)
    if role == "output":
        return mean
    if "TokenDistillation" not in ctx.cache:
        model = ctx.resources.get("model")
        if model is None:
            raise ValueError("TokenDistillation initialization needs the source model in resources['model']")
        ctx.cache["TokenDistillation"] = distill_rows(model, ctx, mean.rows)
    rows, records, _ = ctx.cache["TokenDistillation"]
    return InitResult(rows=rows.clone(), records=records)
