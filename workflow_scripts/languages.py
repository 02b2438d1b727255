"""The paper's languages: their FLORES-200 / FLORES+ codes, and the check that a text is in a language's script."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.io import UserError
from workflow_scripts.l10n import SCRIPT_RANGES, in_script

# The paper's ten languages (ISO 639-1) and their FLORES-200 / FLORES+ codes ({iso_639_3}_{iso_15924}).
FLORES_CODES: dict[str, str] = {
    "ar": "arb_Arab",
    "my": "mya_Mymr",
    "de": "deu_Latn",
    "el": "ell_Grek",
    "hi": "hin_Deva",
    "ja": "jpn_Jpan",
    "si": "sin_Sinh",
    "sw": "swh_Latn",
    "te": "tel_Telu",
    "th": "tha_Thai",
}
FLORES_ENGLISH = "eng_Latn"


# The share of lines in a language's script: English text given as the Thai corpus is valid UTF-8, so only the script
# tells it apart. A line counts when it holds one letter of the script (l10n.SCRIPT_RANGES, the table the planning
# check uses); CC-100 lines mix in Latin names, numbers and URLs, so the share of a right corpus is below 1.
MIN_SCRIPT_SHARE = 0.5


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
