"""Languages as data: facts inferred from the code (CLDR), given ones kept, scripts by Unicode's Script property, the
facts carried to a step's process, prompts, and your own MT pairs."""

from __future__ import annotations

import json
import os

import pytest

from workflow_scripts import languages as L
from workflow_scripts import prompts
from workflow_scripts.corpus import read_own_pairs
from workflow_scripts.io import UserError


@pytest.fixture(autouse=True)
def clean_languages(monkeypatch):
    """Each test starts with no declared facts, in this process and in the environment."""
    monkeypatch.setattr(L, "_GIVEN", {})
    monkeypatch.delenv(L.LANGUAGES_ENV, raising=False)


# One letter of each script, written by its code point (not taken from the code under test).
LETTERS = {"km": "\u1780", "am": "\u12a0", "lo": "\u0e81", "ka": "\u10d0", "bo": "\u0f40"}


@pytest.mark.parametrize(
    ("code", "name", "script", "flores"),
    [
        ("km", "Khmer", "Khmr", "khm_Khmr"),
        ("am", "Amharic", "Ethi", "amh_Ethi"),
        ("lo", "Lao", "Laoo", "lao_Laoo"),
        ("ka", "Georgian", "Geor", "kat_Geor"),
        ("bo", "Tibetan", "Tibt", "bod_Tibt"),
    ],
)
def test_facts_inferred_from_the_code(code, name, script, flores):
    lang = L.language(code)
    assert (lang.name, lang.script, lang.flores) == (name, script, flores)
    assert set(lang.inferred) == {"name", "script", "flores"}
    letter = LETTERS[code]
    assert L.in_script(f"abc {letter}", code) and not L.in_script("abc 123", code)
    assert L.all_in_script(letter * 3, code) and not L.all_in_script(letter + "a", code)


def test_the_papers_languages_keep_the_papers_facts():
    # FLORES names the individual language where CLDR names the macrolanguage (ara, swa)
    assert [L.language(c).flores for c in ("ar", "sw", "th", "si")] == ["arb_Arab", "swh_Latn", "tha_Thai", "sin_Sinh"]
    assert L.language("th").inferred == () and L.language("th").arg() == "th"
    # Japanese is written in three Unicode scripts: kana and kanji all count
    assert all(L.in_script(c, "ja") for c in ("\u3042", "\u30a2", "\u6f22")) and not L.in_script("abc", "ja")


def test_given_facts_win_and_travel_to_a_steps_process(monkeypatch):
    declared = L.declare({"am": {"name": "Amharic (Ethiopia)", "flores": "amh_Ethi", "prompts": {"mt": "ተርጉም:"}}})
    am = declared["am"]
    assert (am.name, am.script, am.flores, am.inferred) == ("Amharic (Ethiopia)", "Ethi", "amh_Ethi", ())
    # planning puts what the config gave into the environment; a step's process (fresh state) reads it from there
    carried = os.environ[L.LANGUAGES_ENV]
    assert json.loads(carried) == {
        "am": {"name": "Amharic (Ethiopia)", "flores": "amh_Ethi", "script": "Ethi", "prompts": {"mt": "ተርጉም:"}}
    }
    monkeypatch.setattr(L, "_GIVEN", {})
    assert L.language("am").name == "Amharic (Ethiopia)"
    assert prompts.mt_query("Open the file", "am") == "ተርጉም:\nOpen the file ="
    # or on the command line, as JSON (a step run by hand)
    monkeypatch.setattr(L, "_GIVEN", {})
    monkeypatch.delenv(L.LANGUAGES_ENV)
    assert L.language_arg(am.arg()) == "am" and L.language("am") == am
    # a config giving nothing beyond the code leaves nothing in the environment
    monkeypatch.setattr(L, "_GIVEN", {})
    L.declare({"km": {"corpus": {}}})
    assert L.LANGUAGES_ENV not in os.environ


def test_unknown_codes_and_scripts_are_clear_errors():
    with pytest.raises(UserError, match="language 'xx': not a language code CLDR knows"):
        L.language("xx")
    with pytest.raises(UserError, match="not a language code"):
        L.language("Khmer")
    with pytest.raises(UserError, match="script 'Zzzq': not an ISO 15924 script"):
        L.infer("km", script="Zzzq")


def test_prompts_paper_config_or_template():
    assert prompts.prompt_source("mt", "th") == "paper"
    assert prompts.mt_query("Hi", "km") == "Translate English to Khmer:\nHi ="
    assert prompts.prompt_source("mt", "km") == "template"
    # sum has no template: a language without a sum prompt is named with the key to give
    assert prompts.prompt_source("sum", "km") is None
    with pytest.raises(UserError, match=r"languages\.km\.prompts\.sum"):
        prompts.sum_query("text", "km")


def test_own_pairs_tsv_and_jsonl(tmp_path):
    km = LETTERS["km"]
    tsv = tmp_path / "en-km.tsv"
    tsv.write_text(f"Open  the file\t{km}{km}\nSave it\t{km} x\n", encoding="utf-8")
    pairs, report = read_own_pairs(tsv, "tsv", "km")
    assert pairs == [("Open the file", km * 2), ("Save it", f"{km} x")]
    assert (report["pairs"], report["target_script"], report["target_script_share"]) == (2, "Khmr", 1.0)
    jsonl = tmp_path / "en-km.jsonl"
    rows = [{"source": "Open", "target": km}, {"en": "Save", "km": km * 2}]
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert read_own_pairs(jsonl, "jsonl", "km")[0] == [("Open", km), ("Save", km * 2)]
    jsonl.write_text('{"source": "Open", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"pair 1: expected text under the keys source or en and target or km"):
        read_own_pairs(jsonl, "jsonl", "km")
    # English where Khmer should be: the script check names the file
    tsv.write_text("Open\tOpen\nSave\tSave\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"0\.0% of the pairs' target side's 2 lines contain Khmr script"):
        read_own_pairs(tsv, "tsv", "km")
