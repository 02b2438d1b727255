"""Folders in the real layouts of the evaluation sources (docs/data.md names where each layout was found), small."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

THAI = ["ข่าวการเมือง", "เศรษฐกิจไทย", "ฝนตกหนัก", "ทีมชาติไทย", "ราคาน้ำมัน"]


def _card(configs: list[str] | None = None, extra: str = "") -> str:
    head = "---\nlicense: cc-by-sa-4.0\n" + (extra or "")
    if configs:
        head += "configs:\n" + "\n".join(configs) + "\n"
    return head + "---\n\n# card\n"


def xlsum_repo(root: Path, languages=("thai", "sinhala")) -> Path:
    """csebuetnlp/xlsum main: xlsum.py, a card without a configs block, data/{lang}_XLSum_v2.0.tar.bz2 of
    ./{lang}_{train,val,test}.jsonl with id, url, title, summary, text."""
    (root / "data").mkdir(parents=True)
    (root / "xlsum.py").write_text("# the loading script datasets 4+ refuses\n")
    (root / "README.md").write_text(_card())
    for lang in languages:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:bz2") as tar:
            for split, n in (("train", 3), ("val", 2), ("test", 4)):
                lines = [
                    json.dumps(
                        {
                            "id": f"{lang}-{split}-{i}",
                            "url": f"https://www.bbc.com/{lang}/{i}",
                            "title": f"title {i}",
                            "summary": THAI[i % 5],
                            "text": " ".join(THAI[: i + 2]),
                        },
                        ensure_ascii=False,
                    )
                    for i in range(n)
                ]
                data = ("\n".join(lines) + "\n").encode()
                info = tarfile.TarInfo(f"./{lang}_{split}.jsonl")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        (root / "data" / f"{lang}_XLSum_v2.0.tar.bz2").write_bytes(buf.getvalue())
    return root


def mlsum_branch(root: Path, layout: str = "folders") -> Path:
    """GEM/mlsum refs/convert/parquet, no README.md, GEM's fields, in either layout of the hub's converter:
    ``folders``: {config}/{split}/0000.parquet; ``files``: {config}/mlsum-{split}.parquet, with train cut into
    mlsum-train-0000K-of-00002.parquet (rows 0-1, then row 2)."""
    for config in ("de", "es"):
        for split, n in (("train", 3), ("validation", 2), ("test", 3)):
            rows = [
                {
                    "gem_id": f"mlsum_{config}-{split}-{i}",
                    "gem_parent_id": f"mlsum_{config}-{split}-{i}",
                    "text": f"Artikel {i} über das Wetter in Berlin.",
                    "topic": "wetter",
                    "url": f"https://www.sueddeutsche.de/{i}",
                    "title": f"Titel {i}",
                    "date": "00/01/2019",
                    "target": f"Zusammenfassung {i}.",
                    "references": [f"Zusammenfassung {i}."],
                }
                for i in range(n)
            ]
            (root / config).mkdir(parents=True, exist_ok=True)
            if layout == "folders":
                (root / config / split).mkdir()
                pq.write_table(pa.Table.from_pylist(rows), root / config / split / "0000.parquet")
            elif split == "train":
                for k, part in enumerate((rows[:2], rows[2:])):
                    path = root / config / f"mlsum-{split}-{k:05d}-of-00002.parquet"
                    pq.write_table(pa.Table.from_pylist(part), path)
            else:
                pq.write_table(pa.Table.from_pylist(rows), root / config / f"mlsum-{split}.parquet")
    return root


def mlsum_main(root: Path) -> Path:
    """GEM/mlsum main: only the loading script, its dataset_infos.json and a card without configs."""
    root.mkdir(parents=True)
    (root / "mlsum.py").write_text("# loading script\n")
    (root / "dataset_infos.json").write_text("{}")
    (root / "README.md").write_text(_card())
    return root


BELEBELE_ROW = {
    "link": "https://en.wikibooks.org/wiki/x",
    "question_number": 1,
    "flores_passage": "passage",
    "question": "question?",
    "mc_answer1": "a",
    "mc_answer2": "b",
    "mc_answer3": "c",
    "mc_answer4": "d",
    "correct_answer_num": "2",
    "dialect": "tha_Thai",
    "ds": "2023-05-03",
}


def belebele_repo(root: Path, codes=("tha_Thai", "sin_Sinh", "eng_Latn")) -> Path:
    """facebook/belebele: README configs (config = FLORES code, split test, data/{code}.jsonl)."""
    (root / "data").mkdir(parents=True)
    configs = []
    for code in codes:
        rows = [{**BELEBELE_ROW, "question_number": i, "dialect": code} for i in range(3)]
        (root / "data" / f"{code}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        configs += [f"- config_name: {code}", "  data_files:", "  - split: test", f"    path: data/{code}.jsonl"]
    (root / "README.md").write_text(_card(configs))
    return root


def gmmlu_repo(root: Path, langs=("si", "en", "ar")) -> Path:
    """CohereLabs/Global-MMLU: {lang}/{test,dev}-00000-of-00001.parquet, README configs `path: si/test-*`; the
    second test row of each language has an empty option_d (kept in the mirror)."""
    configs = []
    for lang in langs:
        (root / lang).mkdir(parents=True)
        for split, n in (("test", 3), ("dev", 5)):
            rows = [
                {
                    "sample_id": f"abstract_algebra/{split}/{i}",
                    "subject": "abstract_algebra",
                    "subject_category": "STEM",
                    "question": f"{i} + 1 = ?",
                    "option_a": "1",
                    "option_b": str(i + 1),
                    "option_c": "0",
                    "option_d": "" if (split, i) == ("test", 1) else "9",
                    "answer": "B",
                    "required_knowledge": "[]",
                    "time_sensitive": "[]",
                    "reference": "[]",
                    "culture": "[]",
                    "region": "[]",
                    "country": "[]",
                    "cultural_sensitivity_label": "CA",
                    "is_annotated": False,
                }
                for i in range(n)
            ]
            pq.write_table(pa.Table.from_pylist(rows), root / lang / f"{split}-00000-of-00001.parquet")
        configs += [
            f"- config_name: {lang}",
            "  data_files:",
            "  - split: test",
            f"    path: {lang}/test-*",
            "  - split: dev",
            f"    path: {lang}/dev-*",
        ]
    (root / "README.md").write_text(_card(configs))
    return root


def flores_repo(root: Path, codes=("tha_Thai", "sin_Sinh", "eng_Latn")) -> Path:
    """openlanguagedata/flores_plus: {split}/{code}.parquet with id, iso_639_3, iso_15924, text, ..."""
    for split in ("dev", "devtest"):
        (root / split).mkdir(parents=True)
        for code in codes:
            rows = [
                {
                    "id": i,
                    "iso_639_3": code[:3],
                    "iso_15924": code[4:],
                    "glottocode": "x",
                    "text": f"{code} sentence {i}",
                    "url": "",
                    "domain": "wikinews",
                    "topic": "",
                    "has_image": False,
                    "has_hyperlink": False,
                    "last_updated": "2.0",
                }
                for i in range(4)
            ]
            pq.write_table(pa.Table.from_pylist(rows), root / split / f"{code}.parquet")
    (root / "README.md").write_text(_card())
    return root


GREEK = ["Η κυβέρνηση ανακοίνωσε νέα μέτρα.", "Βροχές στην Αθήνα.", "Νέα τιμή ρεύματος.", "Εκλογές τον Μάιο."]


def greeksum_release(root: Path) -> Path:
    """A GreekSUM checkout after generate_GreekSUM.sh: data/sum_data/parsed/<article>.json and
    splits_abstract_as_summary/{train,valid,test}.txt (iakovosevdaimon/GreekSUM)."""
    parsed = root / "data" / "sum_data" / "parsed"
    parsed.mkdir(parents=True)
    (root / "splits_abstract_as_summary").mkdir()
    names = {"train": [], "valid": [], "test": []}
    for i in range(7):
        split = "train" if i < 3 else "valid" if i < 4 else "test"
        name = f"politics_{i + 1}.json"
        doc = {
            "abstract": GREEK[i % 4],
            "article": " ".join(GREEK[: (i % 4) + 1]),
            "label": "politics",
            "time": "2021-01-01",
            "title": f"Τίτλος {i}",
            "url": f"https://www.news247.gr/{i}",
        }
        (parsed / name).write_text(json.dumps(doc, ensure_ascii=False, indent=4), encoding="utf-8")
        names[split].append(name)
    for split, files in names.items():
        (root / "splits_abstract_as_summary" / f"{split}.txt").write_text("\n".join(files))
    return root


def mmlu_repo(root: Path, subjects=("abstract_algebra", "anatomy")) -> Path:
    """cais/mmlu: README configs per subject, `{subject}/{split}-00000-of-00001.parquet`, fields question, subject,
    choices (a list), answer (an index) - a source the layouts table does not name, read generically."""
    configs = []
    for subject in subjects:
        (root / subject).mkdir(parents=True)
        for split, n in (("test", 4), ("dev", 5)):
            rows = [
                {"question": f"q{i}", "subject": subject, "choices": ["a", "b", "c", "d"], "answer": i % 4}
                for i in range(n)
            ]
            pq.write_table(pa.Table.from_pylist(rows), root / subject / f"{split}-00000-of-00001.parquet")
        configs += [f"- config_name: {subject}", "  data_files:"]
        configs += [f"  - split: {sp}\n    path: {subject}/{sp}-*" for sp in ("test", "dev")]
    (root / "README.md").write_text(_card(configs))
    return root
