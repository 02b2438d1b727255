"""Target languages as data: a language's English name, FLORES+ code and script (ISO 15924), from the config where the
user gives them, else from CLDR data (``langcodes`` / ``language_data``), and the check that a text is in its script
(Unicode's Script property, through ``regex``: no hand table of code points).

Planning makes the config's languages known (``declare``) and puts the facts a config gives beyond the code into the
environment (``LANGUAGES_ENV``), which every job's process inherits (a cluster job plans again, and so sets it
itself): a step in its own process sees exactly what planning saw, with no command line changed. A step run by hand
takes ``--lang`` as a code, or as the JSON of ``Language.arg`` (``language_arg``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workflow_scripts.io import UserError

FLORES_ENGLISH = "eng_Latn"
# The paper's ten languages (ISO 639-1, as in the config and the paths): their names and FLORES-200 codes as the paper
# reports them. FLORES names individual languages where CLDR names the macrolanguage (arb for ar, swh for sw).
PAPER_LANGUAGES: dict[str, tuple[str, str]] = {
    "ar": ("Arabic", "arb_Arab"),
    "my": ("Burmese", "mya_Mymr"),
    "de": ("German", "deu_Latn"),
    "el": ("Greek", "ell_Grek"),
    "hi": ("Hindi", "hin_Deva"),
    "ja": ("Japanese", "jpn_Jpan"),
    "si": ("Sinhala", "sin_Sinh"),
    "sw": ("Swahili", "swh_Latn"),
    "te": ("Telugu", "tel_Telu"),
    "th": ("Thai", "tha_Thai"),
}
# A config's language code (a path part and a wildcard): an ISO 639 code, optionally with subtags (zh-Hant, pt-BR).
CODE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"
# ISO 15924 codes that name a writing system made of several Unicode scripts.
SCRIPT_UNION = {"Jpan": ("Hira", "Kana", "Hani"), "Kore": ("Hang", "Hani"), "Hans": ("Hani",), "Hant": ("Hani",)}
# The facts a config entry may give (languages.<code>.name / .flores / .script).
FACTS = ("name", "flores", "script")


@dataclass(frozen=True)
class Language:
    """One target language: its code (config and paths), English name, FLORES+ code (``{iso_639_3}_{iso_15924}``),
    script (ISO 15924), the facts inferred rather than given, and the mt instruction the user gave (None: the paper's
    or the template, ``workflow_scripts.prompts``)."""

    code: str
    name: str
    flores: str
    script: str
    inferred: tuple[str, ...] = ()
    prompts: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_paper(self) -> bool:
        return self.code in PAPER_LANGUAGES

    def given(self) -> dict[str, Any]:
        """What the config gave beyond the code (the JSON a rule passes as ``--lang``), empty when nothing."""
        out: dict[str, Any] = {k: getattr(self, k) for k in FACTS if k not in self.inferred}
        if self.is_paper:
            out = {k: v for k, v in out.items() if v != getattr(paper_language(self.code), k)}
        if self.prompts:
            out["prompts"] = self.prompts
        return out

    def arg(self) -> str:
        """``--lang``'s value for a step: the code alone, or JSON with the facts the config gave."""
        given = self.given()
        return json.dumps({"code": self.code, **given}, ensure_ascii=False, sort_keys=True) if given else self.code


@functools.cache
def paper_language(code: str) -> Language:
    name, flores = PAPER_LANGUAGES[code]
    return Language(code, name, flores, flores.split("_")[1])


def _cldr(code: str):
    import langcodes

    try:
        tag = langcodes.Language.get(code)
    except (ValueError, LookupError) as e:
        raise UserError(f"language {code!r}: not a language code CLDR knows ({e}); give an ISO 639 code") from e
    if not tag.is_valid():
        raise UserError(f"language {code!r}: not a language code CLDR knows; give an ISO 639 code (km, am, lo)")
    return tag


def infer(code: str, **given: Any) -> Language:
    """The language of ``code`` with the facts given (name, flores, script, prompts), the others from the paper's
    table or from CLDR: name its English display name, script its likely script, FLORES code ISO 639-3 + script.
    A code CLDR does not know, or a fact it cannot infer, is a UserError naming what to give."""
    if not re.fullmatch(CODE_PATTERN, code):
        raise UserError(f"language {code!r}: not a language code (ISO 639, e.g. km, am, or with subtags: zh-Hant)")
    prompts = dict(given.pop("prompts", None) or {})
    unknown = set(given) - set(FACTS)
    if unknown:
        raise UserError(f"language {code!r}: unknown facts {sorted(unknown)}; known: {list(FACTS)}")
    facts = {k: v for k, v in given.items() if v}
    if code in PAPER_LANGUAGES:
        base = paper_language(code)
        merged = {k: facts.get(k, getattr(base, k)) for k in FACTS}
        if "flores" in facts and "script" not in facts:
            merged["script"] = facts["flores"].split("_")[-1]
        return Language(code, **merged, prompts=prompts)
    inferred = []
    if not all(k in facts for k in FACTS):
        tag = _cldr(code)
        if "name" not in facts:
            facts["name"] = tag.display_name("en")
            inferred.append("name")
        if "script" not in facts and "flores" in facts:  # given with the FLORES code
            facts["script"] = facts["flores"].split("_")[-1]
        elif "script" not in facts:
            script = tag.maximize().script
            if not script:
                raise UserError(f"languages.{code}: CLDR knows no script for {code!r}; give languages.{code}.script")
            facts["script"] = script
            inferred.append("script")
        if "flores" not in facts:
            try:
                alpha3 = tag.to_alpha3()
            except LookupError as e:
                raise UserError(
                    f"languages.{code}: no ISO 639-3 code for {code!r}; give languages.{code}.flores"
                ) from e
            facts["flores"] = f"{alpha3}_{facts['script']}"
            inferred.append("flores")
    lang = Language(code, facts["name"], facts["flores"], facts["script"], tuple(inferred), prompts)
    script_pattern(lang.script)  # an unknown script is an error now, not in a step after training
    return lang


