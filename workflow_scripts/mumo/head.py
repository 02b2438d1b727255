"""The target monolingual LM head and the MuMo model around the frozen source model (MuMo §3.1, §4.1, §5.2).

f_mono(h) = g_mono(FFN(h)), FFN a SwiGLU block with d_ffn = d / 4; f_mumo(h) = [f_multi(h); f_mono(h)], the source LM
head's logits followed by the head's. Saved as a folder: ``mumo.json`` (config, with the path of the untouched source
model relative to the folder), ``head.safetensors`` and ``v_mono.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from workflow_scripts.mumo.vocab import VMono

CONFIG_FILE, HEAD_FILE, VMONO_FILE = "mumo.json", "head.safetensors", "v_mono.json"
FORMAT = "mumo-head-v1"
INITS = ("Multi", "Random")


class MonoHead(nn.Module):
    """f_mono: a residual SwiGLU FFN (d -> d/4 -> d), then g_mono, a linear map to |V_mono| logits.

    The FFN's output projection starts at zero, so that at initialization FFN(h) = h and the head's logits are the
    initialized rows of g_mono applied to the same hidden state as the source LM head (paper: "the initialized
    embeddings ... represent the original word in the multilingual context"); the residual is our choice, the paper
    writes FFN(h) = q(W1ᵀh)W2 and does not say how Multi-init survives a random FFN in front of it.
    """

    def __init__(self, d_model: int, n_words: int, d_ffn: int | None = None):
        super().__init__()
        self.d_ffn = d_ffn or max(1, d_model // 4)
        self.gate = nn.Linear(d_model, self.d_ffn, bias=False)
        self.up = nn.Linear(d_model, self.d_ffn, bias=False)
        self.down = nn.Linear(self.d_ffn, d_model, bias=False)
        self.out = nn.Linear(d_model, n_words, bias=False)
        nn.init.zeros_(self.down.weight)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        x = h + self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return self.out(x)


def multi_init_rows(lm_head: torch.Tensor, v_mono: VMono) -> torch.Tensor:
    """Multi-init (§4.1): each word's row is the mean of the source LM-head rows of its source spelling."""
    rows = [lm_head[list(ids)].float().mean(0) for ids in v_mono.spellings]
    return torch.stack(rows) if rows else lm_head.new_zeros((0, lm_head.shape[1]), dtype=torch.float32)


def random_init_rows(lm_head: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """Random-init (§5.2, Gaussian): each dimension ~ N(mean, std) of that dimension over the source LM-head rows."""
    g = torch.Generator().manual_seed(seed)
    mean, std = lm_head.float().mean(0), lm_head.float().std(0)
    return mean + std * torch.randn((n, lm_head.shape[1]), generator=g)


class MuMo(nn.Module):
    """The frozen source model with the target monolingual head (only ``head`` has trainable parameters)."""

    def __init__(self, base: Any, head: MonoHead, v_mono: VMono, meta: dict | None = None):
        super().__init__()
        self.base = base
        self.head = head
        self.v_mono = v_mono
        self.meta = dict(meta or {})
        for p in self.base.parameters():
            p.requires_grad_(False)

    @property
    def n_multi(self) -> int:
        """|V_multi|: the rows of the source LM head (MuMo ids of V_mono words start here)."""
        return self.base.get_output_embeddings().weight.shape[0]

    @property
    def device(self) -> torch.device:
        return self.base.device

    @property
    def config(self):
        return self.base.config

    def decoder(self):
        return getattr(self.base, self.base.base_model_prefix)

    def hidden(self, input_ids: torch.Tensor, attention_mask=None, past_key_values=None, use_cache=False):
        """Final (normed) hidden states of the frozen model, and its cache."""
        out = self.decoder()(
            input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values, use_cache=use_cache
        )
        return out.last_hidden_state, out.past_key_values

    def base_logits(self, h: torch.Tensor) -> torch.Tensor:
        """The frozen model's own next-token logits of hidden states ``h``: its LM head, then its final soft-capping
        where the model has one (Gemma-2: ``cap * tanh(logits / cap)``), as its forward pass computes them."""
        logits = self.base.get_output_embeddings()(h).float()
        cap = getattr(self.base.config, "final_logit_softcapping", None)
        return torch.tanh(logits / cap) * cap if cap else logits

    def logits(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Source logits and head logits of hidden states ``h`` (concatenated: the MuMo logits, eq. 3)."""
        return self.base_logits(h), self.head(h.to(self.head.out.weight.dtype)).float()

    def source_ids(self, mumo_id: int) -> list[int]:
        """A MuMo id as the source ids fed back (§3.3.1): itself for V_multi, the word's spelling for V_mono."""
        return [mumo_id] if mumo_id < self.n_multi else list(self.v_mono.spellings[mumo_id - self.n_multi])


def new_head(base: Any, v_mono: VMono, init: str, seed: int) -> MonoHead:
    """A head for ``base`` with output rows initialized by ``init`` (Multi or Random); FFN weights seeded."""
    if init not in INITS:
        raise ValueError(f"MuMo head init {init!r} is not one of {list(INITS)}")
    lm_head = base.get_output_embeddings().weight.detach().cpu()
    torch.manual_seed(seed)
    head = MonoHead(lm_head.shape[1], len(v_mono))
    rows = multi_init_rows(lm_head, v_mono) if init == "Multi" else random_init_rows(lm_head, len(v_mono), seed)
    with torch.no_grad():
        head.out.weight.copy_(rows)
    return head


def save_mumo(mumo: MuMo, folder: str | Path, source_model_dir: str | Path) -> None:
    """Write the MuMo folder atomically: config (source model path relative to the folder), head weights, V_mono."""
    from safetensors.torch import save_file

    from workflow_scripts.io import atomic_path

    folder = Path(folder)
    with atomic_path(folder) as tmp:
        tmp.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().float().cpu().contiguous() for k, v in mumo.head.state_dict().items()}
        save_file(state, str(tmp / HEAD_FILE))
        (tmp / VMONO_FILE).write_text(json.dumps(mumo.v_mono.to_json(), ensure_ascii=False), encoding="utf-8")
        config = {
            "format": FORMAT,
            "source_model": os.path.relpath(Path(source_model_dir).resolve(), folder.resolve()),
            "n_multi": mumo.n_multi,
            "d_model": mumo.head.out.weight.shape[1],
            "d_ffn": mumo.head.d_ffn,
            "n_words": len(mumo.v_mono),
            **mumo.meta,
        }
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def is_mumo_dir(folder: str | Path) -> bool:
    return (Path(folder) / CONFIG_FILE).is_file()


def source_model_of(folder: str | Path) -> Path:
    """The source model folder a MuMo folder refers to."""
    config = json.loads((Path(folder) / CONFIG_FILE).read_text(encoding="utf-8"))
    return (Path(folder) / config["source_model"]).resolve()


def load_mumo(folder: str | Path, dtype: str = "auto", device: str | None = None) -> tuple[MuMo, Any]:
    """A saved MuMo folder as (MuMo, source tokenizer), the source model loaded as ``evaluation.load_model`` does."""
    from safetensors.torch import load_file

    from workflow_scripts.inference import load_model

    folder = Path(folder)
    if not is_mumo_dir(folder):
        raise FileNotFoundError(f"{str(folder)!r} is not a MuMo folder (no {CONFIG_FILE})")
    config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    if config.get("format") != FORMAT:
        raise ValueError(f"{folder / CONFIG_FILE}: format {config.get('format')!r}, expected {FORMAT!r}")
    source = source_model_of(folder)
    if not (source / "config.json").is_file():
        raise FileNotFoundError(f"{folder / CONFIG_FILE}: source model {str(source)!r} does not exist")
    base, tokenizer = load_model(source, dtype, device)
    v_mono = VMono.from_json(json.loads((folder / VMONO_FILE).read_text(encoding="utf-8")))
    head = MonoHead(config["d_model"], len(v_mono), config["d_ffn"])
    head.load_state_dict(load_file(str(folder / HEAD_FILE)))
    head = head.to(device=base.device, dtype=base.dtype).eval()
    meta = {k: v for k, v in config.items() if k not in ("format", "n_multi", "d_model", "d_ffn", "n_words")}
    return MuMo(base, head, v_mono, meta).eval(), tokenizer
