"""GGUF export of an expanded model with llama.cpp's own converter, and its check in llama.cpp (docs/serving.md).

The model is the tiny random Llama with SmolLM2's byte-level BPE, expanded by hand-picked merges: ก (E0 B8 81),
กา, two partial byte runs, and the Khmer vowel ា (E1 9E B6), which changes the token ids of the converter's
pre-tokenizer probe text. Needs `make llama-cpp` (the converter and llama-cpp-python); marked slow.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SMOL_MERGES, expand_tokenizer, hand_rows, l10n_pairs, snakemake, tiny_config
from workflow_scripts.io import UserError
from workflow_scripts.serve import export as E
from workflow_scripts.serve import fidelity as F
from workflow_scripts.serve import speed as S
from workflow_scripts.speed.measure import Item

pytestmark = pytest.mark.slow

KHMER_AA = ("áŀ", "¶")  # ា = E1 9E B6: SmolLM2 reads it as these two tokens
NEW = ["à¸ģ", "à¸ģà¸²", "ģà¸", "Ġà¸", "áŀ¶"]  # ids 49152..49156, in the order of the merges
SOURCE_VOCAB = 49152


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_llama_dir) -> tuple[Path, Path]:
    """(source, expanded): the tiny Llama and its expansion by five merges, new rows hand-set."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("gguf_models")
    expanded = expand_tokenizer(tiny_llama_dir, root / "expanded", [*SMOL_MERGES, KHMER_AA])
    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    model.resize_token_embeddings(SOURCE_VOCAB + len(NEW), mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight[SOURCE_VOCAB:] = hand_rows(len(NEW), 64, 3, 7) / 100
    model.save_pretrained(expanded)
    return tiny_llama_dir, expanded


def export(model: Path, source: Path, out: Path, *types: str) -> subprocess.CompletedProcess:
    """The rule's command line (a process of its own: the converter's gguf-py must be the first gguf imported)."""
    argv = ["-m", "workflow_scripts.serve.export", "--model", str(model), "--source", str(source)]
    argv += ["--types", *types, "--out-dir", str(out)]
    return subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def ggufs(models, tmp_path_factory) -> Path:
    source, expanded = models
    out = tmp_path_factory.mktemp("gguf")
    done = export(expanded, source, out, "f16", "q8_0")
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def source_gguf(models, tmp_path_factory) -> Path:
    source, _ = models
    out = tmp_path_factory.mktemp("gguf_source")
    done = export(source, source, out, "f16")
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "model.f16.gguf"


def fields(path: Path) -> dict:
    from gguf import GGUFReader

    return {k: f.contents() for k, f in GGUFReader(path).fields.items() if k.startswith("tokenizer.")}


def test_gguf_holds_the_expanded_vocabulary_merges_and_chat_template(models, ggufs):
    _, expanded = models
    for name in ("model.f16.gguf", "model.q8_0.gguf"):
        meta = fields(ggufs / name)
        assert meta["tokenizer.ggml.model"] == "gpt2"
        assert meta["tokenizer.ggml.pre"] == "smollm"  # the Source's name, not a failed probe
        assert len(meta["tokenizer.ggml.tokens"]) == SOURCE_VOCAB + len(NEW)
        assert meta["tokenizer.ggml.tokens"][SOURCE_VOCAB:] == NEW
        assert meta["tokenizer.ggml.token_type"][SOURCE_VOCAB:] == [1] * len(NEW)  # NORMAL: BPE tokens, not added
        assert meta["tokenizer.ggml.merges"][-5:] == ["à¸ ģ", "à¸ģ à¸²", "ģ à¸", "Ġ à¸", "áŀ ¶"]
        assert meta["tokenizer.ggml.token_type"][:3] == [3, 3, 3]  # <|endoftext|>, <|im_start|>, <|im_end|>: CONTROL
        assert (meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"]) == (1, 2)
        assert meta["tokenizer.chat_template"] == (expanded / "chat_template.jinja").read_text(encoding="utf-8")


def test_the_converter_alone_does_not_recognize_the_expanded_pre_tokenizer(models):
    source, expanded = models
    probe = (
        "from transformers import AutoTokenizer\n"
        "from workflow_scripts.serve.converter import detected_pre_name, load_converter\n"
        "load_converter()\n"
        f"print(detected_pre_name(AutoTokenizer.from_pretrained({str(source)!r})))\n"
        "try:\n"
        f"    detected_pre_name(AutoTokenizer.from_pretrained({str(expanded)!r}))\n"
        "except NotImplementedError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["smollm", "BPE pre-tokenizer was not recognized - update get_vocab_base_pre()"]


def test_export_refuses_a_tokenizer_whose_pre_tokenizer_is_not_the_sources(models, tmp_path):
    source, expanded = models
    other = tmp_path / "other"
    shutil.copytree(expanded, other)
    spec = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    spec["pre_tokenizer"]["pretokenizers"] = spec["pre_tokenizer"]["pretokenizers"][1:]  # digits no longer split
    (other / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    done = export(other, source, tmp_path / "out", "f16")
    assert done.returncode == 1
    assert "another normalizer or pre-tokenizer than the source model's" in done.stderr.splitlines()[-1]
    assert not (tmp_path / "out" / "model.f16.gguf").exists()


def test_llama_cpp_tokenizes_as_the_hf_tokenizer(models, ggufs, thai_lines):
    from transformers import AutoTokenizer

    _, expanded = models
    tokenizer = AutoTokenizer.from_pretrained(expanded)
    sentences = thai_lines[:100] + [t for _, t in l10n_pairs("si")][:100] + ["កាន់តែ ក", "Hello, world!"]
    for name in ("model.f16.gguf", "model.q8_0.gguf"):
        llm = F.open_gguf(ggufs / name, vocab_only=True)
        # by hand: new merges apply in their order; " กา" is Ġ + กา since à¸ ģ precedes Ġ à¸
        assert llm.tokenize("ก".encode(), add_bos=False, special=False) == [49152]
        assert llm.tokenize("กา".encode(), add_bos=False, special=False) == [49153]
        assert llm.tokenize(" กา".encode(), add_bos=False, special=False) == [216, 49153]
        assert llm.tokenize("កា".encode(), add_bos=False, special=False) == [40478, 218, 49156]
        assert F.token_mismatches(llm, tokenizer, sentences) == []
    broken = F.token_mismatches(llm, AutoTokenizer.from_pretrained(models[0]), ["กา"])  # the source tokenizer
    assert broken == [{"index": 0, "text": "กา", "llama_cpp": [49153], "transformers": [10283, 219, 43662]}]


def test_greedy_continuations_of_llama_cpp_equal_transformers_in_f16(models, ggufs, thai_lines, tmp_path):
    _, expanded = models
    text = tmp_path / "heldout.txt"
    text.write_text("\n".join(thai_lines[:20]) + "\n", encoding="utf-8")
    out = tmp_path / "fidelity.json"
    argv = ["--gguf", str(ggufs / "model.f16.gguf"), str(ggufs / "model.q8_0.gguf"), "--model", str(expanded)]
    F.main(
        [*argv, "--text", str(text), "--n", "20", "--prompts", "4", "--tokens", "16", "--lang", "th", "--out", str(out)]
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    f16, q8 = result["files"]["model.f16.gguf"], result["files"]["model.q8_0.gguf"]
    assert (f16["sentences"], f16["token_mismatches"], q8["token_mismatches"]) == (20, 0, 0)
    assert f16["greedy_agreeing_tokens"] == [16, 16, 16, 16]
    assert f16["greedy_equal_prompts"] == 4 and f16["greedy_token_agreement"] == 1.0
    assert len(q8["greedy_agreeing_tokens"]) == 4 and 0 <= q8["greedy_token_agreement"] <= 1


def test_agreeing_prefix_counts_leading_equal_tokens():
    assert F.agreeing_prefix([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert F.agreeing_prefix([5], [6]) == 0
    assert F.agreeing_prefix([1, 2], [1, 2]) == 2


def test_export_refuses_an_adapter_folder_and_unknown_types(tmp_path):
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(UserError, match="PEFT adapter"):
        E.export(tmp_path, tmp_path, ["f16"], tmp_path / "out")
    (tmp_path / "adapter_config.json").unlink()
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match=r"export.gguf: unknown type 'q4_k'"):
        E.export(tmp_path, tmp_path, ["f16", "q4_k"], tmp_path / "out")
    with pytest.raises(UserError, match=r"export.gguf q4_0: unknown embeddings type 'q2_k'"):
        E.GgufType.of({"type": "q4_0", "embeddings": "q2_k"})
    with pytest.raises(UserError, match=r"export.gguf f16: embeddings apply to the quantizer's types"):
        E.GgufType.of("f16+emb_q8_0")


def test_serve_speed_pairs_the_cell_with_source_in_llama_cpp_on_the_speed_steps_counts(models, ggufs, source_gguf):
    source, expanded = models
    # by hand: " กา กา" is Ġ กา Ġ กา (4 tokens) for the model, Ġ à¸ ģ à¸² twice (8) for Source; " ก": 2 and 3
    items = [Item("English: cat\nThai:", "กา กา"), Item("English: dog\nThai:", "ก")]
    records = S.measure(ggufs / "model.f16.gguf", source_gguf, expanded, source, items, repeats=2, warmup=1, threads=1)
    by = {r["metric"]: r for r in records}
    assert (by["total_tokens"]["value"], by["total_source_tokens"]["value"], by["model_steps"]["value"]) == (6, 11, 6)
    assert by["token_ratio_bound"]["value"] == 11 / 6
    assert len(by["paired_speedup"]["repeats"]) == 2 and by["paired_speedup"]["value"] > 0
    assert {(r["engine"], r["gguf"], r["mode"]) for r in records} == {("llama.cpp", "f16", "teacher_forced")}
    # a cell on Source's own tokenizer (CPT-only) reads Source's tokens: its bound is 1
    records = S.measure(source_gguf, source_gguf, source, source, items, repeats=1, warmup=0, threads=1)
    by = {r["metric"]: r for r in records}
    assert by["total_tokens"]["value"] == by["total_source_tokens"]["value"] == 11
    assert by["token_ratio_bound"]["value"] == 1.0


def test_llama_cpp_teacher_forcing_predicts_what_greedy_decoding_emits(ggufs):
    llm = F.open_gguf(ggufs / "model.f16.gguf", n_ctx=64)
    greedy = F.greedy_llama_cpp(llm, [14901, 42, 2644], 6)
    forced = S.LlamaCppDecoder(llm).teacher_force([14901, 42, 2644], greedy)
    assert (forced.steps, forced.matches) == (6, 6)  # its own greedy continuation: every argmax matches
    assert forced.seconds > 0 and forced.prefill_seconds > 0


def test_the_schema_allows_the_export_modules_types():
    import yaml

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    plain, kept = schema["properties"]["export"]["properties"]["gguf"]["items"]["oneOf"]
    assert set(plain["enum"]) == set(kept["properties"]["type"]["enum"]) == {*E.CONVERTED, *E.QUANTIZED}
    assert kept["properties"]["embeddings"]["enum"] == list(E.EMBEDDING_TYPES)
    assert E.GgufType.of({"type": "q4_0", "embeddings": "q8_0"}) == E.GgufType.of("q4_0+emb_q8_0")
    assert E.GgufType.of("q4_0+emb_q8_0").name == "q4_0+emb_q8_0" and not E.GgufType.of("q4_0").converted


def test_export_rules_plan_every_non_mumo_cell_and_source(tmp_path):
    config = tiny_config(tmp_path, export={"gguf": ["f16", {"type": "q4_0", "embeddings": "q8_0"}]})
    done = snakemake(["-n", "--configfile", str(config), "--quiet", "rules"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = dict(
        line.split()
        for line in done.stdout.splitlines()
        if line.split()[:1] in (["export_gguf"], ["check_gguf"], ["serve_speed"])
    )
    # configs/test.yaml: Thai; Source, CPT-only, Mean (3 GGUF cells); serve_speed for the two that are not Source
    assert counts == {"export_gguf": "3", "check_gguf": "3", "serve_speed": "2"}
    (tmp_path / "off").mkdir()
    off = snakemake(
        ["-n", "--configfile", str(tiny_config(tmp_path / "off")), "--quiet", "rules"], cwd=tmp_path / "off"
    )
    assert off.returncode == 0 and "export_gguf" not in off.stdout
    (tmp_path / "bad").mkdir()
    bad = tiny_config(tmp_path / "bad", export={"gguf": [{"type": "q4_0", "embeddings": "q2_k"}]})
    refused = snakemake(["-n", "--configfile", str(bad)], cwd=tmp_path / "bad")
    message = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "export" in message and "q2_k" in message, message[-2000:]


@pytest.mark.e2e
def test_the_export_rules_run_on_the_tiny_grid(tmp_path):
    """The tiny grid of configs/test.yaml (Thai) on Source and Mean, up to the export's checks and serving speed
    (CPT-only, trained on Source's tokenizer, runs the same rules; its bound of 1: the serving test above)."""
    methods = [{"init": "none", "procedure": "none"}, {"init": "Mean"}]
    config = tiny_config(tmp_path, methods=methods, export={"gguf": ["f16"], "speed": {"n": 2, "repeats": 1}})
    done = snakemake(["--cores", "2", "--configfile", str(config), "--until", "check_gguf", "serve_speed"], tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    checks = {p.parts[-3]: json.loads(p.read_text()) for p in tmp_path.glob("results/*/*/th/*/gguf/fidelity.json")}
    assert sorted(checks) == ["Mean.k50.2x2LS.clm.L64", "Source"]
    for result in checks.values():
        f16 = result["files"]["model.f16.gguf"]
        assert (f16["token_mismatches"], f16["greedy_agreeing_tokens"]) == (0, [16, 16, 16, 16])
    speeds = {p.parts[-3]: json.loads(p.read_text()) for p in tmp_path.glob("results/*/*/th/*/eval/serve_speed.json")}
    bounds = {
        cell: next(r["value"] for r in s["records"] if r["metric"] == "token_ratio_bound") for cell, s in speeds.items()
    }
    assert set(bounds) == {"Mean.k50.2x2LS.clm.L64"} and bounds["Mean.k50.2x2LS.clm.L64"] > 1  # Source: none to pair
    assert speeds["Mean.k50.2x2LS.clm.L64"]["cell"]["init"] == "Mean"


@pytest.fixture(scope="module")
def untied(models, tmp_path_factory) -> Path:
    """The expanded tiny Llama with an output layer of its own (a copy of the embeddings, the new rows scaled), so
    that the GGUF has both token_embd and output."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    _, expanded = models
    out = tmp_path_factory.mktemp("untied") / "model"
    shutil.copytree(expanded, out)
    config = AutoConfig.from_pretrained(expanded)
    config.tie_word_embeddings = False
    model = AutoModelForCausalLM.from_pretrained(expanded, config=config)
    with torch.no_grad():
        model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.clone())
        model.lm_head.weight[SOURCE_VOCAB:] *= 2
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def quantized(models, untied, tmp_path_factory) -> dict[str, Path]:
    """q4_0 and q4_0 with the embeddings and output kept at q8_0, of the tied and the untied model; f16 only for
    the untied one, so that the tied export quantizes from an f16 file it removes afterwards."""
    source, expanded = models
    out = {"tied": tmp_path_factory.mktemp("q_tied"), "untied": tmp_path_factory.mktemp("q_untied")}
    done = export(expanded, source, out["tied"], "q4_0", "q4_0+emb_q8_0")
    assert done.returncode == 0, done.stderr[-3000:]
    done = export(untied, source, out["untied"], "f16", "q4_0", "q4_0+emb_q8_0")
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def tensor_types(path: Path) -> dict[str, str]:
    from gguf import GGUFReader

    return {t.name: t.tensor_type.name for t in GGUFReader(path).tensors}


def test_quantized_gguf_keeps_token_embeddings_and_output_at_q8_0_and_the_blocks_at_4_bit(quantized):
    assert sorted(p.name for p in quantized["tied"].iterdir()) == ["model.q4_0+emb_q8_0.gguf", "model.q4_0.gguf"]
    for kind in ("tied", "untied"):
        types = tensor_types(quantized[kind] / "model.q4_0+emb_q8_0.gguf")
        blocks = {v for k, v in types.items() if k.startswith("blk.") and k.endswith("weight") and "norm" not in k}
        assert blocks == {"Q4_0"}, kind
        assert types["token_embd.weight"] == "Q8_0", kind
        assert types.get("output.weight") == ("Q8_0" if kind == "untied" else None)  # tied: token_embd is the head
    plain = tensor_types(quantized["untied"] / "model.q4_0.gguf")  # llama.cpp's own choice for a 64-wide model
    assert (plain["token_embd.weight"], plain["output.weight"]) == ("Q4_0", "Q8_0")
    assert F.tensor_types(quantized["untied"] / "model.q4_0+emb_q8_0.gguf") == {
        "token_embd": "q8_0",
        "output": "q8_0",
        "blocks": {"q4_0": 42},
    }


def test_quantized_gguf_keeps_the_expanded_vocabulary(quantized):
    for name in ("model.q4_0.gguf", "model.q4_0+emb_q8_0.gguf"):
        meta = fields(quantized["untied"] / name)
        assert meta["tokenizer.ggml.tokens"][SOURCE_VOCAB:] == NEW and meta["tokenizer.ggml.pre"] == "smollm"


def test_greedy_agreement_is_reported_for_plain_and_kept_embeddings(untied, quantized, thai_lines, tmp_path):
    text = tmp_path / "heldout.txt"
    text.write_text("\n".join(thai_lines[:8]) + "\n", encoding="utf-8")
    out = tmp_path / "fidelity.json"
    files = [quantized["untied"] / f"model.{t}.gguf" for t in ("f16", "q4_0", "q4_0+emb_q8_0")]
    F.main(
        [
            "--gguf",
            *map(str, files),
            "--model",
            str(untied),
            "--text",
            str(text),
            "--n",
            "8",
            "--prompts",
            "4",
            "--tokens",
            "8",
            "--lang",
            "th",
            "--out",
            str(out),
        ]
    )
    result = json.loads(out.read_text(encoding="utf-8"))["files"]
    assert [r["gguf"] for r in result.values()] == ["f16", "q4_0", "q4_0+emb_q8_0"]
    assert result["model.f16.gguf"]["greedy_token_agreement"] == 1.0
    for name in ("model.q4_0.gguf", "model.q4_0+emb_q8_0.gguf"):  # measured, not ranked (docs/measurements.md)
        assert 0 <= result[name]["greedy_token_agreement"] <= 1 and result[name]["token_mismatches"] == 0
    assert result["model.q4_0+emb_q8_0.gguf"]["tensor_types"]["token_embd"] == "q8_0"


def test_quantize_params_set_the_file_type_and_the_embeddings_type():
    llama_cpp = F.llama_cpp()
    params = E.quantize_params(E.GgufType.of({"type": "q4_k_m", "embeddings": "q8_0"}), llama_cpp, threads=2)
    assert (params.ftype, params.nthread) == (llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M, 2)
    assert params.token_embedding_type == params.output_tensor_type == llama_cpp.GGML_TYPE_Q8_0
    plain = E.quantize_params(E.GgufType.of("q4_0"), llama_cpp)
    default = llama_cpp.llama_model_quantize_default_params()
    assert (plain.token_embedding_type, plain.output_tensor_type) == (
        default.token_embedding_type,
        default.output_tensor_type,
    )
    # every name the schema allows has its llama.cpp constant
    assert all(hasattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{name.upper()}") for name in E.QUANTIZED)
    assert all(hasattr(llama_cpp, f"GGML_TYPE_{name.upper()}") for name in E.EMBEDDING_TYPES)
