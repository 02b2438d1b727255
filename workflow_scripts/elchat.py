"""ElChat: restore an adapted model's original abilities from its instruction-tuned sibling, without training (paper 002
§8.2, Table 10; Yamaguchi et al. 2025).

Start from the chat (instruction-tuned) model; interpolate the transformer layers 0, 1, -2 and -1 between the adapted
(expanded + LAPT) model and the chat model by spherical interpolation; copy every input-embedding and LM-head row from
the adapted model, the new rows included; then put the chat model's rows back for its special tokens. Every other
tensor (the middle layers, the final norm) stays the chat model's. The output tokenizer is the adapted tokenizer with
the chat model's chat template and special tokens, so the merged model can be prompted as the chat model is.

The conventions follow the paper's reference code (public, read for facts; gucci-j/lowres-cve ``elchat/``, the
``--consider_special_tokens`` pipeline ``add_transition copy_emb`` of gucci-j/chat-cve):

- ``rate`` is ``t`` of ``slerp(t, adapted, chat)``: the chat model's share. Rates 0.3, 0.5, 0.5, 0.3 keep layer 0 and
  layer -1 at 70 % adapted and make layers 1 and -2 halfway points: a transition from the adapted embeddings to the
  chat model's middle layers.
- slerp works per tensor, as mergekit's: each weight matrix is flattened into one vector, so one angle per tensor
  (not one per row). Directions closer than ``DOT_THRESHOLD`` to parallel or anti-parallel fall back to linear
  interpolation. A zero tensor has no direction: it falls back to lerp too (mergekit would scale the other tensor
  by sin(t·π/2); this is our choice).
- Every parameter of the four layers is interpolated (for Llama and Gemma-2 these are exactly the reference's lists:
  attention and MLP projections and every layer norm; layer biases, where an architecture has them, are included).
- The special tokens are the chat tokenizer's ``all_special_ids`` (BOS, EOS, UNK, PAD and the extra special tokens
  such as Gemma's ``<start_of_turn>``), restored in the input embeddings and in the LM head.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from pathlib import Path
from typing import Any

from workflow_scripts.io import atomic_path, set_threads, setup_logging, write_json

log = logging.getLogger("vocabexp")

LAYERS = (0, 1, -2, -1)
RATES = (0.3, 0.5, 0.5, 0.3)  # t of slerp(t, adapted, chat): the chat model's share
DOT_THRESHOLD = 0.9995  # mergekit's: |cos| above it counts as (anti-)parallel
EPS = 1e-8  # a norm at most this is a zero tensor
NAMED_SPECIAL = ("bos_token", "eos_token", "unk_token", "pad_token")


class ElChatError(ValueError):
    """The chat model and the adapted model cannot be merged (architecture, shapes, vocabularies)."""


def _lerp(t: float, v0, v1):
    return (1.0 - t) * v0 + t * v1


def interpolate(t: float, v0, v1, *, dot_threshold: float = DOT_THRESHOLD, eps: float = EPS) -> tuple[Any, str]:
    """``slerp(t, v0, v1)`` of two tensors of one shape, flattened (t = 0 gives v0, t = 1 gives v1), and which
    interpolation was used: "slerp", or "lerp" for (anti-)parallel directions and zero tensors. Computed in float32
    (the angle in float64), returned in ``v0``'s dtype."""
    import torch

    if v0.shape != v1.shape:
        raise ElChatError(f"slerp needs tensors of one shape, got {tuple(v0.shape)} and {tuple(v1.shape)}")
    if not 0.0 <= t <= 1.0:
        raise ElChatError(f"slerp rate t must lie in [0, 1], got {t}")
    a = v0.detach().to(torch.float32)
    b = v1.detach().to(torch.float32)
    a64, b64 = a.flatten().to(torch.float64), b.flatten().to(torch.float64)
    norm_a, norm_b = float(a64.norm()), float(b64.norm())
    if norm_a <= eps or norm_b <= eps:
        return _lerp(t, a, b).to(v0.dtype), "lerp"
    cos = float(torch.dot(a64, b64)) / (norm_a * norm_b)
    cos = max(-1.0, min(1.0, cos))
    if abs(cos) > dot_threshold:
        return _lerp(t, a, b).to(v0.dtype), "lerp"
    theta = math.acos(cos)
    s0 = math.sin((1.0 - t) * theta) / math.sin(theta)
    s1 = math.sin(t * theta) / math.sin(theta)
    return (s0 * a + s1 * b).to(v0.dtype), "slerp"


