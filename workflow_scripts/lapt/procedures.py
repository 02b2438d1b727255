"""LAPT procedures (paper 002 §5; EEVE §2.3): which parameters, and which rows of them, each stage trains.

A procedure is a tuple of stages run in order on one step budget; a stage's ``prepare`` sets ``requires_grad`` on the
model (wrapping it with LoRA where the procedure says so) and returns the model and its row limits. ``PROCEDURES`` is
the registry the command line and the config check read, built from the stage table of
workflow_scripts/procedure_stages.py (which the GPU estimate reads too); importing it does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workflow_scripts import procedure_stages
from workflow_scripts.procedure_stages import STAGES, StageSpec


def decoder_parts(model):
    """The transformer layer list and the final norm of a decoder-only HF model (Llama, Gemma, Mistral, ...)."""
    base = model.base_model
    layers = getattr(base, "layers", None)
    norm = getattr(base, "norm", None)
    if layers is None or norm is None:
        raise ValueError(
            f"{type(model).__name__}: cannot find `layers` and `norm` on {type(base).__name__}; "
            "add this architecture to workflow_scripts.lapt.procedures.decoder_parts"
        )
    return layers, norm


def _set_trainable(model, modules) -> None:
    model.requires_grad_(False)
    for m in modules:
        m.requires_grad_(True)


def _prepare_2x2ls(model, hp: dict[str, Any]):
    """2x2 LS (paper 002 §5, Remy et al. 2024): bottom-2 and top-2 layers, embeddings, LM head and final norm."""
    layers, norm = decoder_parts(model)
    if len(layers) < 4:
        raise ValueError(f"2x2LS needs at least 4 transformer layers, the model has {len(layers)}")
    picked = [layers[0], layers[1], layers[-2], layers[-1]]
    _set_trainable(model, [*picked, norm, model.get_input_embeddings(), model.get_output_embeddings()])
    return model


def _prepare_full(model, hp: dict[str, Any]):
    """All parameters (CPT with full fine-tuning)."""
    model.requires_grad_(True)
    return model


def _prepare_lora(model, hp: dict[str, Any]):
    """LoRA on all linear layers (paper 002 §5; rank, alpha, dropout of Table 13); embeddings and LM head fully trained.

    The embedding and head are trained in place rather than through peft's modules_to_save, which would untie a tied
    head and save copies; merge_and_unload then gives back the plain model.
    """
    from peft import LoraConfig, get_peft_model

    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    config = LoraConfig(
        r=int(hp["lora_r"]),
        lora_alpha=hp["lora_alpha"],
        lora_dropout=hp["lora_dropout"],
        target_modules="all-linear",  # peft excludes the output layer from "all-linear"
        bias="none",
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, config)
    emb.requires_grad_(True)
    head.requires_grad_(True)
    return peft_model


def _prepare_embeddings(model, hp: dict[str, Any]):
    """Stage 1 of 2-stage (paper 002 §5, Cui et al. 2023): the input embeddings and the LM head only."""
    _set_trainable(model, [model.get_input_embeddings(), model.get_output_embeddings()])
    return model


@dataclass(frozen=True)
class StageContext:
    """What a stage may need beyond the model: the number of source vocabulary rows (EEVE's "new rows" start there)."""

    n_source_rows: int | None = None


# A stage's prepare returns the (possibly wrapped) model and its row limits: (parameter, n) pairs whose rows [0, n)
# stay frozen although the parameter is trainable (EEVE's "new rows"). Everything else it leaves requires_grad=False.
RowLimits = list[tuple[Any, int]]


def _whole(prepare: Callable[[Any, dict[str, Any]], Any]) -> Callable[[Any, dict[str, Any], StageContext], Any]:
    return lambda model, hp, ctx: (prepare(model, hp), [])


def _rows(trained: bool, new_only: bool) -> str | None:
    """A matrix's trained rows in an EEVE stage: "new" (ids >= n_source_rows), "all", or None (frozen)."""
    return ("new" if new_only else "all") if trained else None


def _eeve_stage(spec: StageSpec):
    """One EEVE stage (EEVE §2.3): the embedding and head rows ``spec`` names, and the internal layers (everything but
    embeddings and head) when it trains layers. On a tied model input and output are one matrix: "all" on either side
    wins, so stages 1-3 all train the new rows of the shared matrix and stages 4-5 the whole shared matrix."""
    input_rows = _rows(spec.embedding, spec.new_embedding_rows)
    output_rows = _rows(spec.head, spec.new_head_rows)
    internal = spec.layers != "none"

    def prepare(model, hp: dict[str, Any], ctx: StageContext):
        n_src = ctx.n_source_rows
        n_rows = model.get_input_embeddings().weight.shape[0]
        if n_src is None or not 0 < n_src < n_rows:
            raise ValueError(
                f"EEVE trains the rows of new tokens (ids >= the source vocabulary size): needs n_source_rows "
                f"(--n-source-rows or --init-report) between 1 and {n_rows - 1}, got {n_src}"
            )
        if internal and hp["eeve_layers"] == "LoRA":
            # EEVE §2.3 trains stage 6 with (Q)LoRA: the layers learn through LoRA (added once, kept for stage 7).
            if not hasattr(model, "peft_config"):
                model = _prepare_lora(model, hp)
            model.requires_grad_(False)
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.requires_grad_(True)
        else:
            model.requires_grad_(internal)
        emb, head = model.get_input_embeddings(), model.get_output_embeddings()
        emb.requires_grad_(False)
        head.requires_grad_(False)
        limits: dict[int, tuple[Any, int]] = {}
        for module, rows in ((emb, input_rows), (head, output_rows)):
            if rows is None:
                continue
            w = module.weight
            first = 0 if rows == "all" else n_src
            limits[id(w)] = (w, min(first, limits.get(id(w), (w, first))[1]))
            if rows == "all":  # a head bias (rare) belongs to its rows; new-row stages leave it frozen
                bias = getattr(module, "bias", None)
                if bias is not None:
                    bias.requires_grad_(True)
        for w, _ in limits.values():
            w.requires_grad_(True)
        return model, [(w, first) for w, first in limits.values() if first > 0]

    return prepare


def adds_lora(procedure: str, hp: dict[str, Any]) -> bool:
    """Whether a stage of ``procedure`` wraps the model with LoRA (LoRA, 2-stage, EEVE with eeve_layers LoRA)."""
    return procedure_stages.adds_lora(procedure, hp["eeve_layers"])


def _unwrap(model):
    """Merge LoRA (if any stage added it) and return the plain HF model."""
    return model.merge_and_unload() if hasattr(model, "merge_and_unload") else model


@dataclass(frozen=True)
class Stage:
    """One training stage: how it selects (and possibly adds) trainable parameters and rows."""

    name: str
    prepare: Callable[[Any, dict[str, Any], StageContext], tuple[Any, RowLimits]]


@dataclass(frozen=True)
class Procedure:
    """A training procedure: its stages, run in order on one step budget, and how it unwraps before saving."""

    stages: tuple[Stage, ...]
    finalize: Callable[[Any], Any] = _unwrap


# The stages that train whole parameters, by their name in the stage table; EEVE's stages train rows.
WHOLE_STAGES: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "2x2LS": _prepare_2x2ls,
    "full": _prepare_full,
    "LoRA": _prepare_lora,
    "embeddings": _prepare_embeddings,
}


def _stage(procedure: str, spec: StageSpec) -> Stage:
    """The stage lapt runs for ``spec``, a stage of ``procedure`` in the stage table."""
    if procedure == "EEVE":
        return Stage(spec.name, _eeve_stage(spec))
    if spec.name not in WHOLE_STAGES:
        raise ValueError(
            f"procedure {procedure!r}: stage {spec.name!r} of workflow_scripts/procedure_stages.py has no prepare "
            f"function; add one to WHOLE_STAGES in workflow_scripts/lapt/procedures.py (known: {list(WHOLE_STAGES)})"
        )
    return Stage(spec.name, _whole(WHOLE_STAGES[spec.name]))


PROCEDURES: dict[str, Procedure] = {
    name: Procedure(tuple(_stage(name, spec) for spec in specs)) for name, specs in STAGES.items()
}
