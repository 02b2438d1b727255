"""The data stage: splitting pairs, streaming reservoir sampling of CC-100-style files, the FLORES-200 loader."""

from __future__ import annotations

import gzip
import importlib.util
import json
import lzma
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from workflow_scripts.corpus import (
    align_flores,
    flores_code,
    load_flores_pairs,
    main,
    sample_lines,
    split_pairs,
)
from workflow_scripts.io import read_json, read_lines, read_pairs

HAS_PARQUET = any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet"))

# 100 pairs, unique on both sides; English 11 characters, target 4.
PAIRS = [(f"english {i:03d}", f"t{i:03d}") for i in range(100)]


# ---------------------------------------------------------------------------------------------------------------- split


def test_split_sizes_and_disjointness():
    train, heldout, mt = split_pairs(PAIRS, n_train=30, n_heldout=20, n_mt=10, seed=1)
    assert (len(train), len(heldout), len(mt)) == (30, 20, 10)
    mt_targets = [t for _, t in mt]
    everything = train + heldout + mt_targets
    assert len(set(everything)) == 60  # pairwise disjoint and no repeats
    assert set(mt) <= set(PAIRS)
    assert set(everything) <= {t for _, t in PAIRS}


@pytest.mark.parametrize("n_train", [None, 0])
def test_split_all_remaining(n_train):
    train, heldout, mt = split_pairs(PAIRS, n_train=n_train, n_heldout=20, n_mt=10, seed=1)
    assert len(train) == 70
    assert set(train) | set(heldout) | {t for _, t in mt} == {t for _, t in PAIRS}


def test_split_deterministic_and_seed_dependent():
    a = split_pairs(PAIRS, n_train=30, n_heldout=20, n_mt=10, seed=1)
    assert a == split_pairs(PAIRS, n_train=30, n_heldout=20, n_mt=10, seed=1)
    # The split depends on the set of pairs, not on their order in the file.
    assert a == split_pairs(PAIRS[::-1], n_train=30, n_heldout=20, n_mt=10, seed=1)
    b = split_pairs(PAIRS, n_train=30, n_heldout=20, n_mt=10, seed=2)
    assert a[0] != b[0] and a[1] != b[1] and a[2] != b[2]


def test_split_is_a_shuffle_not_a_prefix():
    train, _, mt = split_pairs(PAIRS, n_train=None, n_heldout=20, n_mt=10, seed=3)
    assert mt != PAIRS[:10]
    assert sorted(train) != train  # the sorted input order was shuffled


def test_split_too_few_pairs():
    with pytest.raises(ValueError, match=r"100 available, 110 asked for"):
        split_pairs(PAIRS, n_train=80, n_heldout=20, n_mt=10, seed=0)
    # "All remaining" still needs one line for D.
    with pytest.raises(ValueError, match=r"100 available, 101 asked for"):
        split_pairs(PAIRS, n_train=None, n_heldout=60, n_mt=40, seed=0)
    assert len(split_pairs(PAIRS, n_train=None, n_heldout=59, n_mt=40, seed=0)[0]) == 1


def test_split_rejects_duplicates_and_negative_sizes():
    with pytest.raises(ValueError, match="target side"):
        split_pairs([("a", "x"), ("b", "x"), ("c", "y")], n_train=1, n_heldout=1, n_mt=0, seed=0)
    with pytest.raises(ValueError, match="English side"):
        split_pairs([("a", "x"), ("a", "y"), ("c", "z")], n_train=1, n_heldout=1, n_mt=0, seed=0)
    with pytest.raises(ValueError, match="negative"):
        split_pairs(PAIRS, n_train=1, n_heldout=-1, n_mt=0, seed=0)


