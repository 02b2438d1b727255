"""Evaluation sources in their real hub layouts (tests/source_fixtures.py) load through the download step, from a
local folder and through the real huggingface_hub client against a local server in the hub's URL layout, and the
mirror then reads offline with ``datasets.load_dataset(folder, subset, split=...)`` giving the tasks' fields."""

from __future__ import annotations

import pytest

from tests import source_fixtures as sf
from tests.hub_server import TOKEN, Hub, HubServer
from workflow_scripts import hub_cache
from workflow_scripts.harness import datasets as D
from workflow_scripts.harness import sources as S


def load(folder, subset, split, tmp_path):
    import datasets as hfds

    return hfds.load_dataset(str(folder), subset, split=split, cache_dir=str(tmp_path / "hf-datasets-cache"))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A hub with the sources' layouts, served over HTTP for the test's duration; the client online, its cache in
    tmp_path, no token."""
    import huggingface_hub.constants as C

    h = Hub()
    h.add("dataset", "csebuetnlp/xlsum", sf.xlsum_repo(tmp_path / "repos/xlsum"))
    h.add("dataset", "GEM/mlsum", sf.mlsum_main(tmp_path / "repos/mlsum-main"))
    h.add("dataset", "GEM/mlsum", sf.mlsum_branch(tmp_path / "repos/mlsum-pq"), revision=S.PARQUET_BRANCH)
    h.add("dataset", "reciTAL/mlsum", sf.mlsum_main(tmp_path / "repos/recital"))  # a script, no Parquet branch
    h.add("dataset", "facebook/belebele", sf.belebele_repo(tmp_path / "repos/belebele"))
    h.add("dataset", "CohereLabs/Global-MMLU", sf.gmmlu_repo(tmp_path / "repos/gmmlu"))
    h.add("dataset", "openlanguagedata/flores_plus", sf.flores_repo(tmp_path / "repos/flores"), gated=True)
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with HubServer(h) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        yield h


LOCAL_CASES = [
    ("xlsum", sf.xlsum_repo, "thai", ["test", "train", "validation"], {"id", "url", "title", "summary", "text"}),
    ("mlsum", sf.mlsum_branch, "de", ["test", "train"], {"id", "summary", "text", "url", "title"}),
    ("belebele", sf.belebele_repo, "tha_Thai", ["test"], set(S.BELEBELE_COLUMNS)),
    ("global_mmlu", sf.gmmlu_repo, "si", ["test", "dev"], set(S.GLOBAL_MMLU_COLUMNS)),
]


@pytest.mark.parametrize("name,make,subset,splits,fields", LOCAL_CASES, ids=[c[0] for c in LOCAL_CASES])
def test_local_folder_in_the_hub_layout_becomes_a_mirror_with_the_task_fields(
    tmp_path, name, make, subset, splits, fields
):
    src = make(tmp_path / "src")
    out = D.download(name, str(src), [subset], splits, tmp_path / "mirror")
    for split in splits:
        ds = load(out, subset, split, tmp_path)
        assert fields <= set(ds.column_names), (split, ds.column_names)
        assert len(ds) > 0
    assert (out / "README.md").is_file() and (out / "source.json").is_file()


def test_xlsum_keeps_the_scripts_fields_and_calls_val_validation(tmp_path):
    out = D.download("xlsum", str(sf.xlsum_repo(tmp_path / "src")), ["sinhala"], ["validation"], tmp_path / "m")
    ds = load(out, "sinhala", "validation", tmp_path)
    assert ds.column_names == ["id", "url", "title", "summary", "text"]
    assert ds[0]["id"] == "sinhala-val-0" and ds[1]["summary"] == sf.THAI[1]


def test_mlsum_fields_are_renamed_and_the_branch_needs_no_readme(tmp_path):
    src = sf.mlsum_branch(tmp_path / "src")
    assert not (src / "README.md").exists()
    ds = load(D.download("mlsum", str(src), ["de"], ["test"], tmp_path / "m"), "de", "test", tmp_path)
    assert ds[2]["id"] == "mlsum_de-test-2" and ds[2]["summary"] == "Zusammenfassung 2."
    assert "gem_id" not in ds.column_names and "target" not in ds.column_names


def test_mlsum_summary_falls_back_to_the_first_reference(tmp_path):
    import pyarrow.parquet as pq

    src = sf.mlsum_branch(tmp_path / "src")
    table = pq.read_table(src / "de/test/0000.parquet")
    pq.write_table(
        table.set_column(table.column_names.index("target"), "target", [["", "", ""]]), src / "de/test/0000.parquet"
    )
    ds = load(D.download("mlsum", str(src), ["de"], ["test"], tmp_path / "m"), "de", "test", tmp_path)
    assert ds["summary"] == ["Zusammenfassung 0.", "Zusammenfassung 1.", "Zusammenfassung 2."]


@pytest.mark.parametrize("layout", ["folders", "files"])
def test_mlsum_branch_reads_in_either_layout_of_the_converter(tmp_path, layout):
    """{config}/{split}/NNNN.parquet and {config}/mlsum-{split}[-NNNNN-of-NNNNN].parquet give the same mirror; the
    shards of train are read in their order."""
    src = sf.mlsum_branch(tmp_path / "src", layout)
    out = D.download("mlsum", str(src), ["de"], ["test", "train", "validation"], tmp_path / "m")
    train = load(out, "de", "train", tmp_path)
    assert train["id"] == ["mlsum_de-train-0", "mlsum_de-train-1", "mlsum_de-train-2"]
    assert load(out, "de", "test", tmp_path)["summary"] == [f"Zusammenfassung {i}." for i in range(3)]
    assert len(load(out, "de", "validation", tmp_path)) == 2


def test_parquet_branch_layouts_are_parsed_to_configs_and_splits():
    files = {
        "de/mlsum-train-00000-of-00002.parquet": 1,
        "de/mlsum-train-00001-of-00002.parquet": 1,
        "de/mlsum-test.parquet": 1,
        "es/my-data-challenge_test_covid-00000-of-00001.parquet": 1,  # a hyphenated dataset name, a split with _
        "de/validation/0000.parquet": 1,
        "de/mlsum-validation.parquet": 1,  # the same split in both layouts: the folder's file alone
        "de/notes.parquet": 1,  # no -{split}: not a converter's file
        ".gitattributes": 1,
    }
    assert S._parquet_branch(files) == {
        "de": {
            "train": ["de/mlsum-train-00000-of-00002.parquet", "de/mlsum-train-00001-of-00002.parquet"],
            "test": ["de/mlsum-test.parquet"],
            "validation": ["de/validation/0000.parquet"],
        },
        "es": {"challenge_test_covid": ["es/my-data-challenge_test_covid-00000-of-00001.parquet"]},
    }


def test_a_branch_in_neither_layout_names_the_repository_revision_and_files(hub, tmp_path):
    odd = tmp_path / "repos/odd"
    (odd / "de").mkdir(parents=True)
    (odd / "de" / "data.parquet").write_bytes(b"PAR1")
    (odd / "de" / "test.arrow").write_bytes(b"")
    hub.add("dataset", "GEM/odd", odd, revision=S.PARQUET_BRANCH)
    with pytest.raises(D.LayoutError) as e:
        D.download("mlsum", "GEM/odd", ["de"], ["test"], tmp_path / "m")
    assert str(e.value) == (
        "mlsum (GEM/odd@refs/convert/parquet): no README.md configs block and no Parquet-branch layout "
        "({config}/{split}/NNNN.parquet or {config}/{dataset}-{split}[-NNNNN-of-NNNNN].parquet); "
        "files: de/data.parquet, de/test.arrow"
    )
    assert not (tmp_path / "m").exists()


def test_global_mmlu_keeps_rows_with_an_empty_option(tmp_path):
    ds = load(
        D.download("global_mmlu", str(sf.gmmlu_repo(tmp_path / "s")), ["si"], ["test"], tmp_path / "m"),
        "si",
        "test",
        tmp_path,
    )
    assert len(ds) == 3 and ds[1]["option_d"] == "" and ds[0]["option_d"] == "9"


def test_greeksum_converter_command_builds_a_mirror(tmp_path):
    src = sf.greeksum_release(tmp_path / "GreekSUM")
    D.main(["greeksum", "--src", str(src), "--out", str(tmp_path / "greeksum")])
    test = load(tmp_path / "greeksum", "el", "test", tmp_path)
    assert len(test) == 3 and {"id", "summary", "text", "url", "title"} <= set(test.column_names)
    assert test[0]["id"] == "politics_5" and test[0]["summary"] == sf.GREEK[0]
    assert len(load(tmp_path / "greeksum", "el", "train", tmp_path)) == 3
    assert len(load(tmp_path / "greeksum", "el", "validation", tmp_path)) == 1


def test_greeksum_from_the_line_aligned_files(tmp_path):
    folder = tmp_path / "GreekSUM" / "abstract" / "summarization_data_abstract"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / f"{split}-article.txt").write_text("\n".join(sf.GREEK) + "\n", encoding="utf-8")
        (folder / f"{split}-abstract.txt").write_text("\n".join(s[:10] for s in sf.GREEK) + "\n", encoding="utf-8")
    out = D.convert_greeksum(tmp_path / "GreekSUM", tmp_path / "m")
    ds = load(out, "el", "test", tmp_path)
    assert ds[3]["text"] == sf.GREEK[3] and ds[3]["summary"] == sf.GREEK[3][:10] and ds[3]["id"] == "test-3"


def test_greeksum_without_built_data_says_what_to_run(tmp_path):
    (tmp_path / "GreekSUM").mkdir()
    with pytest.raises(D.LayoutError, match="splits_abstract_as_summary") as e:
        D.convert_greeksum(tmp_path / "GreekSUM", tmp_path / "m")
    assert "generate_GreekSUM.sh" in e.value.fix


def test_wrong_subset_split_and_column_name_what_exists(tmp_path):
    with pytest.raises(D.LayoutError, match=r"no such subset \(has: ar, en, si\)"):
        D.download("global_mmlu", str(sf.gmmlu_repo(tmp_path / "g")), ["xx"], ["test"], tmp_path / "m")
    with pytest.raises(D.LayoutError, match=r"no split 'validation' \(has: dev, test\)"):
        D.download("global_mmlu", str(tmp_path / "g"), ["si"], ["validation"], tmp_path / "m")
    with pytest.raises(D.LayoutError, match=r"languages: sinhala, thai"):
        D.download("xlsum", str(sf.xlsum_repo(tmp_path / "x")), ["hindi"], ["test"], tmp_path / "m")
    broken = sf.belebele_repo(tmp_path / "b", codes=("tha_Thai",))
    (broken / "data" / "tha_Thai.jsonl").write_text('{"question": "q"}\n')
    with pytest.raises(D.LayoutError, match="no column flores_passage"):
        D.download("belebele", str(broken), ["tha_Thai"], ["test"], tmp_path / "m")
    assert not (tmp_path / "m").exists()  # nothing half-written


# ---- through the real hub client -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,hub_id,subset,splits,field",
    [
        ("xlsum", "csebuetnlp/xlsum", "thai", ["test", "train"], "summary"),
        ("mlsum", "GEM/mlsum", "de", ["test", "train"], "summary"),  # main has only mlsum.py: read at the branch
        ("belebele", "facebook/belebele", "sin_Sinh", ["test"], "flores_passage"),
        ("global_mmlu", "CohereLabs/Global-MMLU", "en", ["test", "dev"], "option_a"),
    ],
)
def test_hub_download_then_offline_load(hub, tmp_path, monkeypatch, name, hub_id, subset, splits, field):
    import huggingface_hub.constants as C

    out = D.download(name, hub_id, [subset], splits, tmp_path / name)
    assert any("/resolve/" in r for r in hub.requests)
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    for split in splits:
        ds = load(out, subset, split, tmp_path)
        assert field in ds.column_names and len(ds) > 0


def test_mlsum_hub_branch_in_the_files_layout_downloads(hub, tmp_path):
    hub.repos[("dataset", "GEM/mlsum")].revisions[S.PARQUET_BRANCH] = sf.mlsum_branch(tmp_path / "pq2", "files")
    out = D.download("mlsum", "GEM/mlsum", ["es"], ["train"], tmp_path / "m")
    assert any(
        r.startswith("GET /datasets/GEM/mlsum/resolve/") and r.endswith("/es/mlsum-train-00001-of-00002.parquet")
        for r in hub.requests
    )
    assert load(out, "es", "train", tmp_path)["id"] == [f"mlsum_es-train-{i}" for i in range(3)]


def test_a_source_without_a_layout_entry_is_read_generically(hub, tmp_path):
    """Any other HUB_IDS source (here an English MMLU in cais/mmlu's layout) goes through its README configs."""
    hub.add("dataset", "cais/mmlu", sf.mmlu_repo(tmp_path / "repos/mmlu"))
    out = D.download("mmlu", "cais/mmlu", ["anatomy"], ["test", "dev"], tmp_path / "m")
    ds = load(out, "anatomy", "dev", tmp_path)
    assert ds.column_names == ["question", "subject", "choices", "answer"] and ds[2]["choices"] == ["a", "b", "c", "d"]
    assert len(load(out, "anatomy", "test", tmp_path)) == 4


def test_loading_script_repository_without_branch_names_the_fix(hub, tmp_path):
    with pytest.raises(D.LayoutError, match="loading-script dataset") as e:
        D.download("mlsum", "reciTAL/mlsum@main", ["de"], ["test"], tmp_path / "m")
    assert "reciTAL/mlsum@refs/convert/parquet" in e.value.fix


def test_gated_flores_needs_the_licence_then_serves_corpus_offline(hub, tmp_path, monkeypatch):
    import huggingface_hub.constants as C

    from workflow_scripts import corpus

    args = ["flores", "--root", "openlanguagedata/flores_plus", "--codes", "eng_Latn", "tha_Thai"]
    with pytest.raises(hub_cache.AccessError, match="gated") as e:
        hub_cache.main([*args, "--out", str(tmp_path / "th.json")])
    assert "/datasets/openlanguagedata/flores_plus" in e.value.fix and "licence" in e.value.fix
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub_cache.main([*args, "--out", str(tmp_path / "th.json")])
    # what flores_mt then does on a compute node, with the hub offline: the same files from the cache
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    pairs = corpus.load_flores_pairs("openlanguagedata/flores_plus", "th", n=3, seed=0)
    assert len(pairs) == 3 and all(en.startswith("eng_Latn") and th.startswith("tha_Thai") for en, th in pairs)


def test_model_download_fetches_what_from_pretrained_reads(hub, tmp_path, monkeypatch):
    import json

    repo = tmp_path / "repos" / "llama"
    (repo / "original").mkdir(parents=True)
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        (repo / name).write_text("{}")
    (repo / "model-00001-of-00001.safetensors").write_bytes(b"\0" * 100)
    (repo / "pytorch_model.bin").write_bytes(b"\0" * 100)
    (repo / "original" / "consolidated.00.pth").write_bytes(b"\0" * 100)
    hub.add("model", "meta-llama/Meta-Llama-3-8B", repo, gated=True)
    spec = json.dumps({"kind": "hub", "path": "meta-llama/Meta-Llama-3-8B"})
    with pytest.raises(hub_cache.AccessError, match="gated"):
        hub_cache.main(["model", "--spec", spec, "--out", str(tmp_path / "m.json")])
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub_cache.main(["model", "--spec", spec, "--out", str(tmp_path / "m.json")])
    marker = json.loads((tmp_path / "m.json").read_text())
    assert marker["files"] == [
        "config.json",
        "generation_config.json",
        "model-00001-of-00001.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert not any("consolidated" in r or r.endswith(".bin") for r in hub.requests)


def test_an_anonymous_401_from_auth_check_is_not_taken_for_a_missing_repository(hub, tmp_path):
    hub.anonymous_check_401 = True
    out = D.download("belebele", "facebook/belebele", ["tha_Thai"], ["test"], tmp_path / "m")
    assert len(load(out, "tha_Thai", "test", tmp_path)) == 3
    with pytest.raises(hub_cache.AccessError, match="is gated"):
        hub_cache.HubRepo("openlanguagedata/flores_plus").check_access()
    with pytest.raises(hub_cache.AccessError, match="no such dataset repository"):
        hub_cache.HubRepo("facebook/belebele-gone").check_access()


def test_needed_sources_follow_tasks_and_languages():
    config = {
        "languages": {"th": {}, "de": {}, "el": {}},
        "evaluation": {"tasks": ["mt", "sum", "mc", "gmmlu", "mc_en", "gmmlu_en"], "mc": {"source": "belebele"}},
    }
    need = D.needed_sources(config)
    assert need["xlsum"] == {"subsets": {"thai"}, "splits": {"test", "train"}}
    assert need["mlsum"]["subsets"] == {"de"} and need["greeksum"]["subsets"] == {"el"}
    assert need["belebele"]["subsets"] == {"tha_Thai", "deu_Latn", "ell_Grek", "eng_Latn"}
    assert need["global_mmlu"] == {"subsets": {"de", "el"}, "splits": {"test", "dev"}}  # no Thai subset
    assert need["mmlu"] == {"subsets": {"all"}, "splits": {"test", "dev"}}  # English retention: the original MMLU
    config["evaluation"]["mc"]["source"] = "l10n_proxy"
    assert "belebele" not in D.needed_sources(config)


@pytest.mark.slow
def test_the_harness_reads_the_mirrors_offline(tiny_llama_dir, tmp_path):
    """LightEval tasks (python -m workflow_scripts.harness) on mirrors the download step wrote, with the hub offline."""
    import json

    from tests.conftest import REPO, run_harness_jobs

    mirrors = {
        "sum": D.download("xlsum", str(sf.xlsum_repo(tmp_path / "x")), ["thai"], ["test", "train"], tmp_path / "xl"),
        "mc": D.download("belebele", str(sf.belebele_repo(tmp_path / "b")), ["tha_Thai"], ["test"], tmp_path / "be"),
    }
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    argvs = [
        [
            "--task",
            task,
            "--lang",
            "th",
            "--model",
            str(tiny_llama_dir),
            "--n",
            "2",
            "--max-new-tokens",
            "4",
            "--cell",
            '{"method": "Source"}',
            "--out",
            str(tmp_path / f"{task}.json"),
            "--data",
            str(folder),
            *(["--fewshot", "1"] if task == "mc" else []),
        ]
        for task, folder in mirrors.items()
    ]
    run_harness_jobs(argvs, env, tmp_path)  # both jobs in one process: LightEval imported once
    for task in mirrors:
        result = json.loads((tmp_path / f"{task}.json").read_text())
        assert result["details"]["n_items"] == 2 and result["records"], result["details"]
