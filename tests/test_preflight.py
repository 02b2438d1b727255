"""tools.preflight on configurations that miss something: each gives its row and a non-zero exit; the default passes
offline. The hub is a local HTTP server in its URL layout (tests/hub_server.py) read by the real huggingface_hub."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from tests import source_fixtures as sf
from tests.hub_server import TOKEN, Hub, HubServer, SilentServer, closed_port
from tools import preflight
from workflow_scripts.hub_cache import HUB_UNREACHABLE_FIX

REPO = Path(__file__).resolve().parents[1]


def model_repo(root: Path) -> Path:
    """A model repository: config, safetensors, tokenizer, and an original/ checkpoint that is not fetched."""
    (root / "original").mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "model.safetensors").write_bytes(b"\0" * 4000)
    (root / "tokenizer.json").write_text("{}")
    (root / "original" / "consolidated.00.pth").write_bytes(b"\0" * 9000)
    return root


def files_repo(root: Path, files: dict[str, int]) -> Path:
    """A repository holding the named files (zero bytes of the given sizes)."""
    root.mkdir(parents=True)
    for name, size in files.items():
        (root / name).write_bytes(b"\0" * size)
    return root


@pytest.fixture
def hub(tmp_path, monkeypatch):
    import huggingface_hub.constants as C

    h = Hub()
    h.add("model", "meta-llama/Llama-2-7b-hf", model_repo(tmp_path / "repos/llama2"), gated=True)
    h.add("dataset", "csebuetnlp/xlsum", sf.xlsum_repo(tmp_path / "repos/xlsum"))
    h.add("dataset", "facebook/belebele", sf.belebele_repo(tmp_path / "repos/belebele"))
    h.add("dataset", "CohereLabs/Global-MMLU", sf.gmmlu_repo(tmp_path / "repos/gmmlu"))
    h.add("dataset", "lighteval/mmlu", sf.mmlu_repo(tmp_path / "repos/mmlu", subjects=("all",)))  # English retention
    h.add("model", "google/mt5-small", files_repo(tmp_path / "repos/mt5", {"spiece.model": 300}))  # ROUGE-L pieces
    bleurt = {"config.json": 20, "spm.model": 100, "model.safetensors": 5000}
    h.add("model", "lucadiliello/BLEURT-20", files_repo(tmp_path / "repos/bleurt", bleurt))
    h.add("dataset", "openlanguagedata/flores_plus", sf.flores_repo(tmp_path / "repos/flores"), gated=True)
    cc100 = tmp_path / "repos" / "th.txt.xz"
    cc100.write_bytes(b"\0" * 1234)
    h.files["cc-100/th.txt.xz"] = cc100
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with HubServer(h) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        h.url = url
        yield h


def small_paper_config(url: str) -> dict:
    """configs/paper.yaml cut to one model, Thai and Sinhala, one method, every hub-backed task."""
    config = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    config["models"] = {"llama2": {"kind": "hub", "path": "meta-llama/Llama-2-7b-hf", "size": "7B"}}
    config["languages"] = {
        "th": {
            "corpus": {"kind": "cc100", "url": f"{url}/files/cc-100/th.txt.xz"},
            "mt": {"kind": "flores", "root": "openlanguagedata/flores_plus"},
        },
        "si": {"corpus": {"kind": "l10n", "deb": str(next((REPO / "resources" / "l10n").glob("*-si_*.deb")))}},
    }
    config["methods"] = [{"init": "none", "procedure": "none"}]
    config["evaluation"]["tasks"] = ["mt", "sum", "mc", "gmmlu", "mc_en", "gmmlu_en"]
    return config


def run(tmp_path, config: dict, *extra: str) -> tuple[int, dict[str, preflight.Row], str]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "rows.json"
    code = preflight.main(
        ["--configfile", str(path), "--results", str(tmp_path / "results"), "--json", str(out), *extra]
    )
    rows = [preflight.Row(**r) for r in json.loads(out.read_text())]
    return code, {r.item: r for r in rows}, preflight.table(rows)


def test_everything_reachable_with_a_token_is_ready(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    code, rows, text = run(tmp_path, small_paper_config(hub.url))
    assert code == 0, text
    model = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert model.status == "ready" and model.bytes == 4000 + len('{"model_type": "llama"}') + 2  # no original/
    assert rows["tokenizer llama2 (meta-llama/Llama-2-7b-hf)"].status == "ready"
    assert rows[f"corpus th ({hub.url}/files/cc-100/th.txt.xz)"].bytes == 1234
    assert rows["FLORES+ devtest (openlanguagedata/flores_plus)"].status == "ready"
    xlsum = rows["dataset xlsum thai (csebuetnlp/xlsum)"]
    assert xlsum.status == "ready" and "columns id, summary, text, url, title on the first 5 rows" in xlsum.detail
    assert rows["dataset global_mmlu si (CohereLabs/Global-MMLU)"].status == "ready"
    assert rows["dataset belebele eng_Latn (facebook/belebele)"].status == "ready"
    assert rows["mT5 spiece.model (google/mt5-small)"].bytes == 300
    assert rows["BLEURT checkpoint (lucadiliello/BLEURT-20)"].bytes == 5120
    assert rows["items tokenizer (meta-llama/Llama-2-7b-hf)"].status == "ready"
    assert all(r.status == "ready" for r in rows.values()), text


def test_a_bleurt_setting_that_is_no_checkpoint_is_missing(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = small_paper_config(hub.url)
    config["evaluation"]["sum"]["bleurt"] = "google/mt5-small"  # a repository, but no BLEURT config.json
    code, rows, _ = run(tmp_path, config)
    assert code == 1
    row = rows["BLEURT checkpoint (google/mt5-small)"]
    assert row.status == "missing" and "no config.json" in row.detail and row.fix == "fix evaluation.sum.bleurt"


def test_gated_model_without_token_names_the_licence_page(hub, tmp_path):
    code, rows, _ = run(tmp_path, small_paper_config(hub.url))
    assert code == 1
    model = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert model.status == "no access" and "gated" in model.detail
    assert f"accept its licence at {hub.url}/meta-llama/Llama-2-7b-hf" in model.fix
    flores = rows["FLORES+ devtest (openlanguagedata/flores_plus)"]
    assert flores.status == "no access" and f"{hub.url}/datasets/openlanguagedata/flores_plus" in flores.fix


def test_missing_dataset_is_a_row_and_blocks(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = small_paper_config(hub.url)
    config["evaluation"]["datasets"]["xlsum"] = "csebuetnlp/xlsum-gone"
    code, rows, _ = run(tmp_path, config)
    assert code == 1
    row = rows["dataset xlsum (csebuetnlp/xlsum-gone)"]
    assert row.status == "not found" and "no such dataset repository" in row.detail
    assert row.fix.startswith("the id is wrong: fix evaluation.datasets.xlsum (check it at ")


HUB_ROWS = [  # the rows of small_paper_config that read the hub
    "model llama2 (meta-llama/Llama-2-7b-hf)",
    "FLORES+ devtest (openlanguagedata/flores_plus)",
    "dataset belebele (facebook/belebele)",
    "dataset global_mmlu (CohereLabs/Global-MMLU)",
    "dataset mmlu (lighteval/mmlu)",
    "dataset xlsum (csebuetnlp/xlsum)",
    "items tokenizer (meta-llama/Llama-2-7b-hf)",
    "mT5 spiece.model (google/mt5-small)",
    "BLEURT checkpoint (lucadiliello/BLEURT-20)",
]


def offline_unset(tmp_path, monkeypatch, endpoint: str) -> None:
    import huggingface_hub.constants as C

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_ENDPOINT", endpoint)


def test_a_closed_port_as_the_hub_gives_unreachable_rows_and_no_traceback(tmp_path):
    """The command line, HF_HUB_OFFLINE unset, HF_ENDPOINT and the corpus URL on a port nothing listens on."""
    import os
    import subprocess
    import sys

    url = f"http://127.0.0.1:{closed_port()}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(small_paper_config(url)))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN")}
    env.update(HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"))
    argv = ["--configfile", str(config), "--results", str(tmp_path / "results"), "--json", str(tmp_path / "r.json")]
    done = subprocess.run(
        [sys.executable, "-m", "tools.preflight", *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    rows = {r["item"]: preflight.Row(**r) for r in json.loads((tmp_path / "r.json").read_text())}
    first = rows[HUB_ROWS[0]]
    assert first.detail == f"{url}: connection refused (reading meta-llama/Llama-2-7b-hf)"
    for item in HUB_ROWS:
        assert rows[item].status == "unreachable" and rows[item].fix == HUB_UNREACHABLE_FIX, item
    assert rows["FLORES+ devtest (openlanguagedata/flores_plus)"].detail == (
        f"not contacted: the same host failed for {HUB_ROWS[0]}"
    )
    corpus = rows[f"corpus th ({url}/files/cc-100/th.txt.xz)"]
    assert corpus.status == "unreachable" and corpus.detail == "127.0.0.1: connection refused"
    assert "fix languages" not in corpus.fix and "check the network/proxy" in corpus.fix
    assert rows["corpus si (l10n)"].status == "ready"
    assert f"| unreachable | {HUB_ROWS[0]} | {first.detail} | {HUB_UNREACHABLE_FIX} |" in done.stdout


def test_an_unresolvable_host_name_is_unreachable(tmp_path, monkeypatch):
    """Names under the reserved .invalid TLD never resolve (RFC 6761)."""
    offline_unset(tmp_path, monkeypatch, "http://hub.invalid")
    config = small_paper_config("http://corpus.invalid")
    config["evaluation"]["tasks"] = ["mt"]
    code, rows, text = run(tmp_path, config)
    assert code == 1, text
    model = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert model.status == "unreachable" and "http://hub.invalid: host name not resolved" in model.detail
    assert model.fix == HUB_UNREACHABLE_FIX
    corpus = rows["corpus th (http://corpus.invalid/files/cc-100/th.txt.xz)"]
    assert corpus.status == "unreachable" and corpus.detail.startswith("corpus.invalid: host name not resolved")
    assert "the host name in languages.th.corpus.url" in corpus.fix


def test_a_hub_that_never_answers_times_out_once(tmp_path, monkeypatch):
    """A server that accepts connections and never answers: each host waits --timeout once, and the rows after
    the first are not contacted again."""
    with SilentServer() as url:
        offline_unset(tmp_path, monkeypatch, url)
        config = small_paper_config(url)
        config["evaluation"]["tasks"] = ["mt"]
        code, rows, text = run(tmp_path, config, "--timeout", "0.3")
    assert code == 1, text
    model = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert (
        model.status == "timed out"
        and model.detail == f"{url}: no answer within 0.3 s (reading meta-llama/Llama-2-7b-hf)"
    )
    assert model.fix.startswith(HUB_UNREACHABLE_FIX) and "--timeout" in model.fix
    flores = rows["FLORES+ devtest (openlanguagedata/flores_plus)"]
    assert flores.status == "timed out" and flores.detail.startswith("not contacted")
    corpus = rows[f"corpus th ({url}/files/cc-100/th.txt.xz)"]
    assert corpus.status == "timed out" and corpus.detail == "127.0.0.1: no answer within 0.3 s"


@pytest.mark.parametrize(
    "code,status,model_fix,corpus_fix",
    [
        (401, "no access", "log in with a token", "set languages.th.corpus.path"),
        (403, "no access", "accept its licence at", "set languages.th.corpus.path"),
        (404, "not found", "the id is wrong: fix models.llama2.path", "the URL is wrong: fix languages.th.corpus.url"),
        (503, "http error", "rerun later", "rerun later"),
    ],
)
def test_http_statuses_are_distinct_rows_with_their_fix(
    hub, tmp_path, monkeypatch, code, status, model_fix, corpus_fix
):
    """Bare HTTP statuses (no X-Error-Code: a proxy, an outage) for a model, a dataset, FLORES+ and a corpus URL."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.fail_repo("model", "meta-llama/Llama-2-7b-hf", code)
    hub.fail_repo("dataset", "csebuetnlp/xlsum", code)
    hub.fail_repo("dataset", "openlanguagedata/flores_plus", code)
    hub.fail["/files/cc-100/th.txt.xz"] = code
    config = small_paper_config(hub.url)
    config["evaluation"]["tasks"] = ["mt", "sum"]
    rc, rows, text = run(tmp_path, config)
    assert rc == 1, text
    model = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert model.status == status and f"HTTP {code}" in model.detail and model_fix in model.fix, model
    xlsum = rows["dataset xlsum (csebuetnlp/xlsum)"]
    assert xlsum.status == status and f"HTTP {code}" in xlsum.detail, xlsum
    flores = rows["FLORES+ devtest (openlanguagedata/flores_plus)"]
    assert flores.status == status, flores
    if code in (401, 404):  # the id may be wrong: the fix names the key that sets it
        assert "fix evaluation.datasets.xlsum" in xlsum.fix and "fix languages.th.mt.root" in flores.fix
    corpus = rows[f"corpus th ({hub.url}/files/cc-100/th.txt.xz)"]
    assert corpus.status == status and f"HTTP {code}" in corpus.detail and corpus_fix in corpus.fix, corpus
    assert ("fix languages.th.corpus.url" in corpus.fix) == (code == 404)
    assert rows["items tokenizer (meta-llama/Llama-2-7b-hf)"].status == status


