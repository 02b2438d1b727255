"""MT kind l10n, the embedded default: pairs held out from a Debian libreoffice-l10n package, the corpus's (an l10n
corpus gives D, the held-out set and the MT pairs disjointly) or ``mt.deb`` where the corpus is of another kind. Its
rules (extract_l10n_pairs, split_l10n) and their costs are the l10n corpus kind's (workflow_scripts/corpora/l10n.py);
with another corpus, split_l10n keeps no pairs for D. A stand-in for FLORES-200, and labelled so."""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.corpora.l10n import check_l10n_deb
from workflow_scripts.mt_sources import MtSpec, register


def check(config: dict, lang: str, mt: dict, workdir: Path) -> list[str]:
    """The package of the MT pairs (mt.deb, else corpus.deb); an l10n corpus already checked it."""
    corpus, deb = config["languages"][lang]["corpus"], mt.get("deb")
    key = f"languages.{lang}.mt.deb"
    if corpus["kind"] == "l10n":
        if deb is not None and deb != corpus.get("deb"):
            return [
                f"{key}: {deb!r} is not languages.{lang}.corpus.deb {corpus.get('deb')!r}; with an l10n corpus one "
                "package gives D, the held-out set and the MT pairs, disjointly: leave mt.deb out"
            ]
        return []
    if deb is None:
        shipped = sorted((workdir / "resources" / "l10n").glob(f"libreoffice-l10n-{lang}_*.deb"))
        example = f"e.g. {shipped[0].relative_to(workdir)}" if shipped else f"a libreoffice-l10n-{lang}_*.deb file"
        return [
            f"{key} is required for mt kind 'l10n' with corpus kind {corpus['kind']!r} (that corpus has no MT pairs): "
            f"name the libreoffice-l10n package of {lang!r}, {example}, or use mt kind 'flores'"
        ]
    if not (workdir / deb).is_file():
        return [f"{key}: file {deb!r} does not exist"]
    return check_l10n_deb(workdir / deb, lang, config, key=key, n_train=0)


register(
    MtSpec(
        name="l10n",
        order=1,
        doc="pairs held out from the l10n package",
        label="stand-in for FLORES-200: LibreOffice UI translations (Debian libreoffice-l10n)",
        licence="mpl-2.0",  # LibreOffice's translations
        rule="split_l10n",
        check=check,
        keys={
            "deb": {
                "type": "string",
                "description": (
                    "The Debian libreoffice-l10n package of the MT test pairs; default corpus.deb. Needed where the "
                    "corpus is not l10n (e.g. orchid for th); with an l10n corpus it must be that package."
                ),
            }
        },
    )
)
