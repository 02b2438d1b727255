"""Publishing cells (workflow_scripts/publish/upload.py, rule publish, tools/preflight/publish.py) against the local hub
server (tests/hub_server.py) through the real huggingface_hub client: the upload, a second publish that sends
nothing, a failed upload that resumes, refused tokens, the planned repositories and preflight's rows."""

from __future__ import annotations

import json

import pytest

from tests.conftest import planned_jobs, snakemake, tiny_config
from tests.hub_server import ORG, READ_TOKEN, TOKEN, USER, Hub, HubServer
from tests.publish_fixtures import fake_run
from tools.preflight.publish import publish_rows
from tools.preflight.rows import NO_TOKEN, NO_WRITE, READY
from workflow_scripts.io import UserError
from workflow_scripts.plan import paths
from workflow_scripts.publish.plan import repo_id
from workflow_scripts.publish.upload import publish

REPO_ID = f"{ORG}/vocabexp-tiny-th-Mean"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The local hub, the client pointed at it with the write token, Xet off (the regular and LFS protocol)."""
    import huggingface_hub.constants as C

    h = Hub(storage=tmp_path / "hub")
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(C, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the tests' default (conftest) is offline; the jobs reach this hub
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with HubServer(h) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        yield h


@pytest.fixture
def cell(tmp_path):
    """A cell's model folder (weights, config, a stale README.md and Snakemake's marker), its card and a GGUF file."""
    model = tmp_path / "run" / "Mean" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "llama"}')
    (model / "model.safetensors").write_bytes(bytes(range(256)) * 40)
    (model / "README.md").write_text("an older card")
    (model / ".snakemake_timestamp").write_text("")
    card = tmp_path / "run" / "Mean" / "card" / "README.md"
    card.parent.mkdir()
    card.write_text("---\nlicense: mit\n---\n\n# the card\n")
    gguf = tmp_path / "run" / "Mean" / "gguf" / "model.f16.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(5000))
    return model, card, gguf


def uploads(requests: list[str]) -> list[str]:
    """The requests that send content: LFS objects and commits."""
    return [r for r in requests if r.startswith("PUT /lfs-upload/") or "/commit/" in r]


def test_publish_uploads_the_cell_once_and_a_second_publish_sends_nothing(hub, cell, tmp_path):
    model, card, gguf = cell
    out = tmp_path / "run" / "Mean" / "publish.json"
    record = publish(REPO_ID, model, card, [gguf], private=True, out=out)
    files = hub.repo_files(REPO_ID)
    assert files["README.md"] == card.read_bytes()  # the card, not the folder's older README.md
    assert files["model.safetensors"] == (model / "model.safetensors").read_bytes()
    assert files["gguf/model.f16.gguf"] == gguf.read_bytes() and "config.json" in files
    assert ".snakemake_timestamp" not in files
    assert record["uploaded"] and json.loads(out.read_text())["commit"] == record["commit"]
    assert set(record["files"]) == {"README.md", "config.json", "model.safetensors", "gguf/model.f16.gguf"}
    assert len([r for r in uploads(hub.requests) if r.startswith("PUT")]) == 2  # the weights and the GGUF, as LFS

    before = len(hub.requests)
    again = publish(REPO_ID, model, card, [gguf], private=True, out=out)
    assert uploads(hub.requests[before:]) == []  # nothing sent, no commit
    assert not again["uploaded"] and again["commit"] == record["commit"]

    card.write_text("---\nlicense: mit\n---\n\n# the card, regenerated\n")
    before = len(hub.requests)
    changed = publish(REPO_ID, model, card, [gguf], private=True, out=out)
    assert changed["uploaded"] and uploads(hub.requests[before:]) == [f"POST /api/models/{REPO_ID}/commit/main"]
    assert hub.repo_files(REPO_ID)["README.md"] == card.read_bytes()


def test_a_failed_upload_resumes_on_the_next_run(hub, cell, tmp_path):
    model, card, gguf = cell
    out = tmp_path / "publish.json"
    hub.fail[f"/api/models/{REPO_ID}/commit/"] = 500  # the LFS objects go up, the commit fails
    with pytest.raises(Exception, match="500"):
        publish(REPO_ID, model, card, [gguf], private=False, out=out)
    assert not out.exists() and "model.safetensors" not in hub.repo_files(REPO_ID)
    assert len(hub.lfs) == 2
    del hub.fail[f"/api/models/{REPO_ID}/commit/"]
    before = len(hub.requests)
    record = publish(REPO_ID, model, card, [gguf], private=False, out=out)
    sent = uploads(hub.requests[before:])
    assert sent == [f"POST /api/models/{REPO_ID}/commit/main"]  # the objects the hub holds are not sent again
    assert (
        record["uploaded"]
        and hub.repo_files(REPO_ID)["model.safetensors"] == (model / "model.safetensors").read_bytes()
    )


@pytest.mark.parametrize(("token", "message"), [(None, "no Hugging Face token|HTTP 401"), (READ_TOKEN, "HTTP 403")])
def test_a_refused_token_is_the_users_error(hub, cell, tmp_path, monkeypatch, token, message):
    model, card, _ = cell
    if token is None:
        monkeypatch.delenv("HF_TOKEN")
    else:
        monkeypatch.setenv("HF_TOKEN", token)
    with pytest.raises(UserError, match=message) as e:
        publish(REPO_ID, model, card, [], private=True, out=tmp_path / "publish.json")
    assert "HF_TOKEN" in str(e.value) and "tools.preflight" in str(e.value)


def test_offline_mode_is_the_users_error(hub, cell, tmp_path, monkeypatch):
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    model, card, _ = cell
    with pytest.raises(UserError, match="HF_HUB_OFFLINE is set"):
        publish(REPO_ID, model, card, [], private=True, out=tmp_path / "publish.json")


def test_preflight_rows_per_repository(hub, monkeypatch):
    hub.create(f"{ORG}/exists")
    config = {
        "models": {"tiny": {}},
        "languages": {"th": {}, "si": {}},
        "methods": [
            {"init": "none", "procedure": "none"},
            {"init": "Mean", "k": 50, "procedure": "2x2LS", "objective": "clm", "seq_len": 64},
        ],
    }
    config["publish"] = {"repo_prefix": USER, "languages": ["th"]}
    rows = publish_rows(config, online=True)
    assert [(r.status, r.item) for r in rows] == [(READY, f"publish {USER}/tiny-th-Mean.k50.2x2LS.clm.L64")]
    assert "created on the first upload" in rows[0].detail
    config["publish"] = {"repo_prefix": "other/x"}  # an organization where the user may only read
    assert {r.status for r in publish_rows(config, online=True)} == {NO_WRITE}
    monkeypatch.setenv("HF_TOKEN", READ_TOKEN)
    config["publish"] = {"repo_prefix": USER, "languages": ["th"]}
    assert [r.status for r in publish_rows(config, online=True)] == [NO_WRITE]
    monkeypatch.delenv("HF_TOKEN")
    assert [r.status for r in publish_rows(config, online=True)] == [NO_TOKEN]
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert publish_rows({**config, "publish": {"repo_prefix": None}}, online=True) == []
    assert any(r.startswith("GET /api/whoami-v2") for r in hub.requests)


def test_repository_names_are_valid_hub_names():
    assert repo_id("alice", "smollm2", "th", "Mean.k100.2x2LS.clm.L128") == "alice/smollm2-th-Mean.k100.2x2LS.clm.L128"
    assert repo_id("lab/vocabexp", "m", "km", "MuMo.Random") == "lab/vocabexp-m-km-MuMo.Random"
    long = repo_id("lab/" + "x" * 80, "m", "th", "Mean.k100.2x2LS.clm.L128")
    assert len(long.split("/")[1]) == 96 and long != repo_id("lab/" + "x" * 80, "m", "th", "Mean.k50.2x2LS.clm.L128")


def test_the_dry_run_lists_each_repository(tmp_path):
    path = tiny_config(tmp_path, publish={"repo_prefix": "lab/vocabexp", "methods": ["Mean"]})
    result = snakemake(["-n", "--quiet", "rules", "--configfile", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert planned_jobs(result.stdout)["publish"] == 1
    assert "publish: 1 cell(s) to the hub (private):" in result.stderr
    assert "tiny/th/Mean.k50.2x2LS.clm.L64 -> lab/vocabexp-tiny-th-Mean.k50.2x2LS.clm.L64" in result.stderr
    bad = tiny_config(tmp_path, publish={"repo_prefix": "lab", "methods": ["Merge"]})
    result = snakemake(["-n", "--configfile", str(bad)], tmp_path)
    assert result.returncode != 0 and "publish.methods: 'Merge' names no adapted cell" in result.stdout + result.stderr


@pytest.mark.slow  # a Snakemake run of the card and publish jobs alone: 5-10 s of CPU
def test_publish_rule_uploads_then_a_rerun_sends_nothing(hub, tmp_path):
    config, run, cells = fake_run(tmp_path, publish={"repo_prefix": ORG, "private": False})
    targets = [paths.publish_record(m, lang, x.slug, "results/default") for m, lang, x in cells if x.slug != "Source"]
    args = [*targets, "--cores", "1", "--allowed-rules", "model_card", "publish", "--configfile", str(config)]
    result = snakemake(args, tmp_path)
    assert result.returncode == 0, result.stderr
    for model, lang, m in cells[1:]:
        record = json.loads((tmp_path / paths.publish_record(model, lang, m.slug, "results/default")).read_text())
        assert record["repo_id"] == f"{ORG}/{model}-{lang}-{m.slug}" and record["uploaded"]
        card = (run / model / lang / m.slug / "card" / "README.md").read_bytes()
        assert hub.repo_files(record["repo_id"])["README.md"] == card
    (tmp_path / targets[0]).unlink()  # the record lost: the job runs again and finds nothing to send
    before = len(hub.requests)
    result = snakemake(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert uploads(hub.requests[before:]) == [] and any("/preupload/" in r for r in hub.requests[before:])
    assert not json.loads((tmp_path / targets[0]).read_text())["uploaded"]
