"""BLEURT (paper 002 Table 8) through workflow_scripts/bleurt.py on tiny randomly initialized models of BLEURT's
architecture: the encoding of Google's bleurt, one score per pair, the same numbers as transformers' BERT for the same
weights, the port's weight names, and predictions TSV -> bleurt JSON -> results table -> Table 8's BLEURT column."""

from __future__ import annotations

import io
import json

import pytest
import torch

from workflow_scripts import bleurt, tables
from workflow_scripts.paper.cells import fill
from workflow_scripts.paper.specs import TABLES_BY_NAME
from workflow_scripts.sum_assets import bleurt_folder_problems, hub_asset_problems

LINES = ["แมวกินปลา", "แมวกินข้าว", "මම ගෙදර යනවා.", "මම පාසල් යනවා", "a bird chirps by the window", "ఇది ఒక వాక్యం"]


@pytest.fixture(scope="module")
def spm_file(tmp_path_factory):
    """A SentencePiece model with BLEURT's special pieces, trained on a few lines."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 10),
        model_writer=model,
        vocab_size=90,
        hard_vocab_limit=False,
        model_type="unigram",
        character_coverage=1.0,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        pad_piece="[PAD]",
        unk_piece="[UNK]",
        minloglevel=2,
    )
    path = tmp_path_factory.mktemp("bleurt_spm") / "spm.model"
    path.write_bytes(model.getvalue())
    return path


def tiny(vocab_size: int, embedding_size: int | None = 16, gelu: str = "tanh") -> bleurt.BleurtRegressor:
    torch.manual_seed(0)
    config = bleurt.BleurtConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        embedding_size=embedding_size,
        max_seq_length=24,
    )
    model = bleurt.BleurtRegressor(config, gelu)
    with torch.no_grad():  # spread the parameters so that scores differ between pairs
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model.eval()


@pytest.fixture(scope="module")
def tiny_folder(spm_file, tmp_path_factory):
    import sentencepiece as spm

    vocab = spm.SentencePieceProcessor(model_file=str(spm_file)).get_piece_size()
    return bleurt.save_bleurt(tiny(vocab), spm_file, tmp_path_factory.mktemp("bleurt") / "BLEURT-tiny")


def test_encoding_follows_googles_bleurt(spm_file):
    tok = bleurt.BleurtTokenizer(spm_file, max_seq_length=12)
    ref, cand = tok.sp.encode("แมวกินปลา"), tok.sp.encode("මම පාසල් යනවා")
    ids, segments = tok.encode("แมวกินปลา", "මම පාසල් යනවා")
    if len(ref) + len(cand) <= 9:
        pytest.skip("pieces too short to truncate")
    # truncated to 12 - 3 pieces, always from the longer side's end (bleurt/encoding.py _truncate_seq_pair)
    r, c = list(ref), list(cand)
    while len(r) + len(c) > 9:
        (r if len(r) > len(c) else c).pop()
    assert ids == [tok.cls, *r, tok.sep, *c, tok.sep]
    assert segments == [0] * (len(r) + 2) + [1] * (len(c) + 1)
    assert len(ids) == 12 and tok.cls != tok.sep


def test_a_tokenizer_without_cls_is_refused(tmp_path):
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 10), model_writer=model, vocab_size=90, hard_vocab_limit=False, minloglevel=2
    )
    (tmp_path / "spm.model").write_bytes(model.getvalue())
    with pytest.raises(ValueError, match=r"no \[CLS\] piece"):
        bleurt.BleurtTokenizer(tmp_path / "spm.model")


def test_one_score_per_pair_whatever_the_batching(tiny_folder):
    model, tok = bleurt.load_bleurt(tiny_folder)
    refs = ["แมวกินปลา", "මම පාසල් යනවා", "a bird chirps by the window", "ఇది ఒక వాక్యం"]
    cands = ["แมวกินข้าว", "මම ගෙදර යනවා.", "a bird chirps by the window", "ఇది"]
    scores = bleurt.score_pairs(model, tok, refs, cands, batch_size=3)
    assert len(scores) == 4 and all(isinstance(s, float) and s == s for s in scores)
    assert len({round(s, 6) for s in scores}) == 4  # the pairs are told apart
    # padding is masked: each pair scored alone gives the same number
    for i in range(4):
        assert bleurt.score_pairs(model, tok, [refs[i]], [cands[i]])[0] == pytest.approx(scores[i], abs=1e-5)
    with pytest.raises(ValueError, match="references"):
        bleurt.score_pairs(model, tok, refs, cands[:2])


@pytest.mark.slow  # transformers' BERT imports in about 10 s
def test_same_numbers_as_transformers_bert_and_rembert_and_the_ports_weight_names(spm_file):
    """Without an embedding projection BLEURT is BERT with a regression head, with one (BLEURT-20) RemBERT's: the
    port's weight names under ``bleurt.`` map onto transformers' BertForSequenceClassification and
    RemBertForSequenceClassification, and the tanh GELU is their gelu_new."""
    import sentencepiece as spm
    from transformers import BertConfig, BertForSequenceClassification

    vocab = spm.SentencePieceProcessor(model_file=str(spm_file)).get_piece_size()
    ours = tiny(vocab, embedding_size=None)
    c = ours.config
    bert = BertForSequenceClassification(
        BertConfig(
            vocab_size=vocab,
            hidden_size=c.hidden_size,
            num_hidden_layers=c.num_hidden_layers,
            num_attention_heads=c.num_attention_heads,
            intermediate_size=c.intermediate_size,
            hidden_act="gelu_new",
            max_position_embeddings=c.max_position_embeddings,
            num_labels=1,
            layer_norm_eps=c.layer_norm_eps,
        )
    ).eval()
    state = {k.replace("bleurt.", "bert.", 1): v for k, v in ours.state_dict().items()}
    missing, unexpected = bert.load_state_dict(state, strict=False)
    assert not unexpected and all("position_ids" in k or "token_type_ids" in k for k in missing)
    tok = bleurt.BleurtTokenizer(spm_file, c.max_seq_length)
    batch = tok.batch(["แมวกินปลา", "මම පාසල් යනවා"], ["แมวกินข้าว", "මම"])
    with torch.no_grad():
        assert torch.allclose(ours(**batch), bert(**batch).logits[:, 0], atol=1e-5)
    # with an embedding projection: RemBERT (its embedding_hidden_mapping_in is the port's embedding_projection)
    from transformers import RemBertConfig, RemBertForSequenceClassification

    projected = tiny(vocab, embedding_size=16)
    rembert = RemBertForSequenceClassification(
        RemBertConfig(
            vocab_size=vocab,
            hidden_size=c.hidden_size,
            num_hidden_layers=c.num_hidden_layers,
            num_attention_heads=c.num_attention_heads,
            intermediate_size=c.intermediate_size,
            hidden_act="gelu_new",
            max_position_embeddings=c.max_position_embeddings,
            input_embedding_size=16,
            output_embedding_size=16,
            num_labels=1,
            layer_norm_eps=c.layer_norm_eps,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
        )
    ).eval()
    mapping = ("encoder.embedding_projection", "encoder.embedding_hidden_mapping_in")
    renamed = {k.replace("bleurt.", "rembert.", 1).replace(*mapping): v for k, v in projected.state_dict().items()}
    missing, unexpected = rembert.load_state_dict(renamed, strict=False)
    assert not unexpected and all("position_ids" in k or "token_type_ids" in k for k in missing)
    with torch.no_grad():
        assert torch.allclose(projected(**batch), rembert(**batch).logits[:, 0], atol=1e-5)
    # the port's config.json names the exact GELU: a different (close) number, as the port computes it
    exact = bleurt.BleurtRegressor(c, gelu="exact").eval()
    exact.load_state_dict(ours.state_dict())
    with torch.no_grad():
        assert not torch.allclose(ours(**batch), exact(**batch), atol=1e-7)


def test_folder_checks(tiny_folder, tmp_path):
    assert bleurt_folder_problems(tiny_folder) == []
    assert hub_asset_problems({"bleurt": str(tiny_folder)}) == []
    assert hub_asset_problems({"bleurt": "lucadiliello/BLEURT-20-D12"}) == []
    (problem,) = hub_asset_problems({"bleurt": str(tmp_path)})
    assert problem.startswith("evaluation.sum.bleurt:") and "config.json" in problem
    with pytest.raises(FileNotFoundError, match=r"evaluation\.sum\.bleurt"):
        bleurt.load_bleurt(tmp_path)


def write_sum_fixture(folder, lang="si", label="Source", method="source", rows=None, unavailable=None):
    """A cell's sum.json (two runs, seeds 42 and 43) and sum_predictions.tsv as the harness writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    cell = {"model": "smollm2", "language": lang, "method": method, "label": label}
    records = (
        []
        if unavailable
        else [{"task": "sum", "metric": "rougeL_script", "value": 10.0 + r, "run": r, "seed": 42 + r} for r in (0, 1)]
    )
    details = {"task": "sum", "unavailable": unavailable} if unavailable else {"task": "sum", "runs": 2}
    (folder / "sum.json").write_text(json.dumps({"cell": cell, "records": records, "details": details}))
    lines = ["run\tid\treference\thypothesis", *(rows or [])]
    (folder / "sum_predictions.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_command_fills_table8s_bleurt_column(tiny_folder, tmp_path):
    pairs = [("මම පාසල් යනවා", "මම ගෙදර යනවා."), ("ඔහු ගෙදර යනවා", "ඔහු යනවා"), ("මම ගෙදර යනවා.", '"මම" ගෙදර')]
    rows = [f"{run}\t{i}\t{ref}\t{hyp if run == 0 else ref}" for run in (0, 1) for i, (ref, hyp) in enumerate(pairs)]
    cell = write_sum_fixture(tmp_path / "si", rows=rows)
    out = cell / "sum_bleurt.json"
    bleurt.main(
        [
            "--model",
            str(tiny_folder),
            "--predictions",
            str(cell / "sum_predictions.tsv"),
            "--sum-result",
            str(cell / "sum.json"),
            "--out",
            str(out),
            "--items",
            str(cell / "items.tsv"),
            "--batch-size",
            "2",
        ]
    )
    result = json.loads(out.read_text())
    assert result["cell"]["method"] == "source"
    assert [(r["metric"], r["run"], r["seed"]) for r in result["records"]] == [("bleurt", 0, 42), ("bleurt", 1, 43)]
    items = [line.split("\t") for line in (cell / "items.tsv").read_text().splitlines()[1:]]
    assert len(items) == 6
    # each run's record is the mean of its items
    model, tok = bleurt.load_bleurt(tiny_folder)
    run0 = bleurt.score_pairs(model, tok, [r for r, _ in pairs], [h for _, h in pairs])
    assert result["records"][0]["value"] == pytest.approx(sum(run0) / 3, abs=1e-5)
    assert [float(x[2]) for x in items[:3]] == pytest.approx(run0, abs=1e-5)
    # a language without sum data: no records, and why
    other = write_sum_fixture(tmp_path / "te", lang="te", unavailable="no te subset")
    bleurt.main(
        [
            "--model",
            str(tiny_folder),
            "--predictions",
            str(other / "sum_predictions.tsv"),
            "--sum-result",
            str(other / "sum.json"),
            "--out",
            str(other / "sum_bleurt.json"),
        ]
    )
    assert json.loads((other / "sum_bleurt.json").read_text())["records"] == []
    # -> results table -> Table 8 (smollm2 stands in for Llama2): both columns of the Source row, mean ± sd over runs
    frame, md = tables.build_tables([cell / "sum.json", out, other / "sum.json", other / "sum_bleurt.json"])
    assert "summarization BLEURT" in md
    filled = fill(TABLES_BY_NAME["table8"], frame)
    entry = filled.cell("llama2", "Source", "si", "BLEURT")
    values = [r["value"] for r in result["records"]]
    assert entry.status == "ok" and entry.n == 2 and entry.mean == pytest.approx(sum(values) / 2)
    assert filled.cell("llama2", "Source", "si", "ROUGE-L").text == "10 ± 1"
    assert filled.cell("llama2", "Source", "te", "BLEURT").text == "–"
    assert any("Source, summarization BLEURT: no result for" in n and "Telugu" in n for n in filled.notes), filled.notes


def serve_hub(repos: dict[str, dict[str, bytes]]):
    """A local HTTP server in the hub's URL layout (model info, file tree, resolve) for ``repos``."""
    import hashlib
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    commit = "0123456789abcdef0123456789abcdef01234567"

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body: bytes, head: bool, **headers: str) -> None:
            self.send_response(200)
            for key, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def answer(self, head: bool) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts[0] == "api":  # /api/models/{owner}/{name}/revision/{rev} and .../tree/{sha}
                files = repos.get("/".join(parts[2:4]))
                if files is None or len(parts) < 5:
                    return self.send_error(404)
                if parts[4] == "tree":
                    tree = [
                        {"type": "file", "path": f, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                        for f, d in files.items()
                    ]
                    return self.reply(json.dumps(tree).encode(), head)
                info = {"id": "/".join(parts[2:4]), "sha": commit, "siblings": [{"rfilename": f} for f in files]}
                return self.reply(json.dumps(info).encode(), head)
            data = repos.get("/".join(parts[:2]), {}).get("/".join(parts[4:]))  # /{owner}/{name}/resolve/{rev}/{file}
            if data is None:
                return self.send_error(404)
            self.reply(data, head, **{"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})

        def do_HEAD(self):
            self.answer(True)

        def do_GET(self):
            self.answer(False)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server


def test_download_rules_fetch_from_a_hub_layout(tiny_folder, spm_file, tmp_path):
    """The commands of download_bleurt and download_mt5_spiece against a local server in the hub's layout."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    bleurt_files = {n: (tiny_folder / n).read_bytes() for n in ("config.json", "spm.model", "model.safetensors")}
    server = serve_hub(
        {
            "org/BLEURT-tiny": {**bleurt_files, "README.md": b"card"},
            "org/mt5-tiny": {"spiece.model": spm_file.read_bytes()},
        }
    )
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_DISABLE_XET": "1",
        "PYTHONPATH": str(REPO),
    }
    try:
        for args in (
            ["folder", "--hub-id", "org/BLEURT-tiny", "--out", str(tmp_path / "bleurt")],
            ["file", "--hub-id", "org/mt5-tiny", "--file", "spiece.model", "--out", str(tmp_path / "sp")],
            ["folder", "--hub-id", "org/mt5-tiny", "--out", str(tmp_path / "not-bleurt")],
        ):
            proc = subprocess.run(
                [sys.executable, "-m", "workflow_scripts.sum_assets", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if "not-bleurt" in args[-1]:
                assert proc.returncode != 0 and "not a BLEURT checkpoint" in proc.stderr
                assert not (tmp_path / "not-bleurt").exists()  # atomic: nothing half-fetched is left
            else:
                assert proc.returncode == 0, proc.stderr[-2000:]
    finally:
        server.shutdown()
    assert not (tmp_path / "bleurt" / "README.md").exists()
    assert (tmp_path / "sp").read_bytes() == spm_file.read_bytes()
    model, tok = bleurt.load_bleurt(tmp_path / "bleurt")
    reference, _ = bleurt.load_bleurt(tiny_folder)
    pair = (["මම පාසල් යනවා"], ["මම ගෙදර යනවා."])
    assert bleurt.score_pairs(model, tok, *pair) == bleurt.score_pairs(reference, tok, *pair)


@pytest.mark.slow
def test_harness_sum_on_mt5_pieces_then_bleurt_then_table8(tiny_llama_dir, tiny_folder, spm_file, tmp_path):
    """The chain of the paper grid on fixtures: evaluate_sum's command with ROUGE-L on SentencePiece pieces (two
    runs), score_bleurt's on its predictions, the results table, Table 8's two columns."""
    import subprocess
    import sys

    from tests.conftest import REPO, l10n_pairs
    from workflow_scripts.harness import datasets, metrics

    pairs = l10n_pairs("si")[300:310]
    rows = [
        {"id": str(i), "url": "", "title": "", "text": " ".join(t for _, t in pairs[i : i + 3]), "summary": t}
        for i, (_, t) in enumerate(pairs[:6])
    ]
    xlsum = datasets.write_hub_layout(tmp_path / "xlsum", {"sinhala": {"train": rows[:2], "test": rows[2:]}})
    cell = {"model": "smollm2", "language": "si", "method": "source", "label": "Source"}
    folder = tmp_path / "smollm2" / "si" / "source" / "eval"
    folder.mkdir(parents=True)
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "workflow_scripts.harness",
        "--task",
        "sum",
        "--lang",
        "si",
        "--model",
        str(tiny_llama_dir),
        "--data",
        str(xlsum),
        "--n",
        "3",
        "--max-new-tokens",
        "6",
        "--runs",
        "2",
        "--decoding",
        "paper",
        "--rouge-tokenizer",
        "mt5",
        "--mt5-spiece",
        str(spm_file),
        "--cell",
        json.dumps(cell),
        "--out",
        str(folder / "sum.json"),
        "--predictions",
        str(folder / "sum_predictions.tsv"),
    ]
    proc = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((folder / "sum.json").read_text())
    assert {r["metric"] for r in result["records"]} == {"rougeL_mt5"}
    # each run's ROUGE-L is the mean over its predictions, recomputed on the same pieces
    predictions = bleurt.read_predictions(folder / "sum_predictions.tsv")
    tok = metrics.rouge_tokenizer("mt5", spm_file)
    for record in result["records"]:
        mine = [p for p in predictions if int(p["run"]) == record["run"]]
        expected = sum(metrics.rouge_l(p["hypothesis"], p["reference"], tok) for p in mine) / len(mine)
        assert len(mine) == 3 and record["value"] == pytest.approx(expected)
    bleurt.main(
        [
            "--model",
            str(tiny_folder),
            "--predictions",
            str(folder / "sum_predictions.tsv"),
            "--sum-result",
            str(folder / "sum.json"),
            "--out",
            str(folder / "sum_bleurt.json"),
        ]
    )
    frame, _ = tables.build_tables([folder / "sum.json", folder / "sum_bleurt.json"])
    filled = fill(TABLES_BY_NAME["table8"], frame)
    assert {c.metric for c in filled.spec.columns} == {"rougeL_mt5", "bleurt"}
    for header in ("ROUGE-L", "BLEURT"):
        assert filled.cell("llama2", "Source", "si", header).n == 2


@pytest.mark.slow
def test_planning_schedules_bleurt_only_where_configured(tmp_path):
    """snakemake -n: the default plans no sum metric jobs; with sum, mt5 pieces and a BLEURT hub id it plans one
    download each and one score per sum cell; a bad setting stops planning naming its key."""
    import yaml

    from tests.conftest import snakemake, tiny_config

    def plan(workdir, **sum_settings):
        workdir.mkdir()
        path = tiny_config(workdir)
        config = yaml.safe_load(path.read_text())
        if sum_settings:
            config["evaluation"]["tasks"] = [*config["evaluation"]["tasks"], "sum"]
            config["evaluation"]["sum"] = {**config["evaluation"].get("sum", {}), **sum_settings}
        path.write_text(yaml.safe_dump(config))
        return snakemake(["-n", "--cores", "1", "--configfile", str(path)], workdir)

    default = plan(tmp_path / "default")
    assert default.returncode == 0, default.stderr[-2000:]
    assert "score_bleurt" not in default.stdout and "download_mt5_spiece" not in default.stdout
    proc = plan(tmp_path / "paper", rouge_tokenizer="mt5", bleurt="lucadiliello/BLEURT-20-D12")
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in proc.stdout.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    assert counts["download_bleurt"] == 1 and counts["download_mt5_spiece"] == 1
    assert counts["score_bleurt"] == counts["evaluate_sum"] > 0  # MuMo cells included: one evaluate_sum rule
    assert "--rouge-tokenizer mt5 --mt5-spiece results/downloads/mt5/google--mt5-small/spiece.model" in proc.stdout
    bad = plan(tmp_path / "bad", bleurt="no-such-folder")
    assert bad.returncode != 0 and "evaluation.sum.bleurt: 'no-such-folder'" in bad.stdout + bad.stderr