def test_split_cli(tmp_path):
    pairs_tsv = tmp_path / "pairs.tsv"
    pairs_tsv.write_text("".join(f"{e}\t{t}\n" for e, t in PAIRS), encoding="utf-8")
    out = {k: tmp_path / f"{k}.txt" for k in ("train", "heldout", "mt")}
    args = ["split", "--pairs", str(pairs_tsv), "--n-train", "0", "--n-heldout", "20", "--n-mt", "10", "--seed", "4"]
    outs = ["--out-train", str(out["train"]), "--out-heldout", str(out["heldout"]), "--out-mt", str(out["mt"])]
    main([*args, *outs, "--report", str(tmp_path / "r.json"), "--label", "stand-in for CC-100 / FLORES-200: test"])
    train, heldout, mt = split_pairs(PAIRS, n_train=None, n_heldout=20, n_mt=10, seed=4)
    assert read_lines(out["train"]) == train
    assert read_lines(out["heldout"]) == heldout
    assert read_pairs(out["mt"]) == mt
    report = read_json(tmp_path / "r.json")
    assert report["counts"] == {"train": 70, "heldout": 20, "mt": 10}
    assert report["seed"] == 4 and report["source"] == "stand-in for CC-100 / FLORES-200: test"
    assert report["mean_chars_per_line"] == {"train": 4.0, "heldout": 4.0, "mt_english": 11.0, "mt_target": 4.0}


def test_read_pairs_tsv_names_bad_line(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text("a\tb\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected"):
        read_pairs(p)


# --------------------------------------------------------------------------------------------------------------- sample


def _write(path: Path, data: bytes) -> Path:
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "wb") as f:
        f.write(data)
    return path


def _lines_file(tmp_path: Path, lines: list[str], suffix: str = ".txt") -> Path:
    return _write(tmp_path / f"corpus{suffix}", "".join(f"{s}\n" for s in lines).encode())


THAI = [f"ประโยคที่ {i} ของคลังข้อความ" for i in range(200)]


@pytest.mark.parametrize("suffix", [".txt", ".gz", ".xz"])
@pytest.mark.parametrize("external", [True, False])
def test_sample_exact_counts_disjoint_and_reader_independent(tmp_path, suffix, external):
    path = _lines_file(tmp_path, THAI, suffix)
    sample, heldout, stats = sample_lines(path, n=50, n_heldout=30, seed=7, external=external)
    assert len(sample) == 50 and len(heldout) == 30
    assert len(set(sample)) == 50 and len(set(heldout)) == 30 and not set(sample) & set(heldout)
    assert set(sample) | set(heldout) <= set(THAI)
    assert stats["lines_total"] == stats["lines_valid"] == 200
    assert stats["n_sample"] == 50 and stats["n_heldout"] == 30 and stats["lines_per_second"] > 0
    # Same seed, same lines whatever the compression, the decompressor or the block size.
    plain = _lines_file(tmp_path, THAI, ".plain")
    assert (sample, heldout) == sample_lines(plain, n=50, n_heldout=30, seed=7, block_bytes=100)[:2]


def test_sample_seed_dependence(tmp_path):
    path = _lines_file(tmp_path, THAI)
    a = sample_lines(path, n=20, n_heldout=10, seed=1)[:2]
    assert a == sample_lines(path, n=20, n_heldout=10, seed=1)[:2]
    b = sample_lines(path, n=20, n_heldout=10, seed=2)[:2]
    assert set(a[0]) != set(b[0]) and set(a[1]) != set(b[1])


def _chi_square(counts: Counter, keys: list[str], expected: float) -> float:
    return sum((counts[k] - expected) ** 2 / expected for k in keys)


def test_sample_uniform_small_file(tmp_path):
    """Each of 20 lines lands in D with frequency n/20 and in the held-out set with frequency n_heldout/20."""
    lines = [f"line {i:02d}" for i in range(20)]
    path = _lines_file(tmp_path, lines)
    runs = 2000
    in_sample, in_heldout = Counter(), Counter()
    for seed in range(runs):
        sample, heldout, _ = sample_lines(path, n=4, n_heldout=1, seed=seed, oversample=0.0)
        in_sample.update(sample)
        in_heldout.update(heldout)
    # Chi-square with 19 degrees of freedom: mean 19, P(> 50) ≈ 1e-4. A sampler biased toward the first or last lines
    # (no replacement, an off-by-one skip, a fixed split of the reservoir) scores in the hundreds.
    assert _chi_square(in_sample, lines, runs * 4 / 20) < 50
    assert _chi_square(in_heldout, lines, runs * 1 / 20) < 50


