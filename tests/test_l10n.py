"""English→target pairs from the committed Debian LibreOffice localization packages (workflow_scripts/l10n.py)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from workflow_scripts.io import read_json
from workflow_scripts.l10n import clean_pairs, extract, main, read_mo_catalogues

REPO = Path(__file__).resolve().parents[1]

# Written independently of languages.SCRIPT_RANGES: Thai block U+0E00-0E7F, Sinhala block U+0D80-0DFF.
SCRIPT = {"th": re.compile("[\u0e00-\u0e7f]"), "si": re.compile("[\u0d80-\u0dff]")}
# Placeholders and markup of LibreOffice's catalogues: $(ARG1), $1 / $1$ (Base), %1, %s, %PRODUCTNAME, <tag>, {x},
# #PAGENUMBER# (report builder), [*] (field name), escaped \n / \t.
PLACEHOLDER = re.compile(r"\$\(|\$\d|%\d|%[sdu]\b|%[A-Z_]{2,}|<[^>]*>|\{[^}]*\}|#[A-Z]+#|\[\*\]|\\[nt]")


def deb(lang: str) -> Path:
    found = sorted((REPO / "resources" / "l10n").glob(f"libreoffice-l10n-{lang}_*.deb"))
    assert found, f"no libreoffice-l10n-{lang} package in resources/l10n"
    return found[-1]


@functools.cache
def extracted(lang: str):
    return extract(deb(lang), lang)


@pytest.mark.parametrize("lang", ["th", "si"])
def test_extract_real_package(lang):
    pairs, report = extracted(lang)
    assert len(pairs) > 1000  # Debian versions move: never an exact count
    assert report["kept_pairs"] == len(pairs)
    # Every raw pair is either kept or dropped for one counted reason.
    assert report["kept_pairs"] + sum(report["dropped"].values()) == report["raw_pairs"]
    assert "stand-in for CC-100 / FLORES-200" in report["source"]
    assert len({en for en, _ in pairs}) == len(pairs)
    assert len({tgt for _, tgt in pairs}) == len(pairs)
    for en, tgt in pairs:
        assert SCRIPT[lang].search(tgt), (en, tgt)
        assert len(en.split()) >= 4, en
        assert "~" not in en and "~" not in tgt, (en, tgt)
        for s in (en, tgt):
            assert s == s.strip() and not re.search(r"[\t\n\r]|\s\s", s), s


@pytest.mark.parametrize("lang", ["th", "si"])
def test_extract_real_package_has_no_placeholders(lang):
    pairs, _ = extracted(lang)
    left = [p for p in pairs if PLACEHOLDER.search(p[0]) or PLACEHOLDER.search(p[1])]
    assert not left, f"{len(left)} pairs keep placeholders, e.g. {left[:3]}"


def test_clean_pairs_documented_rules():
    pairs = [
        ("Open the ~file now please", "เปิด~ไฟล์ตอนนี้"),  # accelerator removed, then an English duplicate (below)
        ("Open the file now please", "เปิดแฟ้มตอนนี้"),  # sorts first on the target side: this one is kept
        ("Insert $(ARG1) here now", "แทรก $(ARG1) ที่นี่"),
        ("Value %1 is too large", "ค่า %1 ใหญ่เกินไป"),
        ("Click <b>here</b> to go", "คลิกที่นี่"),
        ("Use {name} for the file", "ใช้ชื่อ"),
        ("Two words", "สองคำ"),
        ("This was not translated yet", "This was not translated yet"),
        ("Another string without Thai text", "Autre chaîne sans thaï"),
        ("Save the  document\nto disk", " บันทึก\tเอกสาร  "),  # whitespace collapsed
        ("Delete all selected rows", "ลบแถว"),
        ("Remove every selected row", "ลบแถว"),  # a target duplicate: "Delete ..." sorts first and is kept
    ]
    kept, dropped = clean_pairs(pairs, "th")
    assert kept == [
        ("Delete all selected rows", "ลบแถว"),
        ("Open the file now please", "เปิดแฟ้มตอนนี้"),
        ("Save the document to disk", "บันทึก เอกสาร"),
    ]
    assert dict(dropped) == {
        "placeholder_or_markup": 4,
        "too_few_english_words": 1,
        "untranslated": 2,
        "duplicate": 2,
    }
    # min_words is the English word threshold.
    assert clean_pairs([("Two words", "สองคำ")], "th", min_words=2)[0] == [("Two words", "สองคำ")]


def test_clean_pairs_drops_libreoffice_placeholders():
    pairs = [
        ("$1 of $2 records found", "พบ $1 จาก $2 ระเบียน"),
        ('"Page " & #PAGENUMBER# of the report', '"หน้า " & #PAGENUMBER# ของรายงาน'),
        ("A condition cannot be applied to field [*]", "เงื่อนไขไม่สามารถใช้กับเขตข้อมูล [*] ได้"),
        ("Brightness is raised by 20% here", "ความสว่างเพิ่มขึ้น 20% ที่นี่"),  # a literal percent, not a placeholder
    ]
    kept, dropped = clean_pairs(pairs, "th")
    assert kept == [("Brightness is raised by 20% here", "ความสว่างเพิ่มขึ้น 20% ที่นี่")]
    assert dict(dropped) == {"placeholder_or_markup": 3}


def test_not_a_deb_is_a_clear_error(tmp_path):
    fake = tmp_path / "libreoffice-l10n-th_fake.deb"
    fake.write_text("this is not an ar archive")
    with pytest.raises(ValueError, match="not a Debian package"):
        extract(fake, "th")
    # An ar archive without a data.tar member.
    member = b"2.0\n"
    header = b"debian-binary/".ljust(16) + b"0".ljust(12) + b"0".ljust(6) * 2 + b"100644".ljust(8)
    header += str(len(member)).encode().ljust(10) + b"`\n"
    fake.write_bytes(b"!<arch>\n" + header + member)
    with pytest.raises(ValueError, match=r"no data\.tar"):
        read_mo_catalogues(fake, "th")


def test_unknown_language_is_a_clear_error():
    with pytest.raises(ValueError, match=r"language 'xx': not a language code CLDR knows"):
        extract(deb("th"), "xx")
    with pytest.raises(ValueError, match=r"no \.mo catalogues for language 'si'"):
        extract(deb("th"), "si")  # a known language, but not in this package


def test_cli(tmp_path):
    out, report = tmp_path / "pairs.tsv", tmp_path / "report.json"
    main(["--deb", str(deb("si")), "--lang", "si", "--out", str(out), "--report", str(report)])
    lines = out.read_text(encoding="utf-8").rstrip("\n").split("\n")
    assert len(lines) == read_json(report)["kept_pairs"] == len(extracted("si")[0])
    assert [tuple(line.split("\t")) for line in lines] == extracted("si")[0]
