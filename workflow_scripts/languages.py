"""The paper's languages, in one table (name, FLORES code, script), and the check that a text is in a language's
script."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.io import UserError


@dataclass(frozen=True)
class Language:
    """One target language: its English name, its FLORES-200 / FLORES+ code ({iso_639_3}_{iso_15924}), and the
    Unicode blocks of its main script (to tell its text from English or another language's)."""

    name: str
    flores: str
    script_ranges: tuple[tuple[int, int], ...]


# The paper's ten languages (ISO 639-1 codes, as in the config and the paths).
LANGUAGES: dict[str, Language] = {
    "ar": Language("Arabic", "arb_Arab", ((0x0600, 0x06FF), (0x0750, 0x077F))),
    "my": Language("Burmese", "mya_Mymr", ((0x1000, 0x109F),)),
    "de": Language("German", "deu_Latn", ((0x0041, 0x005A), (0x0061, 0x007A), (0x00C0, 0x00FF))),
    "el": Language("Greek", "ell_Grek", ((0x0370, 0x03FF), (0x1F00, 0x1FFF))),
    "hi": Language("Hindi", "hin_Deva", ((0x0900, 0x097F),)),
    "ja": Language("Japanese", "jpn_Jpan", ((0x3040, 0x30FF), (0x4E00, 0x9FFF))),
    "si": Language("Sinhala", "sin_Sinh", ((0x0D80, 0x0DFF),)),
    "sw": Language("Swahili", "swh_Latn", ((0x0041, 0x005A), (0x0061, 0x007A))),
    "te": Language("Telugu", "tel_Telu", ((0x0C00, 0x0C7F),)),
    "th": Language("Thai", "tha_Thai", ((0x0E00, 0x0E7F),)),
}
LANGUAGE_NAMES: dict[str, str] = {code: lang.name for code, lang in LANGUAGES.items()}
FLORES_CODES: dict[str, str] = {code: lang.flores for code, lang in LANGUAGES.items()}
SCRIPT_RANGES: dict[str, list[tuple[int, int]]] = {code: list(lang.script_ranges) for code, lang in LANGUAGES.items()}
FLORES_ENGLISH = "eng_Latn"


# The share of lines in a language's script: English text given as the Thai corpus is valid UTF-8, so only the script
# tells it apart. A line counts when it holds one letter of the script (SCRIPT_RANGES, the table the planning
# check uses); CC-100 lines mix in Latin names, numbers and URLs, so the share of a right corpus is below 1.
MIN_SCRIPT_SHARE = 0.5


def in_script(text: str, lang: str) -> bool:
    """Whether ``text`` contains at least one character of ``lang``'s script."""
    ranges = SCRIPT_RANGES[lang]
    return any(lo <= ord(c) <= hi for c in text for lo, hi in ranges)


def script_share(lines: list[str], lang: str) -> float | None:
    """The share of ``lines`` with a letter of ``lang``'s script; None for a language without a script table."""
    if lang not in SCRIPT_RANGES or not lines:
        return None
    return round(sum(in_script(s, lang) for s in lines) / len(lines), 4)


def script_name(lang: str) -> str:
    """The ISO 15924 script of ``lang`` (``th`` → ``Thai``), from its FLORES code."""
    return FLORES_CODES.get(lang, f"{lang}_?").split("_")[-1]


def check_script(path: str | Path, lines: list[str], lang: str, *, what: str) -> float | None:
    """The script share of ``lines`` (see ``script_share``); a UserError naming the file when under MIN_SCRIPT_SHARE."""
    share = script_share(lines, lang)
    if share is not None and share < MIN_SCRIPT_SHARE:
        raise UserError(
            f"{path}: only {share:.1%} of the {what}'s {len(lines)} lines contain {script_name(lang)} script, the "
            f"script of language {lang!r} (at least {MIN_SCRIPT_SHARE:.0%} needed); is it the text of another "
            "language? Give the file of this language"
        )
    return share
