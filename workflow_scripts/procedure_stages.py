"""The stages of each LAPT procedure (paper 002 §5; EEVE §2.3): what each stage trains, in plain data.

The one home of a procedure's structure. ``workflow_scripts.lapt.procedures`` builds its ``PROCEDURES`` (the torch
code that sets ``requires_grad``) from ``STAGES``, and ``workflow_scripts.gpu.estimate`` sizes each stage from it;
this module imports nothing, so the GPU estimate reads it without the training package (which imports the estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class StageSpec:
    """What one stage trains: transformer layers ("all", "2x2", "lora", "none"), embedding/head rows, final norm.

    ``new_embedding_rows`` / ``new_head_rows``: only the new tokens' rows of that matrix train (ids >= the source
    vocabulary size; EEVE), the others stay frozen. ``name``: the stage's name in lapt's stats and the config check.
    """

    layers: str
    embedding: bool
    head: bool
    final_norm: bool = False
    new_embedding_rows: bool = False
    new_head_rows: bool = False
    name: str = ""

    @property
    def new_rows_only(self) -> bool:
        """Whether a matrix trains its new rows only (EEVE stages 1-3, 5): lapt keeps a frozen-row snapshot of it."""
        return self.new_embedding_rows or self.new_head_rows


def _eeve(name: str, embedding: str | None, head: str | None, layers: bool) -> StageSpec:
    """One EEVE stage: rows of the input embeddings and of the LM head ("new", "all" or None: frozen), and whether
    the internal layers (everything but embeddings and head, final norm included) train."""
    return StageSpec(
        "all" if layers else "none",
        embedding is not None,
        head is not None,
        layers,
        embedding == "new",
        head == "new",
        name,
    )


# The registry of training procedures, in the order the config check and reports list them. The stage with the
# largest trainable set decides a run's memory; time sums the stages by their share of the steps.
STAGES: dict[str, tuple[StageSpec, ...]] = {
    # 2x2 LS (Remy et al. 2024): bottom-2 and top-2 layers, embeddings, LM head and final norm
    "2x2LS": (StageSpec("2x2", True, True, True, name="2x2LS"),),
    "full": (StageSpec("all", True, True, True, name="full"),),
    # LoRA on all linear layers; embeddings and LM head fully trained
    "LoRA": (StageSpec("lora", True, True, name="LoRA"),),
    # Cui et al. (2023), cited by paper 002 §5: embeddings + head, then LoRA with embeddings and head still trained
    "2-stage": (StageSpec("none", True, True, name="embeddings"), StageSpec("lora", True, True, name="LoRA")),
    # EEVE §2.3; on a tied model input and output are one matrix: "all" on either side wins
    "EEVE": (
        _eeve("1-new-input", "new", None, False),
        _eeve("2-new-output", None, "new", False),
        _eeve("3-new-input-output", "new", "new", False),
        _eeve("4-all-output", None, "all", False),
        _eeve("5-new-input-all-output", "new", "all", False),
        _eeve("6-all", "all", "all", True),
        _eeve("7-internal", None, None, True),
    ),
}


def stages_of(procedure: str, eeve_layers: str = "full") -> tuple[StageSpec, ...]:
    """The stages of ``procedure`` as lapt runs them under hparam ``eeve_layers``: "LoRA" trains EEVE's layers
    (stages 6-7) through LoRA, without the final norm (EEVE §2.3 used QLoRA there)."""
    if procedure not in STAGES:
        raise ValueError(f"unknown procedure {procedure!r}; expected one of {tuple(STAGES)}")
    stages = STAGES[procedure]
    if procedure == "EEVE" and eeve_layers == "LoRA":
        return tuple(replace(s, layers="lora", final_norm=False) if s.layers == "all" else s for s in stages)
    return stages


def adds_lora(procedure: str, eeve_layers: str = "full") -> bool:
    """Whether a stage of ``procedure`` trains through LoRA (LoRA, 2-stage, EEVE with eeve_layers LoRA)."""
    return any(s.layers == "lora" for s in stages_of(procedure, eeve_layers))
