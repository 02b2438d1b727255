"""Token Distillation (workflow_scripts/initialize/methods/token_distillation.py): its loss and gradient against a
small independent implementation of the paper's objective on an expanded model, and what the distillation achieves,
on both tokenizer families."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from transformers import AutoTokenizer

from tests.conftest import SMOL_MERGES, expand_tokenizer, hand_rows, load, rows, sentencepiece_source, tiny_model
from workflow_scripts.initialize import initialize_model
from workflow_scripts.initialize.methods.token_distillation import TOKDIST_DEFAULTS, hidden_state_mse, token_snippets
from workflow_scripts.initialize.registry import METHOD_SPECS, InitContext
from workflow_scripts.initialize.tokens import find_new_tokens

SMALL = {"snippets_per_token": 4, "snippet_len": 12, "batch_size": 4, "lr": 3e-3, "epochs": 4}


def reference_loss(model, examples: list[tuple[list[int], list[int], int]], new_rows: dict[int, torch.Tensor]):
    """The paper's objective, written out: the model expanded with the new rows (real new ids), run on the old split
    and on the split with the token's spelling merged; the MSE of the last hidden states at every position of the
    new split against the old split's position it stands for (a merged token: its spelling's last subword).

    ``examples``: (old split, the token's spelling, its new id). Returns (loss, the expanded embedding matrix).
    """
    big = copy.deepcopy(model)
    big.resize_token_embeddings(max(new_rows) + 1, mean_resizing=False)
    weight = big.get_input_embeddings().weight
    with torch.no_grad():
        for i, row in new_rows.items():
            weight[i] = row
    diffs = []
    for old, spelling, new_id in examples:
        new, stands_for, j = [], [], 0
        while j < len(old):
            if old[j : j + len(spelling)] == spelling:
                new.append(new_id)
                stands_for.append(j + len(spelling) - 1)
                j += len(spelling)
            else:
                new.append(old[j])
                stands_for.append(j)
                j += 1
        with torch.no_grad():
            h_old = big(torch.tensor([old]), output_hidden_states=True).hidden_states[-1][0]
        h_new = big(torch.tensor([new]), output_hidden_states=True).hidden_states[-1][0]
        diffs.append(h_new - h_old[stands_for])
    return torch.cat(diffs).pow(2).mean(), weight


def context(model, src_tok, tgt_tok, corpus: list[str]) -> InitContext:
    tokens = find_new_tokens(src_tok, tgt_tok)
    source_ids = sorted(src_tok.get_vocab().values())
    return InitContext(src_tok, tgt_tok, source_ids, tokens, 0, True, {"corpus": corpus})


def examples_of(ctx: InitContext, snippets) -> list[tuple[list[int], list[int], int]]:
    return [(s.teacher, ctx.subwords(ctx.new_tokens[s.row])[0], ctx.new_tokens[s.row].id) for s in snippets]


@pytest.fixture(scope="module")
def smol(tiny_llama_dir, smollm2_tokenizer_dir, tmp_path_factory, thai_lines) -> dict:
    tgt_dir = expand_tokenizer(smollm2_tokenizer_dir, tmp_path_factory.mktemp("tokdist") / "tgt", SMOL_MERGES)
    model, src_tok = load(tiny_llama_dir)
    return {"model": model, "src": src_tok, "tgt": AutoTokenizer.from_pretrained(tgt_dir), "corpus": thai_lines[:60]}


def test_loss_and_gradient_match_the_papers_objective(smol, one_thread):
    torch.manual_seed(0)
    model = smol["model"]
    ctx = context(model, smol["src"], smol["tgt"], smol["corpus"])
    snippets = token_snippets(ctx, 3, 10)
    assert snippets and all(len(s.teacher) <= 10 for s in snippets)
    for s in snippets:  # each snippet holds its token's spelling; the student merges it
        assert ctx.new_tokens[s.row].id in s.student and sum(s.keep) == len(s.student)
    new_ids = [t.id for t in ctx.new_tokens]
    start = torch.randn(len(new_ids), model.config.hidden_size) * 0.1
    trained = torch.nn.Parameter(start.clone())
    loss = hidden_state_mse(model, snippets, trained, new_ids)
    loss.backward()
    ref, weight = reference_loss(model, examples_of(ctx, snippets), dict(zip(new_ids, start, strict=True)))
    ref.backward()
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5) and float(ref.detach()) > 0
    assert torch.allclose(trained.grad, weight.grad[new_ids], rtol=1e-4, atol=1e-9)
    assert trained.grad.abs().sum() > 0


def test_distillation_lowers_the_hidden_state_mse_below_means(smol, one_thread):
    model = copy.deepcopy(smol["model"])
    source_emb = rows(model)[0].clone()
    resources = {"corpus": smol["corpus"], "options": SMALL}
    initialize_model(model, smol["src"], smol["tgt"], "Mean", 0, 1, dict(resources))
    mean_rows = rows(model)[0][49152:].clone()
    model = copy.deepcopy(smol["model"])
    report = initialize_model(model, smol["src"], smol["tgt"], "TokenDistillation", 0, 1, dict(resources))
    got = rows(model)[0]
    assert torch.equal(got[:49152], source_emb) and torch.isfinite(got).all()
    ctx = context(smol["model"], smol["src"], smol["tgt"], smol["corpus"])
    snippets = token_snippets(ctx, SMALL["snippets_per_token"], SMALL["snippet_len"])  # the ones it trained on
    examples, new_ids = examples_of(ctx, snippets), [t.id for t in ctx.new_tokens]
    before, _ = reference_loss(smol["model"], examples, dict(zip(new_ids, mean_rows, strict=True)))
    after, _ = reference_loss(smol["model"], examples, dict(zip(new_ids, got[49152:], strict=True)))
    assert float(after.detach()) < 0.9 * float(before.detach())
    stats = report["method_stats"]["token_distillation"]
    distilled = {r["id"] for r in report["tokens"] if r["rule"] == "token_distillation"}
    assert stats["snippets"] == len(snippets) and stats["tokens_distilled"] == len(distilled) >= 2
    assert stats["steps"] == SMALL["epochs"] * -(-len(snippets) // SMALL["batch_size"])
    for r in report["tokens"]:  # rows without a snippet stay Mean's
        if r["id"] not in distilled:
            assert r["fallback"] == "no_snippets" and torch.equal(got[r["id"]], mean_rows[r["id"] - 49152])
        else:
            assert not torch.equal(got[r["id"]], mean_rows[r["id"] - 49152])
    assert METHOD_SPECS["TokenDistillation"].needs_model and not METHOD_SPECS["Mean"].needs_model
    assert TOKDIST_DEFAULTS == {"snippets_per_token": 100, "snippet_len": 50, "batch_size": 16, "lr": 1e-4, "epochs": 1}


def test_sentencepiece_style_untied_head_gets_mean(tmp_path, one_thread):
    src_tok = sentencepiece_source(tmp_path / "src_tok")
    tgt_dir = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า"), ("ก", "า")])  # ▁กา 264, กา 265
    emb, head = hand_rows(264, 8, 2, 23) / 20, hand_rows(264, 8, 3, 19) / 20
    model, src = load(tiny_model(src_tok, tmp_path / "src_model", emb, head))
    tgt = AutoTokenizer.from_pretrained(tgt_dir)
    corpus = ["กา มากา", "มา กา", "กากา มา"] * 4
    pristine = copy.deepcopy(model)
    resources = {"corpus": corpus, "options": SMALL}
    report = initialize_model(model, src, tgt, "TokenDistillation", 0, 1, resources)
    got_emb, got_head = rows(model)
    again = copy.deepcopy(pristine)  # deterministic: the same seed gives the same rows
    initialize_model(again, src, tgt, "TokenDistillation", 0, 1, resources)
    assert torch.equal(rows(again)[0], got_emb)
    spellings = {264: [263, 261], 265: [260, 261]}  # ▁ก | า and ก | า
    for new_id, ids in spellings.items():
        assert torch.allclose(got_head[new_id].double(), head[ids].double().mean(0), atol=1e-6)  # Mean's head row
    ctx = context(pristine, src, tgt, corpus)
    snippets = token_snippets(ctx, SMALL["snippets_per_token"], SMALL["snippet_len"])
    assert {ctx.new_tokens[s.row].id for s in snippets} == {264, 265}
    examples = examples_of(ctx, snippets)
    mean_rows = {i: emb[ids].mean(0) for i, ids in spellings.items()}
    before, _ = reference_loss(pristine, examples, mean_rows)
    after, _ = reference_loss(pristine, examples, {i: got_emb[i] for i in spellings})
    assert float(after.detach()) < float(before.detach())
    for r in report["tokens"]:
        assert r["input"]["rule"] == "token_distillation" and r["output"]["rule"] == "mean_of_source_subwords"


def test_settings_are_checked_against_the_methods_defaults():
    from workflow_scripts.initialize import method_options

    assert method_options("TokenDistillation", {"snippets_per_token": 10, "lr": 1}) == {
        **TOKDIST_DEFAULTS,
        "snippets_per_token": 10,
        "lr": 1,
    }
    assert method_options("Mean", None) == {} and method_options("TokenDistillation", {}) == TOKDIST_DEFAULTS
    with pytest.raises(ValueError, match=r"initialization.TokenDistillation: no setting 'snippets'; its settings: \["):
        method_options("TokenDistillation", {"snippets": 10})
    with pytest.raises(ValueError, match=r"initialization.Mean: no setting 'k'; it has none"):
        method_options("Mean", {"k": 1})
    with pytest.raises(ValueError, match=r"snippets_per_token: 2.5 is not a int \(default 100\)"):
        method_options("TokenDistillation", {"snippets_per_token": 2.5})
    with pytest.raises(ValueError, match=r"epochs: 0 must be above 0"):
        method_options("TokenDistillation", {"epochs": 0})
    with pytest.raises(ValueError, match=r"'Distill' is not a registered method"):
        method_options("Distill", {})


def test_the_command_line_passes_the_settings_on(smol, tmp_path, monkeypatch, one_thread):
    """--method-options reaches the method (its snippets per token, in the report's statistics); a bad setting is a
    usage error before any work."""
    from workflow_scripts.initialize.__main__ import main

    smol["model"].save_pretrained(tmp_path / "src")
    smol["src"].save_pretrained(tmp_path / "src")
    smol["tgt"].save_pretrained(tmp_path / "tgt")
    (tmp_path / "d.txt").write_text("\n".join(smol["corpus"]) + "\n", encoding="utf-8")
    argv = [
        "--source-model",
        str(tmp_path / "src"),
        "--target-tokenizer",
        str(tmp_path / "tgt"),
        "--corpus",
        str(tmp_path / "d.txt"),
        "--method",
        "TokenDistillation",
        "--seed",
        "0",
    ]
    with pytest.raises(SystemExit) as bad:
        main([*argv, "--method-options", '{"snippets": 3}', "--out", str(tmp_path / "x"), "--report", "r.json"])
    assert bad.value.code == 2 and not (tmp_path / "x").exists()
    settings = json.dumps({**SMALL, "snippets_per_token": 2})
    main([*argv, "--method-options", settings, "--out", str(tmp_path / "m"), "--report", str(tmp_path / "r.json")])
    stats = json.loads((tmp_path / "r.json").read_text())["method_stats"]["token_distillation"]
    distilled = sum(
        1 for r in json.loads((tmp_path / "r.json").read_text())["tokens"] if r["rule"] == "token_distillation"
    )
    assert 0 < stats["snippets"] <= 2 * distilled


def test_a_config_with_settings_initializes_that_method_by_the_rule_that_passes_them(tmp_path):
    """initialization.TokenDistillation: its cells' initialize job passes the settings; Mean's keeps the plain rule
    (a finished Mean cell is not replanned); a setting the method lacks stops planning, naming it."""
    from tests.conftest import planned_jobs, snakemake, tiny_config

    methods = [{"init": "none", "procedure": "none"}, {"init": "Mean"}, {"init": "TokenDistillation"}]
    path = tiny_config(tmp_path, methods=methods, initialization={"TokenDistillation": {"snippets_per_token": 10}})
    result = snakemake(
        ["-n", "-p", "--cores", "1", "--configfile", str(path), "--until", "initialize", "initialize_configured"],
        tmp_path,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    jobs = planned_jobs(out)
    assert jobs["initialize"] == jobs["initialize_configured"] > 0
    configured = [line for line in out.splitlines() if "--method-options" in line]
    assert configured and all("--method TokenDistillation" in line for line in configured)
    assert all("'{\"snippets_per_token\": 10}'" in line for line in configured)
    bad = tiny_config(tmp_path, methods=methods, initialization={"TokenDistillation": {"snippet": 10}})
    refused = snakemake(["-n", "--cores", "1", "--configfile", str(bad)], tmp_path)
    assert refused.returncode != 0
    assert "initialization.TokenDistillation: no setting 'snippet'" in refused.stdout + refused.stderr