def cosine(v0, v1) -> float:
    """Cosine of the angle between two tensors, flattened (0 when either is zero)."""
    import torch

    a, b = v0.detach().flatten().to(torch.float64), v1.detach().flatten().to(torch.float64)
    norms = float(a.norm()) * float(b.norm())
    return float(torch.dot(a, b)) / norms if norms > 0 else 0.0


def slerp(t: float, v0, v1, *, dot_threshold: float = DOT_THRESHOLD, eps: float = EPS):
    """Spherical linear interpolation of two tensors, flattened, with the lerp fallbacks of ``interpolate``."""
    return interpolate(t, v0, v1, dot_threshold=dot_threshold, eps=eps)[0]


def decoder_layers(model) -> Any:
    """The model's list of transformer layers (``model.model.layers`` for Llama, Mistral, Gemma-2, Qwen2)."""
    layers = getattr(model.get_decoder(), "layers", None)
    if layers is None:
        raise ElChatError(f"{type(model).__name__}: no decoder layer list (.layers) found; ElChat needs one")
    return layers


def resolve_layers(layers: tuple[int, ...] | list[int], rates: tuple[float, ...] | list[float], n: int) -> list:
    """(layer index in 0..n-1, rate) pairs; negative indices count from the end. Errors name the bad value."""
    if len(layers) != len(rates):
        raise ElChatError(f"{len(layers)} layers {list(layers)} but {len(rates)} rates {list(rates)}: give one each")
    out, seen = [], set()
    for index, rate in zip(layers, rates, strict=True):
        if not -n <= index < n:
            raise ElChatError(f"layer {index} does not exist: the models have {n} layers")
        if not 0.0 <= rate <= 1.0:
            raise ElChatError(f"rate {rate} of layer {index} must lie in [0, 1]")
        resolved = index % n
        if resolved in seen:
            raise ElChatError(f"layer {index} is named twice (it is layer {resolved} of {n})")
        seen.add(resolved)
        out.append((resolved, float(rate)))
    return out


def _is_tied(model) -> bool:
    return model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def _body_shapes(model) -> dict[str, tuple]:
    """Name -> shape of every parameter but the input embeddings and the LM head (those may differ in rows)."""
    skip = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    return {name: tuple(p.shape) for name, p in model.named_parameters() if id(p) not in skip}


def check_compatible(chat, adapted, chat_tokenizer, adapted_tokenizer) -> None:
    """Raise ElChatError, saying what differs, unless ``adapted`` is an adaptation of the chat model's family: the same
    architecture and shapes outside the vocabulary, the same tying, and a vocabulary that keeps every chat token at
    its id (T_t extends V_s; the base and the instruction-tuned model share V_s)."""
    kinds = (chat.config.model_type, adapted.config.model_type)
    if kinds[0] != kinds[1]:
        raise ElChatError(f"architectures differ: the chat model is {kinds[0]!r}, the adapted model {kinds[1]!r}")
    for key in ("num_hidden_layers", "hidden_size"):
        a, b = getattr(chat.config, key, None), getattr(adapted.config, key, None)
        if a != b:
            raise ElChatError(f"{key} differs: the chat model has {a}, the adapted model {b}")
    if _is_tied(chat) != _is_tied(adapted):
        raise ElChatError(
            f"embedding tying differs: the chat model is {'tied' if _is_tied(chat) else 'untied'}, the adapted "
            f"model {'tied' if _is_tied(adapted) else 'untied'}"
        )
    chat_shapes, adapted_shapes = _body_shapes(chat), _body_shapes(adapted)
    diff = sorted(set(chat_shapes) ^ set(adapted_shapes))
    diff += [k for k in sorted(set(chat_shapes) & set(adapted_shapes)) if chat_shapes[k] != adapted_shapes[k]]
    if diff:
        shown = [f"{k} {chat_shapes.get(k, 'missing')} vs {adapted_shapes.get(k, 'missing')}" for k in diff[:3]]
        raise ElChatError(f"{len(diff)} parameter(s) differ (chat vs adapted): " + "; ".join(shown))
    if adapted.get_input_embeddings().weight.shape[1] != chat.get_input_embeddings().weight.shape[1]:
        raise ElChatError("embedding widths differ between the chat model and the adapted model")
    chat_vocab, adapted_vocab = chat_tokenizer.get_vocab(), adapted_tokenizer.get_vocab()
    moved = [(tok, i, adapted_vocab.get(tok)) for tok, i in chat_vocab.items() if adapted_vocab.get(tok) != i]
    if moved:
        tok, i, j = sorted(moved, key=lambda m: m[1])[0]
        raise ElChatError(
            f"the adapted tokenizer does not extend the chat model's vocabulary: {len(moved)} of {len(chat_vocab)} "
            f"chat tokens have another id or none (e.g. {tok!r}: chat id {i}, adapted id {j}); ElChat needs the "
            "instruction-tuned sibling of the adapted model's source model"
        )
    n_rows = adapted.get_input_embeddings().weight.shape[0]
    if n_rows < len(adapted_tokenizer):
        raise ElChatError(f"the adapted model has {n_rows} embedding rows for {len(adapted_tokenizer)} tokens")
    if not getattr(chat_tokenizer, "chat_template", None):
        raise ElChatError("the chat model's tokenizer has no chat template: is it the instruction-tuned model?")


