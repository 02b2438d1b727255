"""English→target sentence pairs from Debian's LibreOffice localization packages (the embedded default's data).

The packages ship LibreOffice's user-interface translations as gettext .mo catalogues; msgid is English, msgstr the
human translation. This is software-interface text, a narrow domain: it stands in for CC-100 (adaptation corpus,
held-out text) and FLORES-200 (MT test set) in the embedded default, and every output says so.

Cleaning (documented, counted in the report, never silent): the LibreOffice accelerator marker ``~`` is removed;
whitespace (including embedded newlines and tabs) is collapsed; pairs with placeholders or markup (``$(ARG1)``, ``$1``,
``%1``, ``%s``, ``#PAGENUMBER#``, ``[*]``, ``<tag>``, ``{x}``) are dropped; the English side must have at least
``min_words`` words; the target side must contain a character of the language's script and differ from the English;
duplicates on either side are dropped (the first pair in sorted order is kept).
"""

from __future__ import annotations

import argparse
import gettext
import io
import re
import tarfile
import unicodedata
from collections import Counter
from pathlib import Path

from workflow_scripts.io import UserError, atomic_path, setup_logging, write_json
from workflow_scripts.languages import in_script, language_arg, script_name

STAND_IN_LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n-{lang})"

_PLACEHOLDER = re.compile(r"\$\(|\$\d|%\d|%[sdu]|%[A-Z_]+%?|<[^>]*>|\{[^}]*\}|\\[nt]|#\d|#[A-Z]+#|\[\*\]")


def _ar_members(data: bytes, name: str) -> dict[str, bytes]:
    """Members of a Unix ``ar`` archive (the container format of a .deb)."""
    if not data.startswith(b"!<arch>\n"):
        raise UserError(f"{name}: not a Debian package (missing ar magic)")
    pos, out = 8, {}
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        out[name] = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size % 2)
    return out


def read_mo_catalogues(deb: str | Path, lang: str) -> dict[str, bytes]:
    """The .mo files for ``lang`` inside a Debian package, read with the standard library only (no dpkg needed)."""
    members = _ar_members(Path(deb).read_bytes(), str(deb))
    data_name = next((n for n in members if n.startswith("data.tar")), None)
    if data_name is None:
        raise UserError(f"{deb}: no data.tar.* member")
    if data_name.endswith(".zst"):
        raise UserError(f"{deb}: zstd-compressed packages are not supported; use a Debian 12 package (xz)")
    root = "usr/lib/libreoffice/program/resource/"
    prefix = f"{root}{lang}/LC_MESSAGES/"
    out = {}
    present = set()  # the languages the package does hold, for the error message
    with tarfile.open(fileobj=io.BytesIO(members[data_name])) as tar:  # gz, bz2 or xz, detected by tarfile
        for m in tar.getmembers():
            name = m.name.removeprefix("./")
            if m.isfile() and name.startswith(root) and name.endswith(".mo"):
                present.add(name[len(root) :].split("/", 1)[0])
                if name.startswith(prefix):
                    out[Path(name).name] = tar.extractfile(m).read()
    if not out:
        held = f"it holds catalogues for {sorted(present)}" if present else "it holds no LibreOffice catalogues"
        raise UserError(
            f"{deb}: no .mo catalogues for language {lang!r} under {prefix} ({held}): use the package "
            f"libreoffice-l10n-{lang}"
        )
    return out


def raw_pairs(mo_files: dict[str, bytes]) -> list[tuple[str, str]]:
    """All singular (msgid, msgstr) pairs with a non-empty translation, message context stripped."""
    pairs = []
    for name in sorted(mo_files):
        catalog = gettext.GNUTranslations(io.BytesIO(mo_files[name]))._catalog
        for key, value in catalog.items():
            if isinstance(key, tuple) or not key or not value:
                continue  # plural forms and the header entry
            pairs.append((key.split("\x04", 1)[-1], value))
    return pairs


def _normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text.replace("~", "")).split())


def clean_pairs(pairs: list[tuple[str, str]], lang: str, min_words: int = 4) -> tuple[list[tuple[str, str]], Counter]:
    """Apply the documented cleaning; return the kept pairs (sorted, deduplicated) and the count of each drop reason."""
    dropped: Counter = Counter()
    kept: list[tuple[str, str]] = []
    for en, tgt in pairs:
        if _PLACEHOLDER.search(en) or _PLACEHOLDER.search(tgt):
            dropped["placeholder_or_markup"] += 1
            continue
        en, tgt = _normalize(en), _normalize(tgt)
        if len(en.split()) < min_words:
            dropped["too_few_english_words"] += 1
        elif tgt == en or not in_script(tgt, lang):
            dropped["untranslated"] += 1
        else:
            kept.append((en, tgt))
    seen_en: set[str] = set()
    seen_tgt: set[str] = set()
    unique = []
    for en, tgt in sorted(kept):
        if en in seen_en or tgt in seen_tgt:
            dropped["duplicate"] += 1
            continue
        seen_en.add(en)
        seen_tgt.add(tgt)
        unique.append((en, tgt))
    return unique, dropped


def extract(deb: str | Path, lang: str, min_words: int = 4) -> tuple[list[tuple[str, str]], dict]:
    """Cleaned English→target pairs from one libreoffice-l10n package, with a report."""
    script_name(lang)  # an unknown language is an error before the package is read
    mo = read_mo_catalogues(deb, lang)
    raw = raw_pairs(mo)
    pairs, dropped = clean_pairs(raw, lang, min_words)
    if not pairs:
        raise UserError(
            f"{deb}: no {lang!r} pairs left after cleaning ({len(raw)} raw pairs; dropped: "
            f"{dict(sorted(dropped.items()))})"
        )
    report = {
        "source": STAND_IN_LABEL.format(lang=lang),
        "package": Path(deb).name,
        "catalogues": len(mo),
        "raw_pairs": len(raw),
        "kept_pairs": len(pairs),
        "dropped": dict(sorted(dropped.items())),
        "min_english_words": min_words,
    }
    return pairs, report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--deb", required=True)
    p.add_argument("--lang", required=True, type=language_arg)
    p.add_argument("--min-words", type=int, default=4)
    p.add_argument("--out", required=True, help="TSV: English<TAB>target, one pair a line")
    p.add_argument("--report", required=True)
    p.add_argument("--log")
    a = p.parse_args(argv)
    log = setup_logging(a.log)
    pairs, report = extract(a.deb, a.lang, a.min_words)
    with atomic_path(a.out) as tmp:
        tmp.write_text("".join(f"{en}\t{tgt}\n" for en, tgt in pairs), encoding="utf-8")
    write_json(a.report, report)
    log.info("%s", report)


if __name__ == "__main__":
    from workflow_scripts.io import cli_main

    cli_main(main)  # expected failures (bad input files) as one line, exit 1
