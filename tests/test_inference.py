"""The pieces every evaluation step shares: the grid cell argument, the held-out text, the common arguments."""

from __future__ import annotations

import argparse
import json

import pytest

from workflow_scripts.inference import DECODING, add_common_args, read_cell, read_sentences


def test_read_cell_inline_or_file(tmp_path):
    cell = {"model": "tiny", "language": "th"}
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell), encoding="utf-8")
    assert read_cell(json.dumps(cell)) == cell == read_cell(str(path))
    listed = tmp_path / "list.json"
    listed.write_text("[1]", encoding="utf-8")
    with pytest.raises(ValueError, match="must be a JSON object, got list"):
        read_cell(str(listed))


def test_read_sentences_takes_the_first_n(tmp_path):
    text = tmp_path / "heldout.txt"
    text.write_text("one\ntwo\nthree\n", encoding="utf-8")
    assert read_sentences(text, 2) == ["one", "two"]
    assert read_sentences(text) == ["one", "two", "three"]


def test_common_args_and_decodings():
    p = argparse.ArgumentParser()
    add_common_args(p, batch_size=4)
    a = p.parse_args(["--model", "m", "--cell", "{}", "--out", "o.json"])
    assert (a.batch_size, a.n, a.dtype) == (4, None, "auto")
    assert DECODING["greedy"]["num_beams"] == 1 and DECODING["paper"]["num_beams"] == 5  # Table 13 (b)
