"""Atomic outputs: a failed or killed step never leaves a half-written output, and a finished one replaces the old."""

from __future__ import annotations

import pytest

from workflow_scripts.io import atomic_path, write_text


def test_failed_block_keeps_the_old_output_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "result.json"
    write_text(out, "old")
    with pytest.raises(RuntimeError), atomic_path(out) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("killed")
    assert out.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_block_that_writes_nothing_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="without writing"), atomic_path(tmp_path / "x.txt"):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("old_kind", "new_kind"), [("file", "file"), ("dir", "dir"), ("file", "dir"), ("dir", "file")])
def test_finished_block_replaces_files_and_folders(tmp_path, old_kind, new_kind):
    out = tmp_path / "model"
    if old_kind == "dir":
        out.mkdir()
        (out / "stale.bin").write_text("old", encoding="utf-8")
    else:
        out.write_text("old", encoding="utf-8")
    with atomic_path(out) as tmp:
        if new_kind == "dir":
            tmp.mkdir()
            (tmp / "weights.bin").write_text("new", encoding="utf-8")
        else:
            tmp.write_text("new", encoding="utf-8")
    if new_kind == "dir":
        assert sorted(p.name for p in out.iterdir()) == ["weights.bin"]
    else:
        assert out.read_text(encoding="utf-8") == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_read_pairs_rejects_malformed(tmp_path):
    from workflow_scripts.io import read_pairs

    bad = tmp_path / "bad.tsv"
    bad.write_text("one\ttwo\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:2"):
        read_pairs(bad)
    assert read_pairs(bad, n=1) == [("one", "two")]
