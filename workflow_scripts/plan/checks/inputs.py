"""Planning-time checks of a config's input files: local models, Debian l10n packages, local CC-100 files, ORCHID's
language and size.

Called by ``checks.check_config``; cheap (a .deb read once and cached, a local corpus file read whole when
small, else its first MiBs), no torch.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.io import UserError
from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE

# A local corpus file (kinds cc100, text) at planning: one of at most CORPUS_COUNT_BYTES on disk is read whole and its
# usable lines counted (a few seconds at most); of a larger one, the first CORPUS_HEAD_BYTES decompressed bytes.
CORPUS_COUNT_BYTES = 64 << 20
CORPUS_HEAD_BYTES = 4 << 20
CORPUS_JUDGE_LINES = 1000  # usable lines kept to judge the script
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


def mean_line_chars(config: dict, lang: str, workdir: Path) -> float | None:
    """The mean characters of a line of D's source where planning reads it whole: an l10n package's target
    sentences, a local corpus file counted at planning (kinds cc100, text, up to CORPUS_COUNT_BYTES); else None."""
    corpus = config["languages"][lang]["corpus"]
    try:
        if corpus["kind"] == "l10n" and "deb" in corpus:
            deb = workdir / corpus["deb"]
            st = deb.stat()
            min_words = config.get("data", {}).get("l10n_min_english_words", DEFAULT_MIN_WORDS)
            return _l10n_pairs(deb.resolve(), st.st_mtime_ns, st.st_size, lang, min_words)[1]
        if corpus["kind"] in ("cc100", "text") and "path" in corpus:
            path = workdir / corpus["path"]
            st = path.stat()
            if st.st_size > CORPUS_COUNT_BYTES:
                return None
            usable, chars = _counted(path.resolve(), st.st_mtime_ns, st.st_size)
            return chars / usable if usable else None
    except Exception:  # the input checks name what is wrong with the file
        return None
    return None


@functools.lru_cache(maxsize=32)
def _counted(path: Path, mtime_ns: int, size: int) -> tuple[int, int]:
    scan = scan_corpus(path, True)
    return scan.usable, scan.chars


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


@dataclass
class CorpusScan:
    """What planning read of a local corpus file, cleaned as the sampling step cleans it (corpus.sample_lines)."""

    whole: bool  # the whole file was read (else its first CORPUS_HEAD_BYTES decompressed bytes)
    usable: int  # usable lines: non-blank, valid UTF-8, no NUL byte, at most MAX_LINE_CHARS characters
    distinct: int  # distinct usable lines, counted up to ``distinct_cap``
    chars: int  # characters of the usable lines
    skipped: str  # what was skipped, in words
    texts: list[str]  # the first usable lines (up to CORPUS_JUDGE_LINES)


def scan_corpus(path: Path, whole: bool, distinct_cap: int = 0, what: str = "corpus") -> CorpusScan:
    """Read a local corpus file (plain, gzip or xz, told by its magic bytes) line by line as the sampling step does:
    all of it with ``whole``, else its first CORPUS_HEAD_BYTES decompressed bytes, never holding more than an
    over-long line's MAX_LINE_CHARS (a 30 GB file of one line plans in a fraction of a second). UTF-16 text inside
    a compressed file is a UserError, as in the step."""
    from workflow_scripts.corpus import _Counts, _usable_lines, open_text_stream
    from workflow_scripts.io import MAX_LINE_CHARS, check_text_head

    counts, texts, seen, chars = _Counts(), [], set(), 0
    too_long = 4 * MAX_LINE_CHARS + 8  # bytes of a line in progress that must be over MAX_LINE_CHARS characters

    def take(block: bytes) -> None:
        nonlocal chars
        lines = _usable_lines(block, counts, 1, MAX_LINE_CHARS)
        chars += sum(map(len, lines))
        texts.extend(lines[: CORPUS_JUDGE_LINES - len(texts)])
        for line in lines:
            if len(seen) >= distinct_cap:
                break
            seen.add(line)

    read, carry, skipping, ended = 0, b"", False, False
    with open_text_stream(path, external=False) as f:
        while whole or read < CORPUS_HEAD_BYTES:
            chunk = f.read(1 << 20)
            if not chunk:
                ended = True
                break
            if not read:
                check_text_head(path, chunk[:4096], what=f"decompressed {what}")
            read += len(chunk)
            if skipping:  # the rest of an over-long line
                cut = chunk.find(b"\n")
                if cut < 0:
                    continue
                counts.long += 1
                counts.total += 1
                skipping, chunk = False, chunk[cut + 1 :]
            chunk = carry + chunk
            cut = chunk.rfind(b"\n") + 1
            carry = chunk[cut:]
            if cut:
                take(chunk[:cut])
            if len(carry) > too_long:
                skipping, carry = True, b""
    if ended and skipping:
        counts.long += 1
        counts.total += 1
    elif ended and carry:
        take(carry)
    skipped = (
        f"{counts.total} line(s): {counts.empty} blank, {counts.invalid} not valid UTF-8, {counts.nul} with NUL "
        f"bytes, {counts.long} longer than {MAX_LINE_CHARS} characters"
    )
    return CorpusScan(
        ended, counts.total - counts.empty - counts.invalid - counts.nul - counts.long, len(seen), chars, skipped, texts
    )


def corpus_file_problems(
    path: Path, lang: str, config: dict, kind: str = "cc100"
) -> tuple[list[str], CorpusScan | None]:
    """A local corpus file (kinds cc100 and text) as the sampling step (rule sample_cc100) will read it: not empty,
    in a compression it reads (gzip or xz by magic bytes, whatever the suffix), UTF-8 text with usable lines, some
    in the language's script; a file of at most CORPUS_COUNT_BYTES is read whole and its distinct usable lines
    counted against data.n_train + data.n_heldout. Never refuses a file the step accepts. Returns the problems and
    what was read (None where nothing could be)."""
    from workflow_scripts.corpus import compression
    from workflow_scripts.io import check_text_head
    from workflow_scripts.languages import in_script

    key, shown = f"languages.{lang}.corpus.path", str(path)
    if path.stat().st_size == 0:
        return [f"{key}: file {shown!r} is empty"], None
    try:
        with open(path, "rb") as f:
            check_text_head(path, f.read(4096), what=f"{kind} corpus", expect=compression(path))
    except UserError as e:
        return [f"{key}: {e}"], None
    data = config.get("data", {})
    want = data.get("n_train", 0) + data.get("n_heldout", 0)
    whole = path.stat().st_size <= CORPUS_COUNT_BYTES
    try:
        scan = scan_corpus(path, whole, distinct_cap=want, what=f"{kind} corpus")
    except UserError as e:
        return [f"{key}: {e}"], None
    except (OSError, EOFError, ValueError) as e:  # lzma.LZMAError and gzip.BadGzipFile are OSError or ValueError
        return [f"{key}: cannot decompress {shown!r}: {e}"], None
    if scan.whole and not scan.usable:
        return [
            f"{key}: {shown!r} holds no usable line ({scan.skipped}): a corpus is UTF-8 text, one sentence or "
            "paragraph a line"
        ], scan
    if scan.texts and not any(in_script(t, lang) for t in scan.texts):
        return [
            f"{key}: none of the first {len(scan.texts)} usable lines of {shown!r} is in the script of {lang!r} "
            f"(e.g. {scan.texts[0][:60]!r}): is it the file of another language?"
        ], scan
    if scan.whole and want and scan.distinct < want:
        return [
            f"data.n_train: n_train {data['n_train']} + n_heldout {data['n_heldout']} = {want} distinct lines asked "
            f"for, but {key} {shown!r} holds {scan.usable} usable lines, {scan.distinct} of them distinct (of "
            f"{scan.skipped}); lower data.n_train or data.n_heldout, or give a larger file"
        ], scan
    return [], scan


def check_cc100_file(path: Path, lang: str, config: dict | None = None, kind: str = "cc100") -> list[str]:
    """``corpus_file_problems``' problems alone."""
    return corpus_file_problems(path, lang, config or {}, kind)[0]


