"""Planning-time checks of a config's input files: local models, Debian l10n packages, local CC-100 files, ORCHID's
language and size.

Called by ``config_checks.check_config``; cheap (a .deb read once and cached, the first MiB of a CC-100 file), no
torch.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

from workflow_scripts.io import UserError
from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE

CC100_PEEK_BYTES = 1 << 20  # decompressed bytes of a local CC-100 file read at planning time
DEFAULT_MIN_WORDS = 4  # the schema's default data.l10n_min_english_words


@functools.lru_cache(maxsize=32)
def _l10n_pair_count(deb: Path, mtime_ns: int, size: int, lang: str, min_words: int) -> int:
    """Pairs that extract_l10n_pairs will keep (under a second: the .deb is read and cleaned as the job does)."""
    from workflow_scripts import l10n

    return len(l10n.extract(deb, lang, min_words)[0])


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


_MAGIC = {".xz": b"\xfd7zXZ\x00", ".gz": b"\x1f\x8b"}


def check_cc100_file(path: Path, lang: str) -> list[str]:
    """What is cheap to check in a local CC-100 file: it is not empty, its compression matches its suffix, its first
    MiB decompresses into UTF-8 lines, some of them in the language's script. The line count needs the whole stream:
    sample_cc100 checks it."""
    from workflow_scripts.corpus import open_text_stream
    from workflow_scripts.languages import in_script

    key = f"languages.{lang}.corpus.path"
    if path.stat().st_size == 0:
        return [f"{key}: file {str(path)!r} is empty"]
    magic = _MAGIC.get(path.suffix)
    if magic is not None:
        with open(path, "rb") as f:
            if f.read(len(magic)) != magic:
                return [f"{key}: file {str(path)!r} is not {path.suffix[1:]}-compressed, as its name says"]
    try:
        with open_text_stream(path, external=False) as f:
            head = f.read(CC100_PEEK_BYTES)
    except Exception as e:
        return [f"{key}: cannot decompress {str(path)!r}: {e}"]
    if b"\x00" in head:
        return [f"{key}: {str(path)!r} contains NUL bytes: a CC-100 file is UTF-8 text (is this one UTF-16 or binary?)"]
    lines = head.split(b"\n")[:-1] if len(head) == CC100_PEEK_BYTES else head.split(b"\n")  # drop a cut line
    texts = []
    for raw in lines:
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            continue
        if text:
            texts.append(text)
    if not texts:
        return [
            f"{key}: the start of {str(path)!r} holds no usable line ({len(lines)} lines, blank or not UTF-8): "
            "a CC-100 file is UTF-8 text, one paragraph a line"
        ]
    if not any(in_script(t, lang) for t in texts):
        return [
            f"{key}: none of the first {len(texts)} lines of {str(path)!r} is in the script of {lang!r} "
            f"(e.g. {texts[0][:60]!r}): is it the file of another language?"
        ]
    return []


def check_model(name: str, spec: dict, workdir: Path) -> list[str]:
    from workflow_scripts.source_model import package_file_problem, random_llama_problem

    kind = spec["kind"]
    errors = []
    if kind == "local" and "path" in spec:
        path = workdir / spec["path"]
        if path.is_file():
            errors.append(
                f"models.{name}.path: {spec['path']!r} is a file; a local model must be a folder (the output of "
                "save_pretrained: config.json, weights, tokenizer)"
            )
        elif not path.is_dir():
            errors.append(f"models.{name}.path: local model folder {spec['path']!r} does not exist")
        elif not (path / "config.json").is_file():
            errors.append(
                f"models.{name}.path: folder {spec['path']!r} has no config.json; a local model must be a "
                "save_pretrained folder (config.json, weights, tokenizer)"
            )
    if kind in ("gguf_package", "random_llama") and "package" in spec and "file" in spec:
        problem = package_file_problem(spec["package"], spec["file"])
        if problem:
            errors.append(f"models.{name}.{problem[0]}: {problem[1]}")
    if kind == "random_llama":
        problem = random_llama_problem(spec.get("random", {}))
        if problem:
            errors.append(f"models.{name}.random.num_heads: {problem}")
    return errors


# The keys each model kind needs beside ``kind`` (an instruction-tuned sibling ``chat`` is checked as a model).
_MODEL_KEYS = {
    "hub": ["path"],
    "local": ["path"],
    "gguf_package": ["package", "file"],
    "random_llama": ["package", "file"],
}


def check_sources(config: dict, workdir: Path) -> list[str]:
    """The models and the languages' corpora and MT sources: required keys, files that exist, cheap content checks."""
    errors: list[str] = []
    chats = [(f"{n}.chat", s["chat"]) for n, s in config["models"].items() if isinstance(s.get("chat"), dict)]
    for name, spec in [*config["models"].items(), *chats]:
        kind = spec["kind"]
        for key in _MODEL_KEYS[kind]:
            if key not in spec:
                errors.append(f"models.{name}.{key} is required for kind {kind!r}")
        errors += check_model(name, spec, workdir)
    for lang, spec in config["languages"].items():
        errors += _check_corpus(config, lang, spec["corpus"], workdir)
        mt = spec.get("mt", {"kind": "l10n"})
        if mt["kind"] == "l10n":
            errors += _check_mt_deb(config, lang, spec, workdir)
        if mt["kind"] == "flores" and "root" not in mt:
            errors.append(f"languages.{lang}.mt.root is required for mt kind 'flores'")
        if mt["kind"] in ("tsv", "jsonl"):
            errors += check_own_pairs(lang, mt, workdir)
    return errors