def test_sample_uniform_long_stream_many_blocks(tmp_path):
    """Algorithm L's skips across many small blocks: 200 lines, 3 drawn, each with frequency 3/200."""
    lines = [f"l{i:03d}" for i in range(200)]
    path = _lines_file(tmp_path, lines)
    runs = 2000
    counts, first_half = Counter(), 0
    for seed in range(runs):
        sample, _, _ = sample_lines(path, n=3, n_heldout=0, seed=seed, oversample=0.0, block_bytes=64)
        counts.update(sample)
        first_half += sum(s < "l100" for s in sample)
    # 199 degrees of freedom: mean 199, sd 20; 300 is five sd out. The halves are a sharper test of position bias:
    # 3000 draws, half expected in each, sd 27.
    assert _chi_square(counts, lines, runs * 3 / 200) < 300
    assert abs(first_half - runs * 3 / 2) < 150


def test_sample_cleaning_counts(tmp_path):
    data = (
        b"good one\n"
        + b"\xff\xfe bad bytes\n"
        + b"   \t \n"
        + b"\n"
        + "สวัสดี ครับ   \t\n".encode()
        + "ตัด".encode()[:-1]  # a truncated Thai character
        + b"\n"
        + b"carriage\rreturn\r\n"
        + b"last line without newline"
    )
    path = _write(tmp_path / "mixed.txt.xz", data)
    sample, heldout, stats = sample_lines(path, n=3, n_heldout=1, seed=0, block_bytes=16)
    assert sorted(sample + heldout) == sorted(["good one", "สวัสดี ครับ", "carriage return", "last line without newline"])
    assert stats["lines_total"] == 8
    assert stats["skipped_invalid_utf8"] == 2
    assert stats["skipped_empty"] == 2
    assert stats["skipped_short"] == 0
    assert stats["carriage_returns_replaced"] == 1
    assert stats["lines_valid"] == 4


def test_sample_min_chars(tmp_path):
    path = _lines_file(tmp_path, ["ab", "abc", "", "abcd", "abcde"])
    sample, _, stats = sample_lines(path, n=2, n_heldout=0, seed=0, min_chars=4)
    assert sorted(sample) == ["abcd", "abcde"]
    assert (stats["skipped_short"], stats["skipped_empty"], stats["lines_valid"]) == (2, 1, 2)


def test_sample_duplicates_are_skipped_and_disjoint(tmp_path):
    lines = ["same"] * 50 + [f"other {i}" for i in range(10)]
    path = _lines_file(tmp_path, lines)
    skipped = 0
    for seed in range(20):
        sample, heldout, stats = sample_lines(path, n=6, n_heldout=3, seed=seed, oversample=10.0)
        assert len(set(sample)) == 6 and len(set(heldout)) == 3 and not set(sample) & set(heldout)
        skipped += stats["duplicates_skipped"]
    # The reservoir holds all 60 lines, 50 of them "same": collecting nine distinct strings meets "same" again
    # unless it comes near the end, so over 20 seeds duplicates must have been skipped many times.
    assert skipped > 20
    with pytest.raises(ValueError, match="only 2 distinct lines"):
        sample_lines(_lines_file(tmp_path, ["a", "b"] * 10), n=2, n_heldout=1, seed=0, oversample=10.0)


def test_sample_too_few_lines(tmp_path):
    path = _lines_file(tmp_path, ["one", "", "two", "three", "four", "five"])
    with pytest.raises(ValueError, match=r"corpus.txt: too few valid lines: 5 .* 6 asked for"):
        sample_lines(path, n=4, n_heldout=2, seed=0)
    assert len(sample_lines(path, n=4, n_heldout=1, seed=0)[1]) == 1


