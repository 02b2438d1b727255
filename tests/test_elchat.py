"""ElChat (paper 002 §8.2, Table 10): slerp on hand vectors, which tensors change, which rows come from where, the
tokenizer of the merged model, and the errors for models that do not belong together."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tests.conftest import SMOL_MERGES, expand_tokenizer, model_state, sentencepiece_source
from workflow_scripts import elchat
from workflow_scripts.elchat import ElChatError, interpolate, slerp

CHAT_TEMPLATE = (
    "{% for m in messages %}<chat>{{ m['content'] }}</chat>{% endfor %}{% if add_generation_prompt %}>{% endif %}"
)


def vec(*xs: float) -> torch.Tensor:
    return torch.tensor(xs, dtype=torch.float32)


# ---------------------------------------------------------------------------------------------------------------- slerp


def test_slerp_of_orthogonal_unit_vectors_stays_on_the_circle():
    out, method = interpolate(0.5, vec(1, 0), vec(0, 1))
    assert method == "slerp"
    assert torch.allclose(out, vec(math.sqrt(0.5), math.sqrt(0.5)), atol=1e-7)  # lerp would give (0.5, 0.5)
    out = slerp(1 / 3, vec(1, 0), vec(0, 1))  # a third of the 90° arc: 30°
    assert torch.allclose(out, vec(math.cos(math.pi / 6), math.sin(math.pi / 6)), atol=1e-7)


def test_slerp_at_45_degrees_by_hand():
    # theta = pi/4; at t = 0.5 both weights are sin(pi/8) / sin(pi/4) = 0.5411961
    out = slerp(0.5, vec(1, 0), vec(1, 1))
    assert torch.allclose(out, vec(1.0823922, 0.5411961), atol=1e-6)


def test_slerp_ends_are_the_inputs():
    v0, v1 = vec(3, -1, 2), vec(-1, 4, 0.5)
    assert torch.equal(slerp(0.0, v0, v1), v0)
    assert torch.allclose(slerp(1.0, v0, v1), v1, atol=1e-6)


def test_parallel_anti_parallel_and_zero_fall_back_to_lerp():
    out, method = interpolate(0.3, vec(1, 2), vec(2, 4))  # parallel, different lengths
    assert method == "lerp" and torch.allclose(out, vec(1.3, 2.6), atol=1e-6)
    out, method = interpolate(0.25, vec(1, 0), vec(-1, 0))  # anti-parallel: no unique great circle
    assert method == "lerp" and torch.allclose(out, vec(0.5, 0.0), atol=1e-7)
    out, method = interpolate(0.5, vec(0, 0), vec(3, 4))  # zero: no direction
    assert method == "lerp" and torch.allclose(out, vec(1.5, 2.0), atol=1e-7)
    assert not torch.isnan(slerp(0.5, vec(0, 0), vec(0, 0))).any()


def test_slerp_takes_one_angle_per_tensor_not_per_row():
    # Flattened, the two matrices are 60° apart (cos = 1 / 2): both get sin(pi/6) / sin(pi/3) = 0.5773503 at t = 0.5.
    # Row by row, row 0 would be parallel (lerp) and row 1 orthogonal.
    v0 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    out = slerp(0.5, v0, v1)
    assert torch.allclose(out, torch.tensor([[1.1547005, 0.0], [0.5773503, 0.5773503]]), atol=1e-6)


def test_cosine_of_flattened_tensors():
    assert elchat.cosine(
        torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    ) == pytest.approx(0.5)
    assert elchat.cosine(vec(0, 0), vec(1, 0)) == 0.0


def test_slerp_rejects_bad_input():
    with pytest.raises(ElChatError, match="one shape"):
        slerp(0.5, vec(1, 0), vec(1, 0, 0))
    with pytest.raises(ElChatError, match=r"\[0, 1\]"):
        slerp(1.5, vec(1, 0), vec(0, 1))


def test_layer_indices_resolve_from_the_end_and_bad_ones_are_named():
    assert elchat.resolve_layers((0, 1, -2, -1), (0.3, 0.5, 0.5, 0.3), 6) == [(0, 0.3), (1, 0.5), (4, 0.5), (5, 0.3)]
    with pytest.raises(ElChatError, match="layer 6 does not exist: the models have 6 layers"):
        elchat.resolve_layers((0, 6), (0.3, 0.3), 6)
    with pytest.raises(ElChatError, match="layer -1 is named twice"):
        elchat.resolve_layers((5, -1), (0.3, 0.3), 6)
    with pytest.raises(ElChatError, match=r"2 layers .* but 1 rates"):
        elchat.resolve_layers((0, 1), (0.3,), 6)
    with pytest.raises(ElChatError, match=r"rate 1\.2 of layer 1"):
        elchat.resolve_layers((0, 1), (0.3, 1.2), 6)


# ------------------------------------------------------------------------------------------------------- tiny models


def random_model(
    tok_dir: Path,
    out: Path,
    *,
    seed: int,
    tied: bool = True,
    layers: int = 6,
    hidden: int = 64,
    chat_template: str | None = None,
) -> Path:
    """A random Llama over the tokenizer in ``tok_dir`` (one row per token), saved with it."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tok_dir)
    tok.chat_template = chat_template
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        tie_word_embeddings=tied,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # norms away from 1, so that merging them shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.rand_like(p) + 0.5)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def smol_pair(tmp_path_factory, smollm2_tokenizer_dir) -> tuple[Path, Path]:
    """(chat, adapted) on SmolLM2's byte-level BPE: the adapted vocabulary adds 4 tokens (SMOL_MERGES); other seeds."""
    root = tmp_path_factory.mktemp("elchat_smol")
    adapted_tok = expand_tokenizer(smollm2_tokenizer_dir, root / "adapted_tok", SMOL_MERGES)
    chat = random_model(smollm2_tokenizer_dir, root / "chat", seed=0, chat_template=CHAT_TEMPLATE)
    adapted = random_model(adapted_tok, root / "adapted", seed=1, chat_template=None)
    return chat, adapted


