"""OMP (workflow_scripts/initialize/methods/omp.py): the pursuit on a dictionary where its picks and weights are known
by hand, and the method on both tokenizer families with hand-built rows."""

from __future__ import annotations

import math
from pathlib import Path

import torch
from transformers import AutoTokenizer

from tests.conftest import (
    byte_level_bos_source,
    expand_tokenizer,
    hand_rows,
    load,
    rows,
    sentencepiece_source,
    tiny_model,
)
from workflow_scripts.initialize import initialize_model
from workflow_scripts.initialize.methods.omp import OMP_DEFAULTS, omp


def test_omp_picks_and_weights_by_hand():
    # Atoms e0, e1, e2 and a = (0.8, 0.6, 0). Target y = (2, 1, 0): |cos| with a is 2.2 > 2 (e0), so a first; the
    # residual y - 2.2 a = (0.24, -0.32, 0) correlates most with e1 (0.32 > 0.24). Least squares over {a, e1}:
    # y = 2.5 a - 0.5 e1 exactly, and the pursuit stops with two atoms although k is 3.
    atoms = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0.8, 0.6, 0]], dtype=torch.float64)
    y = torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64)
    [(picked, weights, residual)] = omp(y, atoms, k=3)
    assert picked == [3, 1]
    assert torch.allclose(weights, torch.tensor([2.5, -0.5], dtype=torch.float64), atol=1e-12)
    assert residual < 1e-12
    # k caps the atoms: one atom leaves the residual (0.24, -0.32, 0), of norm 0.4, over ||y|| = √5.
    [(picked, weights, residual)] = omp(y, atoms, k=1)
    assert picked == [3] and math.isclose(float(weights[0]), 2.2, rel_tol=1e-12)
    assert math.isclose(residual, 0.4 / math.sqrt(5), rel_tol=1e-12)
    # Correlation, not inner product: a long atom does not win by its length (5 e0 loses to the unit a).
    [(picked, _, _)] = omp(y, atoms * torch.tensor([[5.0], [1], [1], [1]], dtype=torch.float64), k=1)
    assert picked == [3]
    assert OMP_DEFAULTS["k"] == 64  # tokensurgeon's default


def byte_level_case(root: Path) -> tuple[Path, Path]:
    """Byte-level BPE: bytes at 0..255, "à¸" (E0 B8) 256, BOS 257 before every sentence. New: 258 ก (à¸ ģ),
    259 ก + E0 B8 (à¸ ģ à¸)."""
    src = byte_level_bos_source(root / "src_tok")
    return src, expand_tokenizer(src, root / "tgt_tok", [("à¸", "ģ"), ("à¸ģ", "à¸")])


def test_omp_on_byte_level_bpe(tmp_path):
    src_tok, tgt_tok = byte_level_case(tmp_path)
    # Orthonormal rows (e_i, padded to an even width), except "A" (65) = 0.6 e_129 + 0.8 e_256, near the direction
    # of both new tokens' Mean rows; the BOS row (special) lies on it too but is no atom.
    emb = torch.zeros(258, 260)
    emb[:, :258] = torch.eye(258)
    emb[65] = 0
    emb[65, 129], emb[65, 256] = 0.6, 0.8
    emb[257] = emb[65] * 10
    head = hand_rows(258, 260, 3, 29)
    model, src = load(tiny_model(src_tok, tmp_path / "src_model", emb, head))
    report = initialize_model(model, src, AutoTokenizer.from_pretrained(tgt_tok), "OMP", 0)
    got_emb, got_head = rows(model)
    # 258: y = (e_129 + e_256)/2: A first (cos 0.7 > 0.5); residual 0.08 e_129 - 0.06 e_256: e_129; least squares:
    #      y = 0.625 A + 0.125 e_129.
    # 259: y = (e_129 + 2 e_256)/3: A first (cos 2.2/3 > 2/3); residual -0.1067 e_129 + 0.08 e_256: e_129;
    #      y = (5/6) A - (1/6) e_129 (a negative weight).
    # The head rows take the same weights on the same tokens' head rows.
    plans = {258: {65: 0.625, 129: 0.125}, 259: {65: 5 / 6, 129: -1 / 6}}
    by_id = {rec["id"]: rec for rec in report["tokens"]}
    for new_id, plan in plans.items():
        rec = by_id[new_id]
        assert {i: w for i, w in rec["top"]} == {i: round(w, 4) for i, w in plan.items()}
        assert rec["atoms"] == len(plan) and rec["relative_residual"] < 1e-12 and rec["fallback"] is None
        expected_emb = sum(w * emb[i].double() for i, w in plan.items())
        expected_head = sum(w * head[i].double() for i, w in plan.items())
        assert torch.allclose(got_emb[new_id].double(), expected_emb, atol=1e-6)
        assert torch.allclose(got_head[new_id].double(), expected_head, atol=1e-5)
    # The input rows are Mean's (exact reconstruction); the head rows are not.
    assert torch.allclose(got_emb[259].double(), (2 * emb[256] + emb[129]).double() / 3, atol=1e-6)
    assert not torch.allclose(got_head[259].double(), (2 * head[256] + head[129]).double() / 3, atol=1e-2)
    assert report["differs_from_mean"]["output"]["rows"] == 2 and report["differs_from_mean"]["input"]["rows"] == 0
    assert report["method_stats"]["omp"]["k"] == 64 and report["method_stats"]["omp"]["dictionary_rows"] == 257


def test_omp_on_sentencepiece_style(tmp_path):
    src_tok = sentencepiece_source(tmp_path / "src_tok")
    # New: ▁กา (264) = ▁ก | า, กา (265) = ก | า.
    tgt_tok = expand_tokenizer(src_tok, tmp_path / "tgt_tok", [("▁ก", "า"), ("ก", "า")])
    # Orthogonal rows of distinct lengths: the pursuit picks exactly the subwords (the longer one first) with Mean's
    # weights, so both matrices get Mean's rows; a tied model has one matrix.
    emb = torch.diag(1 + torch.arange(264, dtype=torch.float32) / 100)
    model, src = load(tiny_model(src_tok, tmp_path / "src_model", emb, None))
    tgt = AutoTokenizer.from_pretrained(tgt_tok)
    report = initialize_model(model, src, tgt, "OMP", 0, 1, {"omp_options": {"k": 8}})
    got, _ = rows(model)
    for new_id, (a, b) in {264: (263, 261), 265: (261, 260)}.items():
        rec = next(r for r in report["tokens"] if r["id"] == new_id)
        assert rec["top"] == [[a, 0.5], [b, 0.5]] and rec["atoms"] == 2  # a: the longer row, picked first
        assert torch.allclose(got[new_id].double(), (emb[a] + emb[b]).double() / 2, atol=1e-6)
    assert report["tied"] and report["method_stats"]["omp"] == {**report["method_stats"]["omp"], "k": 8}