def repo_id_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` is not a Hugging Face repository id (huggingface_hub's own validator), or None."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        return str(e).split(": '")[0].removesuffix(".")
    return None


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
    if kind == "hub" and "path" in spec:
        problem = repo_id_problem(spec["path"])
        if problem:
            errors.append(
                f"models.{name}.path: {spec['path']!r} is not a Hugging Face repository id ({problem}); give "
                "'namespace/name', e.g. HuggingFaceTB/SmolLM2-135M, or use kind 'local' for a folder"
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
        elif mt["kind"] == "flores" and not (workdir / mt["root"]).is_dir() and repo_id_problem(mt["root"]):
            errors.append(
                f"languages.{lang}.mt.root: {mt['root']!r} is neither an existing folder nor a Hugging Face dataset "
                "id; give the folder of the flores_plus parquet files or a dataset id such as "
                "openlanguagedata/flores_plus"
            )
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
        shipped = sorted((workdir / "resources" / "l10n").glob(f"libreoffice-l10n-{lang}_*.deb"))
        example = f"e.g. {shipped[0].relative_to(workdir)}" if shipped else f"a libreoffice-l10n-{lang}_*.deb file"
        return [
            f"{key} is required for mt kind 'l10n' with corpus kind {corpus['kind']!r} (that corpus has no MT pairs): "
            f"name the libreoffice-l10n package of {lang!r}, {example}, or use mt kind 'flores'"
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
    if "url" in corpus:
        from urllib.parse import urlparse

        url = urlparse(corpus["url"])
        if url.scheme not in ("http", "https", "ftp") or not url.netloc:
            return [
                f"languages.{lang}.corpus.url: {corpus['url']!r} is not an http(s) or ftp URL; give one such as "
                f"https://data.statmt.org/cc-100/{lang}.txt.xz, or a local file as path"
            ]
    if "path" in corpus and not (workdir / corpus["path"]).is_file():
        return [f"languages.{lang}.corpus.path: file {corpus['path']!r} does not exist"]
    if "path" in corpus:
        return check_cc100_file(workdir / corpus["path"], lang, config, corpus["kind"])
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