def test_a_wrong_revision_names_its_key(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = small_paper_config(hub.url)
    config["models"]["llama2"]["revision"] = "no-such-branch"
    config["evaluation"]["tasks"] = ["mt"]
    code, rows, text = run(tmp_path, config)
    assert code == 1, text
    row = rows["model llama2 (meta-llama/Llama-2-7b-hf)"]
    assert (row.status, row.detail) == ("not found", "meta-llama/Llama-2-7b-hf: no such revision")
    assert row.fix == "the revision is wrong: fix models.llama2.revision: name an existing branch, tag or commit"


def test_greeksum_without_a_folder_names_the_converter(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = small_paper_config(hub.url)
    config["languages"]["el"] = copy.deepcopy(config["languages"]["si"])
    code, rows, _ = run(tmp_path, config)
    assert code == 1
    row = rows["dataset greeksum el"]
    assert row.status == "missing" and "workflow_scripts.harness.datasets greeksum --src" in row.fix


def test_wrong_subset_is_a_row_and_blocks(hub, tmp_path, monkeypatch):
    """Sinhala's XL-Sum archive is absent from this hub: the row lists the languages that exist."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = small_paper_config(hub.url)
    config["evaluation"]["tasks"] = ["sum"]
    hub.repos[("dataset", "csebuetnlp/xlsum")].revisions["main"].joinpath("data/sinhala_XLSum_v2.0.tar.bz2").unlink()
    code, rows, _ = run(tmp_path, config)
    assert code == 1
    row = rows["dataset xlsum sinhala (csebuetnlp/xlsum)"]
    assert row.status == "missing" and "no data/sinhala_XLSum_v2.0.tar.bz2 (languages: thai)" in row.detail
    assert rows["dataset xlsum thai (csebuetnlp/xlsum)"].status == "ready"


def test_too_little_disk_is_a_row_and_blocks(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(preflight, "free_bytes", lambda path: 1000)  # less than the model's 4 KB
    code, rows, text = run(tmp_path, small_paper_config(hub.url))
    assert code == 1
    disk = [r for r in rows.values() if r.item.startswith("disk")]
    assert disk and all(r.status == "missing" for r in disk) and "free 1.0 KB" in disk[0].detail, text


def test_a_mirror_already_downloaded_is_read_offline(hub, tmp_path, monkeypatch):
    from workflow_scripts.harness import datasets as D

    D.download(
        "global_mmlu",
        str(sf.gmmlu_repo(tmp_path / "g")),
        ["si", "en"],
        ["test", "dev"],
        tmp_path / "results/downloads/hf/global_mmlu",
    )
    config = small_paper_config(hub.url)
    config["evaluation"]["tasks"] = ["gmmlu", "gmmlu_en"]
    code, rows, text = run(tmp_path, config, "--offline")
    assert rows["dataset global_mmlu si"].status == "ready" and "mirror" in rows["dataset global_mmlu si"].detail
    assert rows["model llama2 (meta-llama/Llama-2-7b-hf)"].status == "not checked"
    assert code == 0, text
    config["languages"]["el"] = copy.deepcopy(config["languages"]["si"])  # a language the mirror lacks
    code, rows, _ = run(tmp_path, config, "--offline")
    assert code == 1 and "download_all" in rows["dataset global_mmlu el"].fix


def test_offline_marks_what_needs_the_network_not_checked(tmp_path, monkeypatch):
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    code, rows, text = run(tmp_path, small_paper_config("https://data.statmt.org"))
    assert code == 0, text
    assert rows["model llama2 (meta-llama/Llama-2-7b-hf)"].status == "not checked"
    assert "access (gated licence)" in rows["model llama2 (meta-llama/Llama-2-7b-hf)"].detail
    assert rows["dataset xlsum thai (csebuetnlp/xlsum)"].status == "not checked"
    assert rows["corpus si (l10n)"].status == "ready"
    assert all(r.status in ("ready", "not checked") for r in rows.values())
    unchecked = [r for r in rows.values() if r.status == "not checked"]
    assert unchecked and all(r.fix for r in unchecked), text  # each says what to do
    assert rows["model llama2 (meta-llama/Llama-2-7b-hf)"].fix == preflight.OFFLINE_FIX


def test_default_config_passes_offline(tmp_path, monkeypatch, capsys):
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    code = preflight.main(["--configfile", str(REPO / "config.yaml"), "--results", str(tmp_path / "results")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "| ready | model smollm2 |" in out and "| missing |" not in out


@pytest.mark.e2e
@pytest.mark.slow
def test_download_all_fetches_what_preflight_listed_and_the_run_reads_it_offline(hub, tmp_path, monkeypatch):
    """The local rules behind `snakemake download_all` against the hub server; then preflight, offline, finds every
    mirror ready and the model and FLORES+ files in the Hugging Face cache."""
    import huggingface_hub.constants as C

    from tests.conftest import snakemake, tiny_config

    workdir = tmp_path / "work"
    workdir.mkdir()
    paper = small_paper_config(hub.url)
    config = yaml.safe_load(tiny_config(workdir).read_text())
    config["models"]["llama2"] = paper["models"]["llama2"]
    config["languages"]["th"] = paper["languages"]["th"]
    config["evaluation"]["tasks"] = ["mt", "sum", "mc", "gmmlu"]
    config["evaluation"]["mc"]["source"] = "belebele"
    config["evaluation"]["datasets"] = paper["evaluation"]["datasets"]
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": C.HF_HUB_CACHE, "HF_TOKEN": TOKEN}
    done = snakemake(["--configfile", str(path), "--cores", "1", "download_all"], workdir, env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for target in ("models/llama2.source.json", "cc100/th.txt.xz", "flores/th.json", "hf/xlsum", "hf/belebele"):
        assert (workdir / "results" / "downloads" / target).exists(), target
    assert not (workdir / "results/downloads/hf/global_mmlu").exists()  # Global-MMLU has no Thai: not fetched
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    code, rows, text = run(workdir, config, "--results", str(workdir / "results"))
    assert rows["dataset xlsum thai"].status == "ready" and "mirror" in rows["dataset xlsum thai"].detail
    assert rows["model llama2 (meta-llama/Llama-2-7b-hf)"].status == "ready"
    assert rows["FLORES+ devtest (openlanguagedata/flores_plus)"].status == "ready"
    assert code == 0, text
