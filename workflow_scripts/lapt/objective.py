"""LAPT objectives (paper 002 §5): ``clm``, and ``mtp`` with one extra head for token t+2 (Gloeckle et al. 2024)."""

from __future__ import annotations

from typing import Any

OBJECTIVES = ("clm", "mtp")


class LossComputer:
    """Token-summed training losses for ``clm`` or ``mtp`` (paper 002 §5; Gloeckle et al. 2024 with one extra head).

    For mtp the extra head reads the LM head's input (captured by a forward hook, so any wrapper works) and
    predicts token t+2.
    """

    def __init__(self, model, objective: str, output_embeddings):
        import torch

        if objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
        self.model = model
        self.objective = objective
        self.extra_head = None
        self._hidden = None
        self._hook = None
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        if objective == "mtp":
            w = output_embeddings.weight
            head = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
            with torch.no_grad():
                head.weight.copy_(w)  # initialized from the LM head (§5), then trained as its own copy
            self.extra_head = head
            self.attach(output_embeddings)

    def attach(self, output_embeddings) -> None:
        """Capture the LM head's input from ``output_embeddings`` (mtp; None: from no module), dropping the hook on
        the previous one.

        A stage that wraps the model (LoRA in 2-stage) may hand back another head module; a hook left on the old one
        would keep it, and this object, alive (2-4 GB at 7-9B).
        """
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self._hidden = None
        if self.extra_head is not None and output_embeddings is not None:
            self._hook = output_embeddings.register_forward_hook(self._capture)

    def _capture(self, module, inputs, output) -> None:
        self._hidden = inputs[0]

    def extra_parameters(self) -> list[tuple[str, Any]]:
        return [] if self.extra_head is None else [("mtp_head.weight", self.extra_head.weight)]

    def __call__(self, ids, n1: int, n2: int):
        """Loss of one micro-batch, normalized by the step's predicted positions ``n1`` (t+1) and ``n2`` (t+2).

        Normalizing by the whole step's counts gives every token the same weight whatever the accumulation split.
        """
        import torch
        import torch.nn.functional as F

        logits = self.model(input_ids=ids, use_cache=False).logits
        loss = F.cross_entropy(logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten(), reduction="sum") / n1
        if self.extra_head is None:
            return loss
        logits2 = self.extra_head(self._hidden[:, :-2])
        self._hidden = None
        if self.softcap:  # Gemma2 caps the LM head's logits; treat the extra head alike
            logits2 = torch.tanh(logits2 / self.softcap) * self.softcap
        return loss + F.cross_entropy(logits2.float().flatten(0, 1), ids[:, 2:].flatten(), reduction="sum") / n2
