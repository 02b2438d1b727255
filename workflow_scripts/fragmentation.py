"""Fragmentation of each language by each source tokenizer (paper 002 Figure 2).

Mean tokens per sentence (the paper's measure, on FLORES-200 dev), tokens per character, and the ratio to English on
the same sentences, as a tidy CSV: one row per tokenizer and language. Texts come as plain files (``--texts LANG=FILE``;
``en`` is the English reference, meaningful when the files are parallel) or as the workflow's parallel mt files
(``--pairs LANG=TSV``, lines "English<TAB>target"): then each language's ratio is to its own English side, and the
``en`` row pools the English sides unless ``--texts en=...`` is given.
Special tokens (BOS) are not counted. The texts are whatever the config supplies; the embedded default uses LibreOffice
UI translations, a stand-in for FLORES, and ``--texts-label`` says so in every row.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from tokenizers import Tokenizer

from workflow_scripts.io import atomic_path, cli_main, read_corpus, read_pairs, setup_logging

ENGLISH = "en"
COLUMNS = [
    "tokenizer",
    "language",
    "sentences",
    "characters",
    "tokens",
    "tokens_per_sentence",
    "tokens_per_character",
    "ratio_to_english",
    "texts",
]


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A tokenizer from a folder holding tokenizer.json, or the file itself."""
    path = Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"no tokenizer.json at {file}")
    return Tokenizer.from_file(str(file))


def count_tokens(tokenizer: Tokenizer, lines: Sequence[str]) -> int:
    """Tokens of all lines, without special tokens."""
    return sum(len(e.ids) for e in tokenizer.encode_batch(list(lines), add_special_tokens=False))


def fragmentation(
    tokenizers: Mapping[str, Tokenizer],
    texts: Mapping[str, Sequence[str]],
    texts_label: str = "",
    english_of: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Tokens per sentence and per character for every tokenizer x language (paper 002 Fig. 2).

    ``ratio_to_english`` is the language's token count over English's under the same tokenizer: over the parallel
    English of ``english_of[lang]`` where given, else over ``texts["en"]`` (meaningful only for parallel files); empty
    without either.
    """
    english_of = english_of or {}
    rows = []
    for name, tok in tokenizers.items():
        counts = {lang: count_tokens(tok, [s for s in lines if s]) for lang, lines in texts.items()}
        for lang, lines in texts.items():
            lines = [s for s in lines if s]
            if not lines:
                raise ValueError(f"no text for language {lang}")
            chars = sum(len(s) for s in lines)
            english = counts.get(ENGLISH)
            if lang in english_of:
                english = count_tokens(tok, [s for s in english_of[lang] if s])
            rows.append(
                {
                    "tokenizer": name,
                    "language": lang,
                    "sentences": len(lines),
                    "characters": chars,
                    "tokens": counts[lang],
                    "tokens_per_sentence": counts[lang] / len(lines),
                    "tokens_per_character": counts[lang] / chars,
                    "ratio_to_english": counts[lang] / english if english else None,
                    "texts": texts_label,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ValueError(f"{what} must be NAME=PATH, got {item!r}")
        if name in out:
            raise ValueError(f"{what} {name} given twice")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokenizers", nargs="+", required=True, help="NAME=DIR (a folder with tokenizer.json)")
    p.add_argument("--texts", nargs="+", default=[], help="LANG=FILE, one sentence a line; en for the ratio")
    p.add_argument("--pairs", nargs="+", default=[], help="LANG=TSV, parallel 'English<TAB>target' lines")
    p.add_argument("--texts-label", default="", help="what the texts are, e.g. 'FLORES-200 dev' or an l10n stand-in")
    p.add_argument("--out", required=True, help="tidy CSV")
    p.add_argument("--log")
    args = p.parse_args(argv)
    log = setup_logging(args.log)
    tokenizers = {name: load_tokenizer(path) for name, path in _pairs(args.tokenizers, "--tokenizers").items()}
    texts = {lang: read_corpus(path, what=f"{lang} text") for lang, path in _pairs(args.texts, "--texts").items()}
    english_of = {}
    for lang, path in _pairs(args.pairs, "--pairs").items():
        if lang in texts:
            raise ValueError(f"language {lang} given by both --texts and --pairs")
        rows = read_pairs(path)
        english_of[lang], texts[lang] = [en for en, _ in rows], [tgt for _, tgt in rows]
    if not texts:
        p.error("give --texts or --pairs")
    if english_of and ENGLISH not in texts:
        texts = {ENGLISH: [s for lang in english_of for s in english_of[lang]], **texts}
    frame = fragmentation(tokenizers, texts, args.texts_label, english_of)
    with atomic_path(args.out) as tmp:
        frame.to_csv(tmp, index=False)
    for row in frame.itertuples():
        log.info("%s %s: %.1f tokens/sentence", row.tokenizer, row.language, row.tokens_per_sentence)


if __name__ == "__main__":
    cli_main(main)  # expected failures (bad input files) as one line, exit 1