@pytest.mark.parametrize("external", [True, False])
def test_sample_corrupt_xz_is_an_error_not_a_short_file(tmp_path, external):
    good = lzma.compress("".join(f"{s}\n" for s in THAI).encode())
    path = tmp_path / "broken.txt.xz"
    path.write_bytes(good[: len(good) // 2])  # truncated download
    with pytest.raises((OSError, EOFError, lzma.LZMAError)):
        sample_lines(path, n=5, n_heldout=0, seed=0, external=external)


def test_sample_cli(tmp_path):
    path = _lines_file(tmp_path, THAI, ".xz")
    train, held, rep = tmp_path / "d.txt", tmp_path / "h.txt", tmp_path / "r.json"
    args = ["sample", "--input", str(path), "--n", "40", "--n-heldout", "10", "--seed", "3"]
    main([*args, "--out-train", str(train), "--out-heldout", str(held), "--report", str(rep)])
    expected = sample_lines(path, n=40, n_heldout=10, seed=3)
    assert read_lines(train) == expected[0] and read_lines(held) == expected[1]
    report = json.loads(rep.read_text(encoding="utf-8"))
    assert report["n_sample"] == 40 and report["n_heldout"] == 10 and report["seed"] == 3
    assert report["mean_chars_sample"] == round(sum(map(len, expected[0])) / 40, 2)


# --------------------------------------------------------------------------------------------------------------- flores


def test_flores_codes():
    # the paper's FLORES codes name individual languages where CLDR names the macrolanguage (arb, swh)
    assert (flores_code("th"), flores_code("si"), flores_code("sw"), flores_code("ar")) == (
        "tha_Thai",
        "sin_Sinh",
        "swh_Latn",
        "arb_Arab",
    )
    # any other language: its ISO 639-3 code and its likely script, from CLDR
    assert (flores_code("km"), flores_code("am")) == ("khm_Khmr", "amh_Ethi")
    assert flores_code("kor_Hang") == "kor_Hang"
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        flores_code("xx")


def _frames():
    en = pd.DataFrame({"id": [2, 0, 1, 3], "text": ["Two.", "Zero.", "One\tsplit.", "Three."]})
    th = pd.DataFrame({"id": [0, 1, 2, 3], "text": ["ศูนย์", "หนึ่ง", "สอง", "สาม\n"]})
    return en, th


def test_align_flores_joins_on_id():
    en, th = _frames()
    assert align_flores(en, th) == [("Zero.", "ศูนย์"), ("One split.", "หนึ่ง"), ("Two.", "สอง"), ("Three.", "สาม")]
    picked = align_flores(en, th, n=2, seed=5)
    assert len(picked) == 2 and set(picked) <= set(align_flores(en, th))
    assert picked == align_flores(en, th, n=2, seed=5)
    assert {tuple(align_flores(en, th, n=2, seed=s)) for s in range(20)} != {tuple(picked)}  # the seed matters
    with pytest.raises(ValueError, match="4 available, n=5"):
        align_flores(en, th, n=5)
    with pytest.raises(ValueError, match="not aligned: 1 ids only in English"):
        align_flores(en, th[th["id"] != 3])


def test_flores_missing_language_file(tmp_path):
    (tmp_path / "devtest").mkdir()
    (tmp_path / "devtest" / "eng_Latn.parquet").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"no FLORES parquet for tha_Thai .*devtest/tha_Thai.parquet"):
        load_flores_pairs(tmp_path, "th")
    with pytest.raises(FileNotFoundError, match="neither a folder nor a hub id"):
        load_flores_pairs(tmp_path / "not" / "there", "th")


@pytest.mark.skipif(HAS_PARQUET, reason="a parquet engine is installed")
def test_flores_without_parquet_engine_says_what_to_install(tmp_path):
    (tmp_path / "devtest").mkdir()
    for code in ("eng_Latn", "sin_Sinh"):
        (tmp_path / "devtest" / f"{code}.parquet").write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=r"add pyarrow to requirements\.txt"):
        load_flores_pairs(tmp_path, "si")


@pytest.mark.skipif(not HAS_PARQUET, reason="no parquet engine (pyarrow) installed")
def test_flores_parquet_layout_and_cli(tmp_path):
    en, th = _frames()
    (tmp_path / "devtest").mkdir()
    en.to_parquet(tmp_path / "devtest" / "eng_Latn.parquet")
    th.to_parquet(tmp_path / "devtest" / "tha_Thai.parquet")
    assert load_flores_pairs(tmp_path, "th") == align_flores(en, th)
    out = tmp_path / "mt.tsv"
    main(["flores", "--root", str(tmp_path), "--lang", "th", "--n", "3", "--seed", "1", "--out", str(out)])
    assert read_pairs(out) == align_flores(en, th, n=3, seed=1)