@pytest.fixture(scope="module")
def smol_merged(tmp_path_factory, smol_pair) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("elchat_out") / "model"
    report = elchat.run(*smol_pair, out)
    return out, report


def test_only_the_four_named_layers_change(smol_pair, smol_merged):
    chat, adapted = (model_state(p) for p in smol_pair)
    merged = model_state(smol_merged[0])
    rates = {0: 0.3, 1: 0.5, 4: 0.5, 5: 0.3}
    body = [k for k in merged if "embed_tokens" not in k and "lm_head" not in k]
    assert len(body) == 6 * 9 + 1  # 9 tensors a layer (4 attention, 3 MLP, 2 norms) and the final norm
    for name in body:
        layer = int(name.split(".")[2]) if name.startswith("model.layers.") else None
        if layer in rates:
            assert torch.allclose(merged[name], slerp(rates[layer], adapted[name], chat[name]), atol=1e-6), name
            assert not torch.equal(merged[name], chat[name]) and not torch.equal(merged[name], adapted[name]), name
        else:  # the middle layers and the final norm are the chat model's, bit for bit
            assert torch.equal(merged[name], chat[name]), name
    # layer 0 keeps 70 % of the adapted model: it lies closer to it than to the chat model
    q = "model.layers.0.self_attn.q_proj.weight"
    assert (merged[q] - adapted[q]).norm() < (merged[q] - chat[q]).norm()
    report = smol_merged[1]
    assert [(x["layer"], x["rate"], x["tensors"]) for x in report["layers"]] == [
        (0, 0.3, 9),
        (1, 0.5, 9),
        (4, 0.5, 9),
        (5, 0.3, 9),
    ]
    assert report["untouched_layers"] == [2, 3]
    assert all(-1 < x["cos_min"] <= x["cos_max"] < 1 for x in report["layers"])


def test_rows_come_from_the_adapted_model_but_the_special_tokens(smol_pair, smol_merged):
    from transformers import AutoModelForCausalLM

    chat, adapted = (model_state(p) for p in smol_pair)
    merged_dir, report = smol_merged
    merged = model_state(merged_dir)
    emb = "model.embed_tokens.weight"
    assert merged[emb].shape == adapted[emb].shape == (49152 + 4, 64)
    special = [0, 1, 2]  # <|endoftext|>, <|im_start|>, <|im_end|>
    assert report["special_tokens_restored"] == {"0": "<|endoftext|>", "1": "<|im_start|>", "2": "<|im_end|>"}
    others = torch.ones(merged[emb].shape[0], dtype=torch.bool)
    others[special] = False
    assert torch.equal(merged[emb][special], chat[emb][special])
    assert torch.equal(merged[emb][others], adapted[emb][others])  # the 4 new rows included
    assert report["rows_from_adapted"] == 49152 + 4 - 3
    model = AutoModelForCausalLM.from_pretrained(merged_dir)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # still tied
    assert model.config.vocab_size == 49156


def test_the_merged_tokenizer_is_the_adapted_one_with_the_chat_template(smol_pair, smol_merged, thai_lines):
    from transformers import AutoTokenizer

    adapted_tok = AutoTokenizer.from_pretrained(smol_pair[1])
    merged_tok = AutoTokenizer.from_pretrained(smol_merged[0])
    assert adapted_tok.chat_template is None and merged_tok.chat_template == CHAT_TEMPLATE
    assert len(merged_tok) == len(adapted_tok) == 49156
    for line in thai_lines[:20]:
        assert merged_tok.encode(line) == adapted_tok.encode(line)
    assert any(i >= 49152 for line in thai_lines[:20] for i in merged_tok.encode(line))  # new tokens in use
    prompt = merged_tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt == "<chat>hi</chat>>"
    assert merged_tok.eos_token == "<|im_end|>"


