"""Planning-time checks of a config's input files: local models, each language's corpus and MT pairs (each kind's own
check: workflow_scripts/corpora/, workflow_scripts/mt_sources/).

Called by ``checks.check_config``; cheap (a .deb read once and cached, a local corpus file read whole when
small, else its first MiBs), no torch.
"""

from __future__ import annotations

import struct
from pathlib import Path

from workflow_scripts import corpora, mt_sources
from workflow_scripts.hub_cache import repo_id_problem
from workflow_scripts.mt_sources import mt_of
from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE


def mean_line_chars(config: dict, lang: str, workdir: Path) -> float | None:
    """The mean characters of a line of D's source where planning reads it whole (its kind's ``mean_line_chars``:
    an l10n package's target sentences, a local text file up to text_file.CORPUS_COUNT_BYTES); else None."""
    measure = corpora.of(config, lang).mean_line_chars
    try:
        return measure(config, lang, workdir) if measure else None
    except Exception:  # the input checks name what is wrong with the file
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
        corpus = spec["corpus"]
        errors += corpora.of(config, lang).check(config, lang, corpus, workdir)
        mt = mt_of(config, lang)
        errors += mt_sources.of(config, lang).check(config, lang, mt, workdir)
    return errors


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
