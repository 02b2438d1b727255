"""Corpus kind l10n, the embedded default: a Debian libreoffice-l10n package (``deb``) whose LibreOffice UI
translations give D, the held-out set and the MT test set, disjointly (rules extract_l10n_pairs, split_l10n; the
program is workflow_scripts/l10n.py). A stand-in for CC-100 / FLORES-200, and labelled so. The same rules give the MT
pairs of mt kind l10n whatever the corpus (``check_l10n_deb`` with ``n_train`` 0)."""

from __future__ import annotations

import functools
from pathlib import Path

from workflow_scripts.corpora import CorpusSpec, LocalFile, register

LABEL = "stand-in for CC-100 / FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)"
DEFAULT_MIN_WORDS = 4  # the schema's default data.l10n_min_english_words


@functools.lru_cache(maxsize=32)
def _l10n_pairs(deb: Path, mtime_ns: int, size: int, lang: str, min_words: int) -> tuple[int, float]:
    """Pairs that extract_l10n_pairs will keep and their target side's mean characters (under a second: the .deb is
    read and cleaned as the job does)."""
    from workflow_scripts import l10n

    pairs = l10n.extract(deb, lang, min_words)[0]
    return len(pairs), sum(len(t) for _, t in pairs) / len(pairs)


def _l10n_pair_count(deb: Path, mtime_ns: int, size: int, lang: str, min_words: int) -> int:
    return _l10n_pairs(deb, mtime_ns, size, lang, min_words)[0]


def check_l10n_deb(deb: Path, lang: str, config: dict, key: str = "", n_train: int | None = None) -> list[str]:
    """The package holds the language's catalogues and enough pairs; ``n_train`` 0 where D comes from another
    corpus (split_l10n then needs one pair beyond the held-out and MT pairs)."""
    key = key or f"languages.{lang}.corpus.deb"
    data = dict(config.get("data", {}))
    if n_train is not None:
        data["n_train"] = max(n_train, 1)
    min_words = data.get("l10n_min_english_words", DEFAULT_MIN_WORDS)
    try:
        st = deb.stat()
        n = _l10n_pair_count(deb.resolve(), st.st_mtime_ns, st.st_size, lang, min_words)
    except Exception as e:  # a wrong-language or broken package fails the same way in the extract_l10n_pairs job
        if min_words > DEFAULT_MIN_WORDS:
            try:  # the filter, not the package, is what a config raising it changed: blame it when the default works
                at_default = _l10n_pair_count(deb.resolve(), st.st_mtime_ns, st.st_size, lang, DEFAULT_MIN_WORDS)
            except Exception:
                at_default = 0
            if at_default:
                return [
                    f"data.l10n_min_english_words: {min_words} leaves no {lang!r} pairs in {key} {str(deb)!r} "
                    f"({str(e).removeprefix(f'{deb}: ')}); {DEFAULT_MIN_WORDS} leaves {at_default}: lower "
                    "l10n_min_english_words"
                ]
        return [f"{key}: {e}"]
    sizes = {k: data.get(k) for k in ("n_train", "n_heldout", "n_mt")}
    if None in sizes.values() or n >= sum(sizes.values()):
        return []
    if min_words > DEFAULT_MIN_WORDS:
        # the filter, not the sizes, is what a config raising it changed: blame it when the default would do
        at_default = _l10n_pair_count(deb.resolve(), st.st_mtime_ns, st.st_size, lang, DEFAULT_MIN_WORDS)
        if at_default >= sum(sizes.values()):
            return [
                f"data.l10n_min_english_words: {min_words} leaves {n} {lang!r} pairs in {key} {str(deb)!r} (English "
                f"msgids of fewer words are dropped), fewer than the {sum(sizes.values())} asked for by data.n_train "
                f"+ n_heldout + n_mt; {DEFAULT_MIN_WORDS} leaves {at_default}: lower l10n_min_english_words"
            ]
    room = n - sizes["n_heldout"] - sizes["n_mt"]
    fix = f"lower data.n_train to at most {room}" if room >= 1 else "lower data.n_heldout and data.n_mt"
    if min_words > DEFAULT_MIN_WORDS:
        fix += f", or data.l10n_min_english_words ({min_words})"
    lead = "data.n_heldout" if n_train is not None else "data.n_train"  # D from another corpus: not n_train's fault
    return [
        f"{lead}: n_train {sizes['n_train']} + n_heldout {sizes['n_heldout']} + n_mt {sizes['n_mt']} = "
        f"{sum(sizes.values())} pairs asked for, but {key} {str(deb)!r} holds {n} {lang!r} pairs after cleaning; "
        f"{fix}"
    ]


def check(config: dict, lang: str, corpus: dict, workdir: Path) -> list[str]:
    """The package is given, exists and holds enough pairs of the language."""
    if "deb" not in corpus:
        return [f"languages.{lang}.corpus.deb is required for corpus kind 'l10n'"]
    if not (workdir / corpus["deb"]).is_file():
        return [f"languages.{lang}.corpus.deb: file {corpus['deb']!r} does not exist"]
    return check_l10n_deb(workdir / corpus["deb"], lang, config)


def mean_line_chars(config: dict, lang: str, workdir: Path) -> float | None:
    """The mean characters of the target sentences the package gives."""
    corpus = config["languages"][lang]["corpus"]
    if "deb" not in corpus:
        return None
    deb = workdir / corpus["deb"]
    st = deb.stat()
    min_words = config.get("data", {}).get("l10n_min_english_words", DEFAULT_MIN_WORDS)
    return _l10n_pairs(deb.resolve(), st.st_mtime_ns, st.st_size, lang, min_words)[1]


def source(lang: str, corpus: dict, downloads: str) -> LocalFile:
    return LocalFile(f"languages.{lang}.corpus.deb", corpus["deb"], f"corpus {lang} (l10n)")


register(
    CorpusSpec(
        name="l10n",
        order=1,
        doc=(
            "Debian libreoffice-l10n package (embedded default; a stand-in for CC-100 / FLORES-200; gives the "
            "adaptation corpus, the held-out set and the MT test set)"
        ),
        label=LABEL,
        with_mt={"l10n": LABEL},
        licence="mpl-2.0",  # LibreOffice's translations
        rule="split_l10n",
        costs={"extract_l10n_pairs": (2000, 15), "split_l10n": (2000, 15)},
        steps={"extract_l10n_pairs": "data: translation pairs", "split_l10n": "data: split"},
        check=check,
        source=source,
        mean_line_chars=mean_line_chars,
        keys={"deb": {"type": "string", "description": "The .deb file."}},
    )
)