def test_untied_models_merge_input_and_output_rows_separately(tmp_path, smollm2_tokenizer_dir):
    adapted_tok = expand_tokenizer(smollm2_tokenizer_dir, tmp_path / "tok", SMOL_MERGES)
    chat_dir = random_model(
        smollm2_tokenizer_dir, tmp_path / "chat", seed=0, tied=False, layers=4, hidden=32, chat_template=CHAT_TEMPLATE
    )
    adapted_dir = random_model(adapted_tok, tmp_path / "adapted", seed=2, tied=False, layers=4, hidden=32)
    elchat.run(chat_dir, adapted_dir, tmp_path / "out")
    chat, adapted, merged = model_state(chat_dir), model_state(adapted_dir), model_state(tmp_path / "out")
    for key in ("model.embed_tokens.weight", "lm_head.weight"):
        assert torch.equal(merged[key][3:], adapted[key][3:]), key
        assert torch.equal(merged[key][:3], chat[key][:3]), key
    assert not torch.equal(merged["lm_head.weight"], merged["model.embed_tokens.weight"])
    # with 4 layers, "-2, -1" are layers 2 and 3: every layer is merged, the final norm is the chat model's
    assert torch.equal(merged["model.norm.weight"], chat["model.norm.weight"])
    assert not torch.equal(merged["model.layers.2.mlp.up_proj.weight"], chat["model.layers.2.mlp.up_proj.weight"])


def test_sentencepiece_family(tmp_path):
    """Llama-2 / Gemma-2 style byte-fallback BPE: <unk> <s> </s> are restored, the new piece's rows are adapted."""
    from transformers import AutoTokenizer

    sp = sentencepiece_source(tmp_path / "sp")
    adapted_tok = expand_tokenizer(sp, tmp_path / "sp_t", [("ก", "า")])
    chat_dir = random_model(sp, tmp_path / "chat", seed=0, layers=4, hidden=32, chat_template=CHAT_TEMPLATE)
    adapted_dir = random_model(adapted_tok, tmp_path / "adapted", seed=3, layers=4, hidden=32)
    report = elchat.run(chat_dir, adapted_dir, tmp_path / "out")
    assert report["special_tokens_restored"] == {"0": "<unk>", "1": "<s>", "2": "</s>"}
    chat, adapted, merged = model_state(chat_dir), model_state(adapted_dir), model_state(tmp_path / "out")
    emb = "model.embed_tokens.weight"
    assert merged[emb].shape[0] == 265
    assert torch.equal(merged[emb][:3], chat[emb][:3]) and torch.equal(merged[emb][3:], adapted[emb][3:])
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert tok.convert_tokens_to_ids("กา") == 264 and 264 in tok.encode("มกา")
    assert tok.chat_template == CHAT_TEMPLATE


def test_models_that_do_not_belong_together_are_refused(tmp_path, smollm2_tokenizer_dir):
    # The small SentencePiece vocabulary (265 tokens) where the check does not look at the vocabulary: the same
    # checks, without loading and saving SmolLM2's 49K-token tokenizer for every model.
    sp = sentencepiece_source(tmp_path / "sp")
    chat = random_model(sp, tmp_path / "chat", seed=0, layers=4, hidden=32, chat_template=CHAT_TEMPLATE)
    cases = {
        "layers": (
            random_model(sp, tmp_path / "l", seed=1, layers=5, hidden=32),
            "num_hidden_layers differs: the chat model has 4, the adapted model 5",
        ),
        "hidden": (
            random_model(sp, tmp_path / "h", seed=1, layers=4, hidden=64),
            "hidden_size differs: the chat model has 32, the adapted model 64",
        ),
        "tied": (
            random_model(sp, tmp_path / "t", seed=1, layers=4, hidden=32, tied=False),
            "embedding tying differs: the chat model is tied, the adapted model untied",
        ),
        "vocab": (
            random_model(smollm2_tokenizer_dir, tmp_path / "v", seed=1, layers=4, hidden=32),
            "the adapted tokenizer does not extend the chat model's vocabulary",
        ),
    }
    for name, (adapted, message) in cases.items():
        with pytest.raises(ElChatError, match=message):
            elchat.run(chat, adapted, tmp_path / f"out_{name}")
        assert not (tmp_path / f"out_{name}").exists(), name
    plain = random_model(sp, tmp_path / "plain", seed=0, layers=4, hidden=32)
    with pytest.raises(ElChatError, match="no chat template"):
        elchat.run(plain, plain, tmp_path / "out_plain")
    with pytest.raises(FileNotFoundError, match=r"--adapted .*\(no config\.json\)"):
        elchat.run(chat, tmp_path / "nothing", tmp_path / "out_missing")
