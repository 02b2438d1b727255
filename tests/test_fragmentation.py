"""Fragmentation table (workflow_scripts/fragmentation.py) on tokenizers whose counts are worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from workflow_scripts import fragmentation as F


def _bytes_tokenizer() -> Tokenizer:
    """Byte-level BPE without merges: one token per UTF-8 byte."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def _words_tokenizer() -> Tokenizer:
    """Whitespace words; unknown words are one <unk> token."""
    tok = Tokenizer(models.WordLevel({"<unk>": 0, "ab": 1}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


TEXTS = {
    "en": ["ab c", "hello"],  # bytes 4 + 5 = 9; words 2 + 1 = 3; characters 9
    "th": ["กข", "ก ข"],  # Thai letters are 3 bytes: 6 + 7 = 13; words 1 + 2 = 3; characters 5
}


def test_counts_by_hand():
    frame = F.fragmentation({"bytes": _bytes_tokenizer(), "words": _words_tokenizer()}, TEXTS, "hand-made")
    assert list(frame.columns) == F.COLUMNS and len(frame) == 4
    got = {(r.tokenizer, r.language): (r.tokens, r.characters) for r in frame.itertuples()}
    assert got == {("bytes", "en"): (9, 9), ("bytes", "th"): (13, 5), ("words", "en"): (3, 9), ("words", "th"): (3, 5)}
    row = frame[(frame.tokenizer == "bytes") & (frame.language == "th")].iloc[0]
    assert row.tokens_per_sentence == pytest.approx(6.5) and row.tokens_per_character == pytest.approx(13 / 5)
    assert row.ratio_to_english == pytest.approx(13 / 9) and row.texts == "hand-made"
    words = frame[frame.tokenizer == "words"].set_index("language")
    assert words.loc["en", "ratio_to_english"] == 1.0 and words.loc["th", "ratio_to_english"] == 1.0
    # Without English there is no ratio.
    no_en = F.fragmentation({"bytes": _bytes_tokenizer()}, {"th": TEXTS["th"]})
    assert no_en["ratio_to_english"].isna().all()
    with pytest.raises(ValueError, match="no text for language si"):
        F.fragmentation({"bytes": _bytes_tokenizer()}, {"si": ["", ""]})


def test_command_line(tmp_path):
    folder = tmp_path / "bytes"
    folder.mkdir()
    _bytes_tokenizer().save(str(folder / "tokenizer.json"))
    words = tmp_path / "words.json"
    _words_tokenizer().save(str(words))
    for lang, lines in TEXTS.items():
        (tmp_path / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, log = tmp_path / "out" / "fragmentation.csv", tmp_path / "log.txt"
    texts = [f"en={tmp_path / 'en.txt'}", f"th={tmp_path / 'th.txt'}"]
    F.main(
        [
            "--tokenizers",
            f"bytes={folder}",
            f"words={words}",
            "--texts",
            *texts,
            "--texts-label",
            "l10n stand-in",
            "--out",
            str(out),
            "--log",
            str(log),
        ]
    )
    frame = pd.read_csv(out)
    assert frame[["tokenizer", "language", "tokens"]].values.tolist() == [
        ["bytes", "en", 9],
        ["bytes", "th", 13],
        ["words", "en", 3],
        ["words", "th", 3],
    ]
    assert (frame["texts"] == "l10n stand-in").all()
    assert "bytes th: 6.5 tokens/sentence" in log.read_text(encoding="utf-8")
    # Parallel mt files: each language's ratio is to its own English side; the en row pools the English sides.
    (tmp_path / "th.tsv").write_text("ab\tกข\nhello\tก ข\n", encoding="utf-8")
    (tmp_path / "si.tsv").write_text("ab c\tab\n", encoding="utf-8")
    pairs = ["--pairs", f"th={tmp_path / 'th.tsv'}", f"si={tmp_path / 'si.tsv'}"]
    F.main(["--tokenizers", f"bytes={folder}", *pairs, "--out", str(out)])
    frame = pd.read_csv(out).set_index("language")
    assert list(frame.index) == ["en", "th", "si"]
    # bytes: English "ab", "hello", "ab c" = 2 + 5 + 4 = 11 over 3 sentences; th 13 over its English 7; si 2 over 4.
    assert frame.loc["en", "tokens"] == 11 and frame.loc["en", "ratio_to_english"] == 1.0
    assert frame.loc["th", "ratio_to_english"] == pytest.approx(13 / 7)
    assert frame.loc["si", "ratio_to_english"] == pytest.approx(2 / 4)
    (tmp_path / "bad.tsv").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="English<TAB>target"):
        F.main(["--tokenizers", f"bytes={folder}", "--pairs", f"th={tmp_path / 'bad.tsv'}", "--out", str(out)])
    with pytest.raises(ValueError, match="NAME=PATH"):
        F.main(["--tokenizers", str(folder), "--texts", f"en={tmp_path / 'en.txt'}", "--out", str(out)])
    with pytest.raises(FileNotFoundError, match=r"no tokenizer\.json"):
        F.main(["--tokenizers", f"x={tmp_path}", "--texts", f"en={tmp_path / 'en.txt'}", "--out", str(out)])
