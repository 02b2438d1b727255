"""One speed job's settings: its command line (``__main__``) parsed once into a typed, checked object.

The fields are the command line's options under their own names, so that a reader of rule measure_speed's command
finds each one here, and ``fingerprint`` (the key of a job's partial file, ``job``) is the options that change what is
timed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workflow_scripts.speed.measure import Settings
from workflow_scripts.tasks import TASKS, TIMED_CHOICE_TASKS

# options that change no record: a rerun with other ones still reuses the finished units
UNTIMED_OPTIONS = ("log", "threads", "out")


@dataclass(frozen=True)
class JobSettings:
    """What one speed job times, on which model and data, and where its records go (``__main__``'s options)."""

    model: str
    source_tokenizer: str
    pairs: str
    lang: str
    cell: str  # the --cell argument: inline JSON or a JSON file (evaluation.read_cell)
    out: str
    n: int | None = None
    batch_size: int = 4
    data_label: str | None = None
    dtype: str = "auto"
    threads: int | None = None
    log: str | None = None
    sum_data: str | None = None
    choice_data: dict[str, str] = field(default_factory=dict)  # log-likelihood task -> its dataset folder
    choice_fewshot: dict[str, int] = field(default_factory=dict)  # each --choice-data task's few-shot examples
    large_batch_decodings: tuple[str, ...] | None = None  # None: every decoding at the larger batch
    max_new_tokens: int = 128
    repeats: int = 3
    warmup: int = 1
    decodings: tuple[str, ...] = ("greedy",)
    no_teacher_forced: bool = False
    paired: bool = False
    reference_chars: int = 0  # teacher forcing: the first N characters of each reference (0: all)
    seed: int = 42
    mumo_k: int = 10
    mumo_no_verify: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> JobSettings:
        """The settings of the parsed command line (argparse's destinations): ``--choice-data`` and
        ``--choice-fewshot`` entries read, each task's few-shot count defaulting to its spec's, every count checked.
        A ValueError names the option that is wrong."""
        for name in ("repeats", "batch_size", "max_new_tokens"):
            if options[name] < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {options[name]}")
        choice_data = parse_choice_data(options["choice_data"])
        fewshot = parse_choice_fewshot(options["choice_fewshot"], choice_data)
        if options["warmup"] < 0 or options["reference_chars"] < 0:
            raise ValueError(
                f"--warmup and --reference-chars must be at least 0, got {options['warmup']}, "
                f"{options['reference_chars']}"
            )
        large = options["large_batch_decodings"]
        return cls(
            **{
                **options,
                "choice_data": choice_data,
                "choice_fewshot": fewshot,
                "decodings": tuple(options["decodings"]),
                "large_batch_decodings": None if large is None else tuple(large),
            }
        )

    @property
    def timing(self) -> Settings:
        """What ``measure`` times: repeats after warm-up, batch size 1 and ``batch_size``, the decodings."""
        return Settings(
            max_new_tokens=self.max_new_tokens,
            repeats=self.repeats,
            warmup=self.warmup,
            batch_sizes=tuple(dict.fromkeys((1, self.batch_size))),
            decodings=self.decodings,
            teacher_forced=not self.no_teacher_forced,
            seed=self.seed,
            large_batch_decodings=self.large_batch_decodings or (),
        )

    def fingerprint(self) -> dict[str, Any]:
        """The options that change what is timed, sorted: a partial file written with others is not reused."""
        return {k: v for k, v in sorted(asdict(self).items()) if k not in UNTIMED_OPTIONS}


def parse_choice_data(entries: Sequence[str]) -> dict[str, str]:
    """``--choice-data`` entries (TASK=FOLDER) as task -> folder."""
    choice_data = {}
    for entry in entries:
        task, sep, folder = entry.partition("=")
        if not sep or task not in TIMED_CHOICE_TASKS or not folder:
            raise ValueError(
                f"--choice-data takes TASK=FOLDER with TASK one of {', '.join(TIMED_CHOICE_TASKS)}, got {entry!r}"
            )
        choice_data[task] = folder
    return choice_data


def parse_choice_fewshot(entries: Sequence[str], choice_data: Mapping[str, str]) -> dict[str, int]:
    """Few-shot examples per ``--choice-data`` task: its spec's (the harness's default), or a ``--choice-fewshot``
    entry's (TASK=N)."""
    fewshot = {task: TASKS[task].fewshot for task in choice_data}
    for entry in entries:
        task, sep, count = entry.partition("=")
        if not sep or task not in choice_data or not count.isdigit():
            raise ValueError(f"--choice-fewshot takes TASK=N with TASK one of the --choice-data tasks, got {entry!r}")
        fewshot[task] = int(count)
    return fewshot