def check_own_pairs(lang: str, mt: dict, workdir: Path) -> list[str]:
    """mt kinds tsv and jsonl: the pairs file exists and reads as the rule own_mt reads it (pairs files are small)."""
    from workflow_scripts.corpus import read_own_pairs

    key = f"languages.{lang}.mt.path"
    if "path" not in mt:
        return [f"{key} is required for mt kind {mt['kind']!r}: your pairs file"]
    path = workdir / mt["path"]
    if not path.is_file():
        return [f"{key}: file {mt['path']!r} does not exist"]
    try:
        read_own_pairs(path, mt["kind"], lang)
    except UserError as e:
        return [f"{key}: {e}"]
    return []


def _check_mt_deb(config: dict, lang: str, spec: dict, workdir: Path) -> list[str]:
    """mt kind l10n: the package of the MT pairs (mt.deb, else corpus.deb); an l10n corpus already checked it."""
    corpus, deb = spec["corpus"], spec.get("mt", {}).get("deb")
    key = f"languages.{lang}.mt.deb"
    if corpus["kind"] == "l10n":
        if deb is not None and deb != corpus.get("deb"):
            return [
                f"{key}: {deb!r} is not languages.{lang}.corpus.deb {corpus.get('deb')!r}; with an l10n corpus one "
                "package gives D, the held-out set and the MT pairs, disjointly: leave mt.deb out"
            ]
        return []
    if deb is None:
        return [
            f"{key} is required for mt kind 'l10n' with corpus kind {corpus['kind']!r} (that corpus has no MT pairs): "
            "name a libreoffice-l10n package, e.g. resources/l10n/libreoffice-l10n-th_4_7.4.7-1+deb12u14_all.deb, "
            "or use mt kind 'flores'"
        ]
    if not (workdir / deb).is_file():
        return [f"{key}: file {deb!r} does not exist"]
    return check_l10n_deb(workdir / deb, lang, config, key=key, n_train=0)


def _check_orchid(config: dict, lang: str, corpus: dict) -> list[str]:
    """ORCHID is Thai text, of a fixed size."""
    from workflow_scripts.orchid import MAX_SENTENCES

    if lang != "th":
        return [
            f"languages.{lang}.corpus.kind: 'orchid' is the ORCHID corpus of Thai text; only languages.th may use it "
            f"(for {lang}: l10n, cc100 or text)"
        ]
    if "deb" in corpus:
        return [f"languages.{lang}.corpus.deb: corpus kind 'orchid' reads no package; name the MT pairs' as mt.deb"]
    data = config.get("data", {})
    n_train, n_heldout = data.get("n_train", 30000), data.get("n_heldout", 100000)
    if n_train + n_heldout > MAX_SENTENCES:
        return [
            f"data.n_train: n_train {n_train} + n_heldout {n_heldout} = {n_train + n_heldout} sentences asked for, "
            f"but ORCHID (languages.{lang}.corpus.kind) holds at most {MAX_SENTENCES} usable ones, fewer once split "
            "by document; lower data.n_train or data.n_heldout"
        ]
    return []


def _check_corpus(config: dict, lang: str, corpus: dict, workdir: Path) -> list[str]:
    if corpus["kind"] == "orchid":
        return _check_orchid(config, lang, corpus)
    if corpus["kind"] == "l10n":
        if "deb" not in corpus:
            return [f"languages.{lang}.corpus.deb is required for corpus kind 'l10n'"]
        if not (workdir / corpus["deb"]).is_file():
            return [f"languages.{lang}.corpus.deb: file {corpus['deb']!r} does not exist"]
        return check_l10n_deb(workdir / corpus["deb"], lang, config)
    if ("path" in corpus) == ("url" in corpus):
        return [f"languages.{lang}.corpus: give exactly one of path and url for corpus kind {corpus['kind']!r}"]
    if "path" in corpus and not (workdir / corpus["path"]).is_file():
        return [f"languages.{lang}.corpus.path: file {corpus['path']!r} does not exist"]
    if "path" in corpus:
        return check_cc100_file(workdir / corpus["path"], lang)
    return []


# tokenizer.ggml.model -> the vocab step's route (pieces.detect_family): "gpt2" byte-level BPE, "llama" SentencePiece.
_GGUF_FAMILIES = {"gpt2": BYTE_LEVEL_BPE, "llama": SENTENCEPIECE_BPE}


def tokenizer_family(spec: dict, workdir: Path) -> str | None:
    """The source tokenizer's family where planning can read it cheaply (a local folder's tokenizer.json, a
    package's GGUF header); None for a hub model (not downloaded yet) or anything unreadable."""
    from workflow_scripts.pieces import detect_family
    from workflow_scripts.source_model import gguf_metadata, locate_package_file

    try:
        if spec["kind"] == "local":
            return detect_family(workdir / spec["path"])
        if spec["kind"] in ("gguf_package", "random_llama"):
            model = gguf_metadata(locate_package_file(spec["package"], spec["file"]), "tokenizer.ggml.model")
            return _GGUF_FAMILIES.get(model)
    except (OSError, ValueError, KeyError, struct.error):
        return None  # the model checks report what is wrong with it
    return None
