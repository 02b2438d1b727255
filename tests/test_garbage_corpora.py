"""Garbage corpora through every step command that reads text: NUL-bearing lines are skipped and counted, UTF-16,
compressed and wrong-language files are refused with one line naming the file (exit 1, no traceback)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import l10n_pairs

from workflow_scripts.io import UserError, cli_main, corpus_lines, sniff_encoding
from workflow_scripts.languages import MIN_SCRIPT_SHARE

REPO = Path(__file__).resolve().parent.parent

THAI = [f"ประโยคภาษาไทยที่ {i} สำหรับทดสอบ" for i in range(40)]
ENGLISH = [f"This is English sentence number {i} for the test." for i in range(40)]


def thai_text() -> str:
    return "".join(f"{s}\n" for s in THAI)


# name → (file name, bytes, what the message must say)
GARBAGE = {
    "utf16-bom": ("text.txt", "\ufeff".encode("utf-16-le") + thai_text().encode("utf-16-le"), "is UTF-16 text"),
    "utf16-no-bom": ("text.txt", "".join(f"{s}\n" for s in ENGLISH).encode("utf-16-be"), "is UTF-16 text"),
    "gzip": ("text.txt", gzip.compress(thai_text().encode()), "file is gzip-compressed"),
    "bzip2": ("text.txt", bz2.compress(thai_text().encode()), "file is bzip2-compressed"),
    "zstd": ("text.txt", b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "file is zstd-compressed"),
    "zip": ("text.txt", b"PK\x03\x04" + b"\x00" * 40, "file is zip-compressed"),
    "xz": ("text.txt", lzma.compress(thai_text().encode()), "file is xz-compressed"),
    "all-nul": ("text.txt", b"\x00\x00\x00\n" * 5, "5 with NUL bytes"),
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True)


def assert_one_line_error(result: subprocess.CompletedProcess, path: Path, message: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: {path}: ") and message in errors[0], errors[0]


def split_args(pairs: Path, out: Path, *extra: str) -> list[str]:
    return [
        "workflow_scripts.corpus",
        "split",
        "--pairs",
        str(pairs),
        "--n-heldout",
        "2",
        "--n-mt",
        "2",
        "--seed",
        "0",
        "--out-train",
        str(out / "train.txt"),
        "--out-heldout",
        str(out / "heldout.txt"),
        "--out-mt",
        str(out / "mt.tsv"),
        "--report",
        str(out / "report.json"),
        *extra,
    ]


def sample_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "workflow_scripts.corpus",
        "sample",
        "--input",
        str(corpus),
        "--n",
        "5",
        "--n-heldout",
        "2",
        "--seed",
        "0",
        "--out-train",
        str(out / "train.txt"),
        "--out-heldout",
        str(out / "heldout.txt"),
        "--report",
        str(out / "report.json"),
        *extra,
    ]


# The sampling step reads gzip and xz by their magic bytes, whatever the file's name (corpus.open_text_stream).
SAMPLE_READS = ("gzip", "xz")


@pytest.mark.parametrize("kind", sorted(set(GARBAGE) - set(SAMPLE_READS)))
def test_sample_refuses_garbage(tmp_path, kind):
    name, content, message = GARBAGE[kind]
    corpus = tmp_path / name
    corpus.write_bytes(content)
    assert_one_line_error(run(*sample_args(corpus, tmp_path, "--lang", "th")), corpus, message)
    assert not (tmp_path / "train.txt").exists()


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_split_refuses_garbage(tmp_path, kind):
    name, content, message = GARBAGE[kind]
    pairs = tmp_path / name
    if kind.startswith("utf16"):  # the same file shape, as pairs
        tsv = "".join(f"{e}\t{t}\n" for e, t in zip(ENGLISH, THAI, strict=True))
        content = ("\ufeff" + tsv).encode("utf-16-le") if kind == "utf16-bom" else tsv.encode("utf-16-be")
    pairs.write_bytes(content)
    result = run(*split_args(pairs, tmp_path, "--lang", "th"))
    assert_one_line_error(result, pairs, "no sentence pairs" if kind == "all-nul" else message)
    assert not (tmp_path / "train.txt").exists()


def test_sample_reads_gzip_and_xz_by_their_magic_bytes_whatever_the_name(tmp_path):
    good = tmp_path / "th.txt.xz"
    good.write_bytes(lzma.compress(thai_text().encode()))
    result = run(*sample_args(good, tmp_path, "--lang", "th"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["script"] == "Thai" and report["script_share"] == 1.0
    for name, content in [
        ("si.txt.xz", gzip.compress(thai_text().encode())),  # gzip named .xz
        ("th.txt", gzip.compress(thai_text().encode())),  # gzip named .txt
        ("my.txt.xz", thai_text().encode()),  # plain text named .xz
        ("xz.txt.gz", lzma.compress(thai_text().encode())),  # xz named .gz
    ]:
        (tmp_path / name).write_bytes(content)
        result = run(*sample_args(tmp_path / name, tmp_path, "--lang", "th"))
        assert result.returncode == 0, (name, result.stderr)
    utf16_in_xz = tmp_path / "te.txt.xz"
    utf16_in_xz.write_bytes(lzma.compress(GARBAGE["utf16-bom"][1]))
    assert_one_line_error(run(*sample_args(utf16_in_xz, tmp_path)), utf16_in_xz, "decompressed corpus file is UTF-16")


def test_sample_skips_and_counts_nul_lines(tmp_path):
    corpus = tmp_path / "th.txt.xz"
    text = thai_text().encode() + b"\x00\x00binary\x00record\n" * 3 + "ข้อความ\x00ไทย\n".encode()
    corpus.write_bytes(lzma.compress(text))
    result = run(*sample_args(corpus, tmp_path, "--lang", "th"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["skipped_nul"] == 4 and report["lines_valid"] == len(THAI)
    written = (tmp_path / "train.txt").read_bytes() + (tmp_path / "heldout.txt").read_bytes()
    assert b"\x00" not in written


def test_split_skips_and_counts_nul_lines(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    good = "".join(f"{e}\t{t}\n" for e, t in zip(ENGLISH, THAI, strict=True)).encode()
    pairs.write_bytes(good + b"nul\x00english\t\xe0\xb8\x81\x00\n" * 2)
    result = run(*split_args(pairs, tmp_path, "--lang", "th"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["pairs_file_lines"]["skipped_nul"] == 2 and report["pairs_in"] == len(THAI)
    assert report["target_script"] == "Thai" and report["target_script_share"] == 1.0
    assert b"\x00" not in (tmp_path / "train.txt").read_bytes()


def test_english_as_thai_is_refused_by_sample_and_split(tmp_path):
    corpus = tmp_path / "th.txt"
    corpus.write_text("".join(f"{s}\n" for s in ENGLISH + THAI[:10]), encoding="utf-8")
    # The sample takes 42 of the 50 lines, so at most 10 of them (24%) are Thai whichever are drawn.
    args = sample_args(corpus, tmp_path, "--lang", "th")
    result = run(*[("40" if a == "5" and args[i - 1] == "--n" else a) for i, a in enumerate(args)])
    assert_one_line_error(result, corpus, "of the corpus sample's 42 lines contain Thai script")
    assert "'th'" in result.stderr and "at least 50% needed" in result.stderr
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{e}\t{e} (translated)\n" for e in ENGLISH), encoding="utf-8")
    result = run(*split_args(pairs, tmp_path, "--lang", "th"))
    assert_one_line_error(result, pairs, "only 0.0% of the pairs' target side's 40 lines contain Thai script")


@pytest.mark.parametrize("lang", ["th", "si"])
def test_the_defaults_l10n_data_passes_the_script_check(tmp_path, lang):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{e}\t{t}\n" for e, t in l10n_pairs(lang)), encoding="utf-8")
    result = run(*split_args(pairs, tmp_path, "--lang", lang))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["target_script_share"] >= MIN_SCRIPT_SHARE


def test_missing_file_is_one_line(tmp_path):
    missing = tmp_path / "nope.tsv"
    result = run(*split_args(missing, tmp_path))
    assert_one_line_error(result, missing, "no such file; check the path")


def test_a_bug_keeps_its_traceback(capsys):
    def buggy():
        raise KeyError("bug")

    with pytest.raises(KeyError):
        cli_main(buggy)

    def expected():
        raise UserError("f.txt: the corpus is empty; give text")

    with pytest.raises(SystemExit) as exit_:
        cli_main(expected)
    assert exit_.value.code == 1 and capsys.readouterr().err == "error: f.txt: the corpus is empty; give text\n"


def test_sniff_encoding_leaves_utf8_alone():
    assert sniff_encoding(thai_text().encode()) is None
    assert sniff_encoding("".join(f"{s}\n" for s in ENGLISH).encode()) is None
    assert sniff_encoding(b"") is None
    assert sniff_encoding(b"\xff\xfe broken\n" + thai_text().encode()) is None  # an invalid line, not UTF-16
    assert sniff_encoding(thai_text().encode("utf-16-le")) == "UTF-16"  # no byte order mark: spaces and line ends


def test_corpus_lines_counts_nul_lines(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(thai_text().encode() + b"a\x00b\n\x00\n")
    lines, stats = corpus_lines(path, what="corpus D")
    assert lines == THAI and stats["skipped_nul"] == 2 and stats["first_nul_line"] == len(THAI) + 1


@pytest.mark.parametrize("kind", ["utf16-bom", "gzip", "all-nul"])
def test_vocab_aux_refuses_garbage(tmp_path, kind):
    name, content, message = GARBAGE[kind]
    corpus = tmp_path / name
    corpus.write_bytes(content)
    args = [
        "aux",
        "--source-tokenizer",
        str(tmp_path / "none"),
        "--corpus",
        str(corpus),
        "--vocab-size",
        "300",
        "--out",
        str(tmp_path / "aux.json"),
    ]
    assert_one_line_error(run("workflow_scripts.vocab", *args), corpus, message)


@pytest.mark.parametrize("kind", ["utf16-no-bom", "bzip2", "all-nul"])
def test_evaluate_ppl_refuses_garbage(tmp_path, kind):
    name, content, message = GARBAGE[kind]
    text = tmp_path / name
    text.write_bytes(content)
    args = [
        "--model",
        str(tmp_path / "no-model"),
        "--cell",
        "{}",
        "--out",
        str(tmp_path / "ppl.json"),
        "--text",
        str(text),
    ]
    assert_one_line_error(run("workflow_scripts.perplexity", *args), text, message)
    assert not (tmp_path / "ppl.json").exists()


def test_vocab_aux_skips_and_logs_nul_lines(tmp_path, smollm2_tokenizer_dir, thai_lines):
    corpus = tmp_path / "d.txt"
    corpus.write_bytes("".join(f"{s}\n" for s in thai_lines[:300]).encode() + b"x\x00y\n" * 3)
    log = tmp_path / "aux.log"
    args = [
        "aux",
        "--source-tokenizer",
        str(smollm2_tokenizer_dir),
        "--corpus",
        str(corpus),
        "--vocab-size",
        "400",
        "--out",
        str(tmp_path / "aux.json"),
        "--log",
        str(log),
    ]
    result = run("workflow_scripts.vocab", *args)
    assert result.returncode == 0, result.stderr
    assert "skipped 3 line(s) that contain NUL bytes (first: line 301)" in log.read_text()


def test_l10n_package_of_another_language_is_one_line(tmp_path):
    deb = next((REPO / "resources" / "l10n").glob("libreoffice-l10n-th_*.deb"))
    args = ["--deb", str(deb), "--lang", "si", "--out", str(tmp_path / "p.tsv"), "--report", str(tmp_path / "r.json")]
    assert_one_line_error(run("workflow_scripts.l10n", *args), deb, "no .mo catalogues for language 'si'")
