"""The registry of initialization methods and the row arithmetic they share (paper 002 §4; docs/initialization.md,
"Initialization").

A method maps (source matrix, context, role) to an ``InitResult``: the new rows and one record per new token. Random
draws; every other method is a weighted sum of source rows, a ``Plan`` (source id -> weight) computed once per run,
cached in ``InitContext.cache`` and applied to each matrix by ``rows_from_plans``. A method registers itself with what
the rest of the package needs to know about it (``MethodSpec``): nothing outside its module names it. Nothing here
imports torch at module level, so the Snakefile can read ``INIT_METHODS`` and ``CORPUS_METHODS`` at planning time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workflow_scripts.initialize.tokens import NewToken, clean_bpe_model, source_subwords

_STATS_CHUNK = 8192  # rows per block when reducing over V_s, so a 128K-row bf16 matrix is never upcast whole

Plan = dict[int, float]


@dataclass
class InitContext:
    """What a method may use besides the source matrix: tokenizers, V_s, V_new, seed, method-specific resources."""

    source_tokenizer: Any
    target_tokenizer: Any
    source_ids: list[int]  # ids of V_s: the rows that statistics ("over the source rows") run over
    new_tokens: list[NewToken]
    seed: int
    tied: bool
    resources: dict[str, Any] = field(default_factory=dict)  # e.g. the corpus D for Align / FOCUS
    _bpe: Any = None
    _subwords: dict[int, tuple[list[int], str | None]] = field(default_factory=dict)
    _stats: dict[tuple, tuple[Any, Any]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # role-independent plans (Merge trees, Align counts, FOCUS)

    def corpus(self, method: str) -> list[str]:
        """The adaptation corpus D (``resources["corpus"]``); a clear error for methods that need it."""
        lines = self.resources.get("corpus")
        if lines is None:
            raise ValueError(
                f"{method} initialization needs the adaptation corpus D: pass --corpus FILE (one sentence a line)"
            )
        lines = [line for line in lines if line.strip()]
        if not lines:
            raise ValueError(f"{method} initialization got an empty corpus D")
        return lines

    def row_stats(self, matrix: Any) -> tuple[Any, Any]:
        """:func:`source_row_stats` of ``matrix`` over V_s, computed once per matrix."""
        key = (matrix.data_ptr(), tuple(matrix.shape))
        if key not in self._stats:
            self._stats[key] = source_row_stats(matrix, self.source_ids)
        return self._stats[key]

    def subwords(self, token: NewToken) -> tuple[list[int], str | None]:
        """The source ids spelling ``token`` (:func:`source_subwords`), cached across roles and methods."""
        if token.id not in self._subwords:
            if self._bpe is None:
                self._bpe = clean_bpe_model(self.source_tokenizer)
            self._subwords[token.id] = source_subwords(self._bpe, token.piece)
        return self._subwords[token.id]


@dataclass
class InitResult:
    """New rows (one per token of ``ctx.new_tokens``, float64) and one JSON-able record per token.

    Each record has "rule" (what produced the row) and "fallback" (None, or why the method's own rule did not apply).
    """

    rows: Any  # torch.Tensor [k, d]
    records: list[dict]


# (source matrix [n_rows, d] in its own dtype, context, role "input" | "output") -> InitResult
InitMethod = Callable[[Any, InitContext, str], InitResult]
# A method's entries of the report's "method_stats" (corpus statistics, timings, a note on the rule it applied).
MethodStats = Callable[[InitContext], dict]

# How a method treats vocabulary replacement (vocab: replace, Table 11; ``replace.py``): the tokens the new
# vocabulary shares with V_s copy their source rows (COPY_SHARED) or are initialized like every other row (ALL_ROWS).
COPY_SHARED, ALL_ROWS = "copy_shared", "all_rows"
# Where a method registered without ``order`` is listed: after the paper's methods, in discovery order.
LAST = 1000


@dataclass(frozen=True)
class MethodSpec:
    """What the package needs to know about a method besides its function, declared where the method is registered.

    ``needs_corpus``: it reads D (the command line then requires --corpus). ``needs_model``: it runs the source model
    (``initialize_model`` then puts the model, untouched, in ``resources["model"]``; it is loaded anyway, so this costs
    the other methods nothing). ``compared_with_mean``: the report counts
    the new rows that differ from Mean's (every method built from source rows; not Random, which draws, nor Mean).
    ``stats``: its entries of the report's method_stats. ``replace``: None (expansion only), COPY_SHARED or ALL_ROWS.
    ``order``: its place in ``INIT_METHODS`` and so in reports (the paper's order, Random to EEVE). ``options``: the
    settings a config may change for it (``initialization.<method>``), with their defaults (``method_options``).
    ``draws``: its rows depend on the seed (Random's draws, FOCUS's fastText, Token Distillation's snippet order); a
    method that draws nothing is initialized once and shared by every training seed of its cells.
    """

    name: str
    fn: InitMethod
    needs_corpus: bool = False
    compared_with_mean: bool = True
    stats: MethodStats | None = None
    replace: str | None = None
    order: int = LAST
    needs_model: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    draws: bool = False


# The registries, filled by the modules of ``methods/`` as the package imports them (``methods.discover``).
METHOD_SPECS: dict[str, MethodSpec] = {}
INIT_METHODS: dict[str, InitMethod] = {}
# Methods that read the adaptation corpus D (resources["corpus"]), in the order of INIT_METHODS: Align, FOCUS.
CORPUS_METHODS: list[str] = []


def register_method(
    name: str,
    needs_corpus: bool = False,
    *,
    compared_with_mean: bool = True,
    stats: MethodStats | None = None,
    replace: str | None = None,
    order: int = LAST,
    needs_model: bool = False,
    options: dict[str, Any] | None = None,
    draws: bool = False,
) -> Callable[[InitMethod], InitMethod]:
    """Register an initialization method under its paper name (Random, Mean, Merge, Align, FOCUS, EEVE), with what
    the package needs to know about it (``MethodSpec``)."""
    if replace not in (None, COPY_SHARED, ALL_ROWS):
        raise ValueError(f"{name}: replace must be None, {COPY_SHARED!r} or {ALL_ROWS!r}, got {replace!r}")

    def deco(fn: InitMethod) -> InitMethod:
        if name in METHOD_SPECS:
            raise ValueError(f"initialization method {name!r} is registered twice")
        METHOD_SPECS[name] = MethodSpec(
            name, fn, needs_corpus, compared_with_mean, stats, replace, order, needs_model, dict(options or {}), draws
        )
        _reorder()
        return fn

    return deco


def method_options(name: str, given: dict[str, Any] | None) -> dict[str, Any]:
    """A method's settings: its registered defaults (``MethodSpec.options``) with ``given`` (a config's
    ``initialization.<name>``) over them. Raises ValueError naming an unknown method, a setting the method does not
    have, or a value of another type than its default's (an integer for a number is accepted)."""
    if name not in METHOD_SPECS:
        raise ValueError(f"initialization: {name!r} is not a registered method; registered: {list(METHOD_SPECS)}")
    defaults = METHOD_SPECS[name].options
    given = dict(given or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        have = f"its settings: {sorted(defaults)}" if defaults else "it has none"
        raise ValueError(f"initialization.{name}: no setting {', '.join(map(repr, unknown))}; {have}")
    for key, value in given.items():
        default = defaults[key]
        numeric = isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool)
        if type(value) is not type(default) and not numeric:
            raise ValueError(
                f"initialization.{name}.{key}: {value!r} is not a {type(default).__name__} (default {default!r})"
            )
        if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
            raise ValueError(f"initialization.{name}.{key}: {value!r} must be above 0")
    return {**defaults, **given}


def _reorder() -> None:
    """Keep the registries in ``order`` (stable: equal orders stay in registration order), updated in place so that
    every module holding them sees the same objects."""
    specs = sorted(METHOD_SPECS.values(), key=lambda spec: spec.order)
    METHOD_SPECS.clear()
    METHOD_SPECS.update((spec.name, spec) for spec in specs)
    INIT_METHODS.clear()
    INIT_METHODS.update((spec.name, spec.fn) for spec in specs)
    CORPUS_METHODS[:] = [spec.name for spec in specs if spec.needs_corpus]


def replace_methods(mode: str | None = None) -> tuple[str, ...]:
    """The methods defined for vocab: replace (any mode, or only ``mode``), in the order of INIT_METHODS."""
    return tuple(n for n, spec in METHOD_SPECS.items() if spec.replace and (mode is None or spec.replace == mode))


def source_row_stats(matrix: Any, source_ids: list[int]) -> tuple[Any, Any]:
    """Per-dimension mean and (population) std over the V_s rows, in float64, reduced block by block."""
    import torch

    idx = torch.as_tensor(source_ids, dtype=torch.long)
    n = len(source_ids)
    total = torch.zeros(matrix.shape[1], dtype=torch.float64)
    for s in range(0, n, _STATS_CHUNK):
        total += matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64).sum(0)
    mean = total / n
    sq = torch.zeros_like(mean)
    for s in range(0, n, _STATS_CHUNK):  # two passes: numerically safer than E[x²] − E[x]²
        sq += ((matrix[idx[s : s + _STATS_CHUNK]].to(torch.float64) - mean) ** 2).sum(0)
    return mean, (sq / n).sqrt()


def mean_of_rows(matrix: Any, id_lists: list[list[int]]) -> Any:
    """Row k = mean of ``matrix`` rows over ``id_lists[k]`` (a repeated id counts per occurrence), float64; one gather.

    Every list must be non-empty.
    """
    import torch

    flat = torch.as_tensor([i for ids in id_lists for i in ids], dtype=torch.long)
    counts = torch.as_tensor([len(ids) for ids in id_lists], dtype=torch.long)
    segment = torch.repeat_interleave(torch.arange(len(id_lists)), counts)
    sums = torch.zeros(len(id_lists), matrix.shape[1], dtype=torch.float64)
    sums.index_add_(0, segment, matrix.index_select(0, flat).to(torch.float64))
    return sums / counts[:, None].to(torch.float64)


def combine_rows(matrix: Any, plans: list[Plan]) -> Any:
    """Row k = Σ_i plans[k][i] · matrix[i], in float64, with one gather; every plan must be non-empty."""
    import torch

    ids = torch.as_tensor([i for plan in plans for i in plan], dtype=torch.long)
    weights = torch.as_tensor([w for plan in plans for w in plan.values()], dtype=torch.float64)
    segment = torch.repeat_interleave(torch.arange(len(plans)), torch.as_tensor([len(p) for p in plans]))
    out = torch.zeros(len(plans), matrix.shape[1], dtype=torch.float64)
    out.index_add_(0, segment, matrix.index_select(0, ids).to(torch.float64) * weights[:, None])
    return out


def rows_from_plans(source: Any, ctx: InitContext, plans: list[Plan | None]) -> Any:
    """Rows for plans; a None plan (nothing maps onto the token) gets the mean of all source rows, as Mean does."""
    import torch

    rows = torch.empty(len(plans), source.shape[1], dtype=torch.float64)
    have = [k for k, plan in enumerate(plans) if plan]
    if have:
        rows[have] = combine_rows(source, [plans[k] for k in have])
    if len(have) < len(plans):
        rows[[k for k, plan in enumerate(plans) if not plan]] = ctx.row_stats(source)[0]
    return rows


def mean_plan(ctx: InitContext, token: NewToken) -> Plan | None:
    """Mean's plan: equal weights over the source subwords (a repeated subword counts per occurrence)."""
    ids, _ = ctx.subwords(token)
    if not ids:
        return None
    plan: Plan = {}
    for i in ids:
        plan[i] = plan.get(i, 0.0) + 1.0 / len(ids)
    return plan


def scaled_add(acc: Plan, plan: Plan, w: float) -> None:
    """``acc += w · plan``, in place: how hierarchical and frequency-weighted plans are built from smaller ones."""
    for i, v in plan.items():
        acc[i] = acc.get(i, 0.0) + w * v