def merge_layers(chat, adapted, pairs: list[tuple[int, float]]) -> list[dict]:
    """Interpolate every parameter of the named layers in place in ``chat``: slerp(rate, adapted, chat)."""
    import torch

    chat_layers, adapted_layers = decoder_layers(chat), decoder_layers(adapted)
    report = []
    with torch.no_grad():
        for index, rate in pairs:
            adapted_params = dict(adapted_layers[index].named_parameters())
            methods = {"slerp": 0, "lerp": 0}
            names, cosines = [], []
            for name, param in chat_layers[index].named_parameters():
                cosines.append(cosine(adapted_params[name], param))
                merged, method = interpolate(rate, adapted_params[name], param)
                param.copy_(merged)
                methods[method] += 1
                names.append(name)
            report.append(
                {
                    "layer": index,
                    "rate": rate,
                    "tensors": len(names),
                    **methods,
                    "cos_min": round(min(cosines), 6),  # above DOT_THRESHOLD everywhere: lerp, the layer barely moved
                    "cos_max": round(max(cosines), 6),
                    "names": names,
                }
            )
    return report


def copy_rows(chat, adapted, special_ids: list[int]) -> dict:
    """Give ``chat`` the adapted model's embedding and LM-head matrices (every row, its row count), then the chat
    model's own rows at ``special_ids``. A tied model keeps one matrix."""
    import torch

    tied = _is_tied(chat)
    ids = torch.as_tensor(special_ids, dtype=torch.long)
    with torch.no_grad():
        emb = adapted.get_input_embeddings().weight.detach().to(torch.float32).clone()
        emb[ids] = chat.get_input_embeddings().weight.detach().to(torch.float32)[ids]
        head = None
        if not tied:
            head = adapted.get_output_embeddings().weight.detach().to(torch.float32).clone()
            head[ids] = chat.get_output_embeddings().weight.detach().to(torch.float32)[ids]
        chat.resize_token_embeddings(emb.shape[0], mean_resizing=False)
        chat.get_input_embeddings().weight.copy_(emb)
        if head is not None:
            chat.get_output_embeddings().weight.copy_(head)
    if tied and not _is_tied(chat):
        raise ElChatError("the merged model lost its embedding tying while resizing")
    return {"rows": int(emb.shape[0]), "tied": tied, "special_ids": list(special_ids)}


def merged_tokenizer(chat_tokenizer, adapted_tokenizer):
    """The adapted tokenizer (T_t) with the chat model's chat template and named special tokens."""
    tok = adapted_tokenizer
    tok.chat_template = chat_tokenizer.chat_template
    for attr in NAMED_SPECIAL:
        value = getattr(chat_tokenizer, attr, None)
        if value is not None and getattr(tok, attr, None) != value:
            setattr(tok, attr, str(value))
    extra = [str(t) for t in getattr(chat_tokenizer, "extra_special_tokens", None) or []]
    missing = [t for t in extra if t not in set(map(str, tok.all_special_tokens))]
    if missing:
        tok.add_special_tokens({"extra_special_tokens": missing})  # already in the vocabulary: no new ids
    return tok