# Facts given beyond the code, by code (declare, language_arg): later lookups in the same process see them.
_GIVEN: dict[str, Language] = {}
# The environment variable that carries them from planning to the jobs: JSON, code -> Language.given().
LANGUAGES_ENV = "VOCAB_LANGUAGES"


def language(code: str) -> Language:
    """The language of ``code`` as this process knows it: declared, or given in the environment or on the command
    line, else inferred (``infer``)."""
    if code not in _GIVEN and os.environ.get(LANGUAGES_ENV):
        given = json.loads(os.environ[LANGUAGES_ENV]).get(code)
        if given:
            _GIVEN[code] = infer(code, **given)
    return _GIVEN.get(code) or _inferred(code)


@functools.cache
def _inferred(code: str) -> Language:
    return infer(code)


def from_config(code: str, entry: dict | None) -> Language:
    """The language of a config entry ``languages.<code>``: its facts and prompts where given, the others inferred."""
    entry = entry or {}
    given = {k: entry[k] for k in FACTS if entry.get(k)}
    return infer(code, **given, prompts=entry.get("prompts") or {})


def declare(languages: dict[str, dict | None]) -> dict[str, Language]:
    """Make a config's ``languages`` block what this process knows (planning: every check then sees the config's
    facts); the languages by code."""
    out = {code: from_config(code, entry) for code, entry in languages.items()}
    _GIVEN.update(out)
    given = {code: lang.given() for code, lang in _GIVEN.items() if lang.given()}
    if given:
        os.environ[LANGUAGES_ENV] = json.dumps(given, ensure_ascii=False, sort_keys=True)
    else:
        os.environ.pop(LANGUAGES_ENV, None)
    return out


def language_arg(value: str) -> str:
    """argparse type of ``--lang``: a code, or the JSON of ``Language.arg``, whose facts this process then uses."""
    if value.startswith("{"):
        spec = json.loads(value)
        code = spec.pop("code")
        _GIVEN[code] = infer(code, **spec)
        return code
    return value


def language_name(lang: str) -> str:
    """English name of a language code (the code itself where CLDR has none)."""
    try:
        return language(lang).name
    except UserError:
        return lang


# ----------------------------------------------------------------------------------------------------------------------
# scripts


@functools.cache
def script_pattern(script: str, run: bool = False):
    """A compiled ``regex`` matching one character of ISO 15924 ``script`` (by Unicode's Script property), or with
    ``run`` one or more of them."""
    import regex

    chars = "[" + "".join(rf"\p{{sc={p}}}" for p in SCRIPT_UNION.get(script, (script,))) + "]"
    try:
        return regex.compile(chars + ("+" if run else ""))
    except regex.error as e:
        raise UserError(f"script {script!r}: not an ISO 15924 script Unicode knows ({e})") from e


# The share of lines in a language's script: English text given as the Thai corpus is valid UTF-8, so only the script
# tells it apart. A line counts when it holds one letter of the script; CC-100 lines mix in Latin names, numbers and
# URLs, so the share of a right corpus is below 1.
MIN_SCRIPT_SHARE = 0.5


def script_name(lang: str) -> str:
    """The ISO 15924 script of ``lang`` (``th`` → ``Thai``)."""
    return language(lang).script


def in_script(text: str, lang: str) -> bool:
    """Whether ``text`` contains at least one character of ``lang``'s script."""
    return script_pattern(script_name(lang)).search(text) is not None


def all_in_script(text: str, lang: str) -> bool:
    """Whether ``text`` is non-empty and every character of it is in ``lang``'s script."""
    return bool(text) and script_pattern(script_name(lang), run=True).fullmatch(text) is not None


def script_share(lines: list[str], lang: str) -> float | None:
    """The share of ``lines`` with a letter of ``lang``'s script; None for no lines."""
    if not lines:
        return None
    pattern = script_pattern(script_name(lang))
    return round(sum(pattern.search(s) is not None for s in lines) / len(lines), 4)


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


def flores_subset(lang: str) -> str:
    """The FLORES-200 / Belebele subset of a language (its FLORES code), English's for the retention checks
    (Table 9)."""
    return FLORES_ENGLISH if lang == "en" else language(lang).flores
