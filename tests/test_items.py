"""Which items mt and sum evaluate (workflow_scripts/items.py, corpus.py flores): the reference's 500 FLORES rows and
500 shortest sum articles, and the cheap selections, on fixtures in the hub layouts."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest

from workflow_scripts import corpus, items, selection
from workflow_scripts.harness.datasets import task_source, write_hub_layout
from workflow_scripts.io import read_pairs

pytestmark = pytest.mark.one_worker("lighteval")  # the files that import LightEval share a worker (conftest.py)

N_DEVTEST = 1012  # FLORES-200 devtest rows per language


def test_paper_positions_are_the_references_pandas_sample():
    # pandas.DataFrame.sample(n, random_state=42) is numpy's legacy RandomState(42).permutation(rows)[:n]
    expected = np.random.RandomState(42).permutation(N_DEVTEST)[:500].tolist()
    frame = pd.DataFrame({"en": [f"s{i}" for i in range(N_DEVTEST)]})
    assert selection.select_positions(N_DEVTEST, "paper", 500, seed=0) == expected
    assert frame.sample(n=500, random_state=42).index.tolist() == expected
    # the workflow seed does not move the paper's rows; a smaller n is a prefix of them
    assert selection.select_positions(N_DEVTEST, "paper", 500, seed=7) == expected
    assert selection.select_positions(N_DEVTEST, "paper", 32, seed=0) == expected[:32]
    assert selection.select_positions(N_DEVTEST, "first", 3, seed=0) == [0, 1, 2]
    shuffled = selection.select_positions(N_DEVTEST, "shuffle", 5, seed=3)
    assert shuffled == sorted(random.Random(3).sample(range(N_DEVTEST), 5))
    assert shuffled != selection.select_positions(N_DEVTEST, "shuffle", 5, seed=4)
    with pytest.raises(ValueError, match=r"evaluation\.items must be one of"):
        selection.select_positions(10, "random", 3, seed=0)
    with pytest.raises(ValueError, match="cannot select 11 items from 10 rows"):
        selection.select_positions(10, "first", 11, seed=0)


def _flores_folder(root, langs=("tha_Thai", "sin_Sinh")):
    """A flores_plus-layout devtest with 1,012 rows per language; ids are line numbers (0-based), and the target
    files list their rows in another order than English (the alignment is by id)."""
    (root / "devtest").mkdir(parents=True)
    ids = list(range(N_DEVTEST))
    pd.DataFrame({"id": ids, "text": [f"English sentence {i}." for i in ids]}).to_parquet(
        root / "devtest" / "eng_Latn.parquet"
    )
    for code in langs:
        order = ids[::-1]
        pd.DataFrame({"id": order, "text": [f"{code} ประโยค {i}" for i in order]}).to_parquet(
            root / "devtest" / f"{code}.parquet"
        )
    return root


def test_flores_paper_items_same_rows_every_language(tmp_path):
    root = _flores_folder(tmp_path / "flores")
    expected = np.random.RandomState(42).permutation(N_DEVTEST)[:500].tolist()
    listings = {}
    for lang in ("th", "si"):
        out, ids = tmp_path / f"{lang}.tsv", tmp_path / f"{lang}.json"
        corpus.main(
            [
                "flores",
                "--root",
                str(root),
                "--lang",
                lang,
                "--n",
                "500",
                "--seed",
                "1",
                "--items",
                "paper",
                "--out",
                str(out),
                "--ids",
                str(ids),
            ]
        )
        listing = json.loads(ids.read_text())
        pairs = read_pairs(out)
        assert listing["positions"] == expected and listing["ids"] == expected  # ids = line numbers here
        assert listing["rows_in_pool"] == N_DEVTEST and listing["n"] == 500 == len(pairs)
        assert listing["files_in_id_order"] == {"English": True, "target": False}
        # the TSV holds the chosen rows in the sample's order, each English sentence with its own translation
        code = corpus.flores_code(lang)
        assert pairs == [(f"English sentence {i}.", f"{code} ประโยค {i}") for i in expected]
        listings[lang] = listing
    assert listings["th"]["ids"] == listings["si"]["ids"]


def test_flores_before_and_after(tmp_path):
    """What mt evaluated before (the workflow seed's draw, still ``shuffle``) and with ``paper``: other rows."""
    root = _flores_folder(tmp_path / "flores", langs=("tha_Thai",))
    table = corpus.load_flores_table(root, "th")
    before = corpus.select_flores(table, items="shuffle", n=500, seed=42)
    after = corpus.select_flores(table, items="paper", n=500, seed=42)
    assert before["position"].tolist() == sorted(random.Random(42).sample(range(N_DEVTEST), 500))
    assert after["position"].tolist() == np.random.RandomState(42).permutation(N_DEVTEST)[:500].tolist()
    shared = set(before["id"]) & set(after["id"])
    assert 150 < len(shared) < 350  # two independent draws of 500 of 1,012 share about 247 rows
    # the old call keeps its rows
    en = pd.read_parquet(root / "devtest" / "eng_Latn.parquet")
    th = pd.read_parquet(root / "devtest" / "tha_Thai.parquet")
    assert corpus.align_flores(en, th, n=500, seed=42) == list(zip(before["source"], before["reference"], strict=True))


# ----------------------------------------------------------------------------------------------------------------------
# sum


def _article(i: int, words: int) -> dict:
    return {
        "id": f"art-{i}",
        "url": f"https://example.org/{i}",
        "title": f"title {i}",
        "summary": f"summary {i}",
        "text": " ".join(["ข่าว"] * words),
    }


@pytest.fixture
def sum_folder(tmp_path):
    """An XL-Sum-layout Thai folder: test and validation, with length ties across the two splits."""
    subset = task_source("sum", "th").subset
    test = [_article(0, 9), _article(1, 3), _article(2, 5), _article(3, 3)]
    validation = [_article(4, 3), _article(5, 1), _article(6, 12)]
    train = [_article(7, 1)]  # never a candidate
    return write_hub_layout(tmp_path / "xlsum", {subset: {"train": train, "test": test, "validation": validation}})


@pytest.fixture(scope="module")
def bos_tokenizer_dir(tmp_path_factory):
    """A SentencePiece-style Llama tokenizer (byte fallback) whose encode() adds BOS, like Llama-2's."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    from tests.conftest import sentencepiece_source

    folder = sentencepiece_source(tmp_path_factory.mktemp("sp") / "tok")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    out = tmp_path_factory.mktemp("sp_bos") / "tok"
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>").save_pretrained(
        out
    )
    return out


def test_sum_paper_items_shortest_with_bos_and_stable_ties(tmp_path, sum_folder, bos_tokenizer_dir):
    from transformers import AutoTokenizer

    subset = task_source("sum", "th").subset
    tok = AutoTokenizer.from_pretrained(str(bos_tokenizer_dir))
    pool = [("test", i) for i in range(4)] + [("validation", i) for i in range(4, 7)]
    texts = {i: _article(i, w)["text"] for i, w in zip(range(7), (9, 3, 5, 3, 3, 1, 12), strict=True)}
    lengths = [len(tok.encode(texts[i])) for _, i in pool]
    assert lengths[0] == len(tok.encode(texts[0], add_special_tokens=False)) + 1  # BOS counted
    assert items.token_lengths(bos_tokenizer_dir, [texts[i] for _, i in pool]) == lengths

    rows, listing = items.select_sum(sum_folder, subset, "paper", 4, bos_tokenizer_dir)
    # art-5 (1 word) first; then the three 3-word articles tie: test's art-1, art-3 before validation's art-4
    assert listing["ids"] == ["art-5", "art-1", "art-3", "art-4"]
    assert listing["splits"] == ["validation", "test", "test", "validation"]
    assert listing["lengths"] == sorted(listing["lengths"]) and listing["rows_in_pool"] == 7
    assert [r["id"] for r in rows] == listing["ids"] and set(rows[0]) == set(items.SUM_FIELDS)

    _, first = items.select_sum(sum_folder, subset, "first", 5)
    assert first["ids"] == ["art-0", "art-1", "art-2", "art-3", "art-4"] and "lengths" not in first


def test_sum_cli_writes_the_folder_the_harness_reads(tmp_path, sum_folder, bos_tokenizer_dir):
    import datasets

    from workflow_scripts.harness.run import private_datasets_cache

    source = task_source("sum", "th")
    out, ids = tmp_path / "sum_items" / "paper", tmp_path / "sum_items" / "paper.ids.json"
    items.main(
        [
            "sum",
            "--data",
            str(sum_folder),
            "--lang",
            "th",
            "--items",
            "paper",
            "--n",
            "3",
            "--tokenizer",
            str(bos_tokenizer_dir),
            "--out",
            str(out),
            "--ids",
            str(ids),
        ]
    )
    listing = json.loads(ids.read_text())
    with private_datasets_cache(tmp_path / "cache"):
        ds = datasets.load_dataset(str(out), source.subset, split=source.split)
    assert ds["id"] == listing["ids"] == ["art-5", "art-1", "art-3"]
    assert ds[0]["summary"] == "summary 5" and ds[0]["text"] == "ข่าว"


def test_sum_missing_validation_split_is_a_clear_error(tmp_path):
    subset = task_source("sum", "si").subset
    folder = write_hub_layout(tmp_path / "xlsum", {subset: {"test": [_article(0, 2)]}})
    with pytest.raises(ValueError, match=r"no 'validation' split.*evaluation.items: paper"):
        items.select_sum(folder, subset, "first", 1)
    with pytest.raises(ValueError, match="shuffle has no sum selection step"):
        items.select_sum(folder, subset, "shuffle", 1)


@pytest.mark.slow
def test_harness_reads_exactly_the_selected_rows(tmp_path, sum_folder, bos_tokenizer_dir, smollm2_tokenizer_dir):
    """LightEval's task over the selected folder, with n = the selection's size, yields every selected row."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from workflow_scripts.harness.run import private_datasets_cache
    from workflow_scripts.harness.tasks import task_config

    out, ids = tmp_path / "sel", tmp_path / "sel.json"
    items.main(
        [
            "sum",
            "--data",
            str(sum_folder),
            "--lang",
            "th",
            "--items",
            "paper",
            "--n",
            "4",
            "--tokenizer",
            str(bos_tokenizer_dir),
            "--out",
            str(out),
            "--ids",
            str(ids),
        ]
    )
    config = task_config("sum", "th", out, tokenizer_dir=str(smollm2_tokenizer_dir))
    config.num_fewshots = 0
    with private_datasets_cache(tmp_path / "cache"):
        docs = LightevalTask(config).get_docs(4)
    summaries = sorted(d.choices[0] for d in docs)
    chosen = json.loads(ids.read_text())["ids"]
    assert summaries == sorted(f"summary {i.split('-')[1]}" for i in chosen)
    # each doc keeps the dataset's own id (LightEval's Doc.id is the row index): the predictions file names it
    assert sorted(d.specific["item_id"] for d in docs) == sorted(chosen)


@pytest.mark.slow
def test_rules_wire_the_selection(tmp_path, sum_folder, bos_tokenizer_dir):
    """With items paper, flores_mt draws the paper's rows and the sum jobs read the selected folder, whole; a harness
    n below the selected rows is refused before any job runs."""
    import yaml

    from tests.conftest import snakemake, tiny_config

    root = _flores_folder(tmp_path / "flores", langs=("tha_Thai",))
    config_path = tiny_config(tmp_path)
    config = yaml.safe_load(config_path.read_text())
    config["languages"]["th"]["mt"] = {"kind": "flores", "root": str(root)}
    config["data"]["n_mt"] = 8
    config["evaluation"].update(
        tasks=["mt", "sum"],
        items="paper",
        items_tokenizer=str(bos_tokenizer_dir),
        datasets={"xlsum": str(sum_folder)},
        sum={"n": 3, "max_new_tokens": 4},
    )
    config_path.write_text(yaml.safe_dump(config))
    run = snakemake(["-n", "-p", "--configfile", str(config_path)], tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    plan = run.stdout
    assert "--items paper" in plan and "--ids results/default/data/th/flores/mt_items.json" in plan
    assert f"workflow_scripts.items sum --data {sum_folder}" in plan and f"--tokenizer {bos_tokenizer_dir}" in plan
    assert "--data results/default/data/th/sum_items/paper --n 3" in plan

    config["evaluation"]["mt"]["n"] = 4
    config_path.write_text(yaml.safe_dump(config))
    run = snakemake(["-n", "--configfile", str(config_path)], tmp_path)
    assert run.returncode != 0 and "evaluation.mt.n (4) is below data.n_mt (8)" in run.stdout + run.stderr


def _hub_handler(folder, repo: str, sha: str = "a" * 40):
    """A request handler for the few hub endpoints snapshot_download calls, serving one model repository's files."""
    import hashlib
    from http.server import BaseHTTPRequestHandler

    files = {p.name: p.read_bytes() for p in folder.iterdir()}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            self.server.requests.append(self.requestline)

        def _send(self, code: int, data: bytes = b"", body: bool = True, headers: dict | None = None):
            self.send_response(code)
            for k, v in {"Content-Length": str(len(data)), **(headers or {})}.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self):
            self.do_GET(body=False)

        def do_GET(self, body: bool = True):
            path = self.path.split("?")[0]
            if path.startswith(f"/api/models/{repo}/tree/"):
                tree = [
                    {"type": "file", "path": n, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                    for n, d in files.items()
                ]
                return self._send(200, json.dumps(tree).encode(), body)
            if path.startswith(f"/api/models/{repo}/revision/"):
                info = {"id": repo, "sha": sha, "siblings": [{"rfilename": n} for n in files]}
                return self._send(200, json.dumps(info).encode(), body)
            name = path.removeprefix(f"/{repo}/resolve/").split("/", 1)[-1]
            if path.startswith(f"/{repo}/resolve/") and name in files:
                etag = '"' + hashlib.sha1(files[name]).hexdigest() + '"'
                return self._send(200, files[name], body, {"ETag": etag, "X-Repo-Commit": sha})
            return self._send(404, b"", body)

    return Handler


@pytest.mark.slow
def test_length_tokenizer_download_fetches_tokenizer_files_only(tmp_path, bos_tokenizer_dir):
    """The local rule's command against a local server in the hub's URL layout: tokenizer files, no weights."""
    import os
    import shutil
    import subprocess
    import sys
    import threading
    from http.server import ThreadingHTTPServer

    from tests.conftest import REPO

    repo_files = tmp_path / "repo"
    shutil.copytree(bos_tokenizer_dir, repo_files)
    (repo_files / "model.safetensors").write_bytes(b"weights")
    (repo_files / "config.json").write_text("{}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _hub_handler(repo_files, "meta-llama/Llama-2-7b-hf"))
    server.requests = []
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": str(tmp_path / "home"),
        "HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
    }
    out = tmp_path / "items_tokenizer"
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "workflow_scripts.items",
                "tokenizer",
                "--hub-id",
                "meta-llama/Llama-2-7b-hf",
                "--out",
                str(out),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        p.name for p in bos_tokenizer_dir.iterdir() if p.name in items.TOKENIZER_FILES
    )
    assert not any("model.safetensors" in r for r in server.requests)
    texts = ["ข่าว ข่าว", "กา"]
    assert items.token_lengths(out, texts) == items.token_lengths(bos_tokenizer_dir, texts)