def elchat(chat, adapted, chat_tokenizer, adapted_tokenizer, *, layers=LAYERS, rates=RATES) -> tuple[Any, Any, dict]:
    """Merge in place into ``chat`` (returned) and return it with its tokenizer and a report (see the module doc)."""
    check_compatible(chat, adapted, chat_tokenizer, adapted_tokenizer)
    n_layers = len(decoder_layers(chat))
    pairs = resolve_layers(layers, rates, n_layers)
    special_ids = sorted({int(i) for i in chat_tokenizer.all_special_ids})
    chat_rows = chat.get_input_embeddings().weight.shape[0]
    layer_report = merge_layers(chat, adapted, pairs)
    rows = copy_rows(chat, adapted, special_ids)
    suppress = getattr(adapted.generation_config, "suppress_tokens", None)
    if suppress:  # the adapted model's padding rows (initialize) must never be generated by the merged model either
        chat.generation_config.suppress_tokens = list(suppress)
    tokenizer = merged_tokenizer(chat_tokenizer, adapted_tokenizer)
    report = {
        "method": "ElChat (paper 002 §8.2): slerp(rate, adapted, chat) on the named layers, rows from the adapted "
        "model, special-token rows from the chat model",
        "layers": layer_report,
        "untouched_layers": sorted(set(range(n_layers)) - {i for i, _ in pairs}),
        "num_layers": n_layers,
        "embedding_rows": {"chat": int(chat_rows), "adapted": rows["rows"], "merged": rows["rows"]},
        "tied_embeddings": rows["tied"],
        "special_tokens_restored": {str(i): chat_tokenizer.convert_ids_to_tokens(i) for i in special_ids},
        "rows_from_adapted": rows["rows"] - len(special_ids),
        "tokenizer_size": len(tokenizer),
        "chat_template": bool(tokenizer.chat_template),
        "suppress_tokens": len(suppress or []),
    }
    return chat, tokenizer, report


def run(chat_dir: str | Path, adapted_dir: str | Path, out_dir: str | Path, *, layers=LAYERS, rates=RATES) -> dict:
    """Load both models (float32), merge, and save the merged model and tokenizer atomically as an HF folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    for name, folder in (("chat", chat_dir), ("adapted", adapted_dir)):
        if not (Path(folder) / "config.json").is_file():
            raise FileNotFoundError(f"--{name} {str(folder)!r} is not a save_pretrained model folder (no config.json)")
    chat = AutoModelForCausalLM.from_pretrained(chat_dir, dtype=torch.float32)
    adapted = AutoModelForCausalLM.from_pretrained(adapted_dir, dtype=torch.float32)
    chat_tok = AutoTokenizer.from_pretrained(chat_dir)
    adapted_tok = AutoTokenizer.from_pretrained(adapted_dir)
    merged, tokenizer, report = elchat(chat, adapted, chat_tok, adapted_tok, layers=layers, rates=rates)
    with atomic_path(out_dir) as tmp:
        merged.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    report.update(
        {"chat_model": str(chat_dir), "adapted_model": str(adapted_dir), "seconds": round(time.time() - t0, 2)}
    )
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chat", required=True, help="the instruction-tuned model folder (save_pretrained)")
    p.add_argument("--adapted", required=True, help="the adapted (expanded + LAPT) model folder")
    p.add_argument("--out", required=True, help="output model folder")
    p.add_argument("--report", required=True, help="output JSON report")
    p.add_argument("--layers", type=int, nargs="+", default=list(LAYERS))
    p.add_argument("--rates", type=float, nargs="+", default=list(RATES), help="t of slerp(t, adapted, chat)")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    report = run(a.chat, a.adapted, a.out, layers=a.layers, rates=a.rates)
    write_json(a.report, report)
    log.info(
        "elchat: %d layers merged, %d rows, %d special rows restored in %.1f s",
        len(report["layers"]),
        report["embedding_rows"]["merged"],
        len(report["special_tokens_restored"]),
        report["seconds"],
    )


if __name__ == "__main__":
    main()
