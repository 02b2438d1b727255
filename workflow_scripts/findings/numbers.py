"""The numbers of the findings page, per model and language: each cell's final bits per character (relative to Source
and to CPT-only), paired speed-up and its bound, translation chrF, and, where the cell wrote its learning curve, its
bits per character before training and the training tokens it took to reach Source's level; the power-law fit that
extrapolates a curve.

Every number comes from results.csv (the tables rule's long table) or from a cell's curve.tsv (held-out bits per
character at evenly spaced training steps, step 0 being the initialized model); nothing is estimated except the one
extrapolation, which the page labels as such.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.paper import headline
from workflow_scripts.paper.headline import metric_mean as mean_of
from workflow_scripts.paper.names import training_text
from workflow_scripts.plan import paths
from workflow_scripts.tables import Sentences, is_source, load_results

log = logging.getLogger("vocabexp")

CHRF = ("mt", "chrF")
WITHIN = 5.0  # "close to CPT-only": final bits per character at most this many percent above CPT-only's
CURVE_COLUMNS = ("step", "tokens", "bits_per_char")
MIN_FIT_POINTS = 4  # the power law has three parameters: fit it to at least one point more
EXPONENTS = np.exp(np.linspace(math.log(0.01), math.log(5.0), 241))  # the grid the exponent c is first sought on


@dataclass
class Panel:
    """One model x language: Source's numbers and one row per adapted cell (``rows``: dicts, see ``panels``)."""

    model: str
    language: str
    source: dict
    rows: list[dict] = field(default_factory=list)
    fidelity: dict[str, dict] = field(default_factory=dict)  # method slug -> its GGUF check's files (check_gguf)

    def expanded(self, k: int | None = None) -> list[dict]:
        """The cells with new tokens (every k, or only ``k``)."""
        return [r for r in self.rows if r["kind"] == "expanded" and (k is None or r["k"] == k)]

    def cpt(self) -> dict | None:
        """CPT-only's row (training without new tokens), if the run has it."""
        return next((r for r in self.rows if r["kind"] == "cpt"), None)

    def main_k(self) -> int | None:
        """The number of new tokens most initializations share (the one the methods are compared at)."""
        counts = Counter(r["k"] for r in self.expanded())
        return max(counts, key=lambda k: (counts[k], -k)) if counts else None

    def curves(self) -> list[dict]:
        return [r for r in self.rows if r["curve"] is not None]


def _kind(cell: dict) -> str:
    """source, cpt (trained without new tokens), expanded (new tokens, an initialization) or other (MuMo)."""
    if is_source(cell["method"], cell["label"]):
        return "source"
    if str(cell.get("label")) == "CPT-only":
        return "cpt"
    if pd.notna(cell.get("k")) and str(cell.get("procedure")) != "MuMo":
        return "expanded"
    return "other"


def _name_rows(rows: list[dict], main_k: int | None) -> None:
    """Each row's plain name, unique in its panel: its row name; where that repeats, its number of new tokens (all
    but the panel's main one), then its training."""
    for extra in (lambda r: f"{r['k']} new tokens" if r["k"] not in (None, main_k) else "", lambda r: r["training"]):
        counts = Counter(r["name"] for r in rows)
        for r in rows:
            if counts[r["name"]] > 1 and extra(r):
                r["name"] = f"{r['name']}, {extra(r)}"


def read_curves(root: str | Path) -> dict[tuple[str, str, str], pd.DataFrame]:
    """Every curve.tsv under the run folder ``root``, by (model, language, method slug), sorted by step; a file
    without the curve's columns is skipped with a warning."""
    curves = {}
    for path in paths.found(paths.curve("*", "*", "*", paths.glob_root(root))):
        curve = pd.read_csv(path, sep="\t")
        if not set(CURVE_COLUMNS) <= set(curve.columns) or curve.empty:
            log.warning("skipping %s: no %s columns", path, ", ".join(CURVE_COLUMNS))
            continue
        curves[(path.parts[-4], path.parts[-3], path.parts[-2])] = curve.sort_values("step").reset_index(drop=True)
    return curves


def read_fidelity(root: str | Path) -> dict[tuple[str, str, str], dict]:
    """Every GGUF check (gguf/fidelity.json, rule check_gguf) under the run folder ``root``: its files' results by
    (model, language, method slug)."""
    out = {}
    for path in paths.found(paths.gguf_fidelity("*", "*", "*", paths.glob_root(root))):
        out[(path.parts[-5], path.parts[-4], path.parts[-3])] = json.loads(path.read_text(encoding="utf-8"))["files"]
    return out


def read_sentences(root: str | Path) -> Sentences:
    """Every cell's per-sentence held-out NLL and characters (the ppl results' details under the run folder ``root``)
    by (model, language, method slug): what the ranking's paired intervals resample."""
    found = paths.found(paths.eval_file("*", "*", "*", "ppl.json", paths.glob_root(root)))
    return load_results(found, strict=False)[2] if found else {}


def _seed_nll(row: dict, model: str, lang: str, sentences: Sentences) -> tuple[np.ndarray | None, list[int] | None]:
    """A row's per-sentence NLL, one line per training seed ([seeds, sentences]), and the sentences' characters;
    (None, None) where a seed has none recorded or the seeds scored different sentences."""
    found = [sentences.get((model, lang, slug)) for slug in row.get("slugs", [row["method"]])]
    if not found or any(f is None for f in found) or any(list(f[1]) != list(found[0][1]) for f in found):
        return None, None
    return np.asarray([f[0] for f in found], dtype=float), list(found[0][1])


def panels(
    frame: pd.DataFrame,
    curves: dict[tuple[str, str, str], pd.DataFrame] | None = None,
    fidelity: dict[tuple[str, str, str], dict] | None = None,
    sentences: Sentences | None = None,
) -> list[Panel]:
    """The run's model x language panels with every adapted cell's numbers (headline.lead_rows, and chrF, its kind,
    its number of new tokens, its curve with the step-0 value and the crossing of Source's level, its seeds'
    per-sentence NLL where ``sentences`` has them), and the GGUF checks of its cells (``read_fidelity``)."""
    curves, fidelity, sentences = curves or {}, fidelity or {}, sentences or {}
    out = []
    cells = frame.drop_duplicates(["model", "language", "method"]).set_index(["model", "language", "method"])
    for (model, lang), part in frame.groupby(["model", "language"], sort=False):
        source_part = part[[is_source(m, lb) for m, lb in zip(part["method"], part["label"], strict=True)]]
        source = {
            "bpc": mean_of(source_part, *headline.BPC),
            "tokens": mean_of(source_part, *headline.TOKENS),
            "chrf": mean_of(source_part, *CHRF),
        }
        panel = Panel(str(model), str(lang), source)
        panel.fidelity = {m: files for (mo, la, m), files in fidelity.items() if (mo, la) == (str(model), str(lang))}
        for row in headline.lead_rows(part, is_source, headline.row_name):
            cell = {"method": row["method"], **cells.loc[(model, lang, row["method"])].to_dict()}
            k = cell.get("k")
            curve, curve_seeds = seed_curve(curves, str(model), str(lang), row["slugs"])
            row.update(
                kind=_kind(cell),
                label=str(cell.get("label")),
                k=None if pd.isna(k) else int(k),
                training=training_text(cell),
                chrf=mean_of(part[part["method"] == row["method"]], *CHRF),
                curve=curve,
                curve_seeds=curve_seeds,
            )
            row["bpc0"] = float(curve["bits_per_char"].iloc[0]) if curve is not None else None
            row["reach"] = _reach(curve, source["bpc"])
            row["nll"], row["chars"] = _seed_nll(row, str(model), str(lang), sentences)
            panel.rows.append(row)
        _name_rows(panel.rows, panel.main_k())
        if panel.rows:
            out.append(panel)
    return out


def seed_curve(
    curves: dict[tuple[str, str, str], pd.DataFrame], model: str, lang: str, slugs: list[str]
) -> tuple[pd.DataFrame | None, int]:
    """A method's learning curve over its training seeds (``slugs``, the config's seed first): the mean bits per
    character at each step of the seeds whose curves have the first seed's steps, with their lowest and highest
    (``bpc_min``, ``bpc_max``), and how many seeds it pools. A seed evaluated on bits per character alone
    (``evaluation.other_seeds: ppl``) records step 0 only and is left out; (None, 0) without the first seed's curve."""
    first = curves.get((model, lang, slugs[0]))
    if first is None:
        return None, 0
    same = [
        c
        for c in (curves.get((model, lang, slug)) for slug in slugs[1:])
        if c is not None and c["step"].tolist() == first["step"].tolist()
    ]
    if not same:
        return first, 1
    stacked = np.vstack([first["bits_per_char"].to_numpy(float), *(c["bits_per_char"].to_numpy(float) for c in same)])
    curve = first.copy()
    curve["bits_per_char"] = stacked.mean(axis=0)
    curve["bpc_min"], curve["bpc_max"] = stacked.min(axis=0), stacked.max(axis=0)
    return curve, 1 + len(same)


def _reach(curve: pd.DataFrame | None, level: float | None) -> float | None:
    if curve is None or level is None:
        return None
    return crossing(curve["tokens"].astype(float).tolist(), curve["bits_per_char"].astype(float).tolist(), level)


def crossing(tokens: list[float], bpc: list[float], level: float) -> float | None:
    """The training tokens at which a curve first comes down to ``level``, linearly interpolated between the last
    point above it and the first at or below it; the first point's tokens where it starts there; None if never."""
    for i, (t, b) in enumerate(zip(tokens, bpc, strict=True)):
        if b <= level:
            if i == 0:
                return float(t)
            t0, b0 = tokens[i - 1], bpc[i - 1]
            return float(t0 + (b0 - level) / (b0 - b) * (t - t0))
    return None


def relative(value: float | None, base: float | None) -> float | None:
    """``value`` relative to ``base`` in percent (value / base − 1); lower bits per character is better."""
    if value is None or base is None or base == 0:
        return None
    return (value / base - 1) * 100


@dataclass(frozen=True)
class Fit:
    """bits per character = a + b · tokens^(−c), least squares over a curve's points after step 0."""

    a: float
    b: float
    c: float
    points: int

    def tokens_for(self, target: float) -> float | None:
        """The tokens at which the fitted curve reaches ``target``; None where it does not decrease or levels off
        above the target."""
        if self.b <= 0 or target <= self.a:
            return None
        return float(((target - self.a) / self.b) ** (-1 / self.c))

    def decreasing(self) -> bool:
        return bool(self.b > 0)


def _least_squares(x: np.ndarray, y: np.ndarray, c: float) -> tuple[float, float, float]:
    """a, b and the squared error of y = a + b · x^(−c) for a fixed exponent c (a linear fit in x^(−c))."""
    design = np.column_stack([np.ones_like(x), x ** (-c)])
    (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(a), float(b), float(np.sum((design @ np.array([a, b]) - y) ** 2))


def fit_power_law(tokens: list[float], bpc: list[float]) -> Fit | None:
    """The power law a + b · tokens^(−c) that fits a curve's points after step 0 best (least squares: for each
    exponent c the best a and b are linear; c is found on a grid, then refined by golden-section search around the
    grid's best); None with fewer than MIN_FIT_POINTS points."""
    pts = [(float(t), float(b)) for t, b in zip(tokens, bpc, strict=True) if t > 0 and math.isfinite(b)]
    if len(pts) < MIN_FIT_POINTS:
        return None
    x = np.array([t for t, _ in pts]) / pts[0][0]  # in units of the first point: no overflow for large counts
    y = np.array([b for _, b in pts])
    errors = [_least_squares(x, y, c)[2] for c in EXPONENTS]
    best = int(np.argmin(errors))
    low, high = EXPONENTS[max(best - 1, 0)], EXPONENTS[min(best + 1, len(EXPONENTS) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(100):
        c1, c2 = high - ratio * (high - low), low + ratio * (high - low)
        if _least_squares(x, y, c1)[2] < _least_squares(x, y, c2)[2]:
            high = c2
        else:
            low = c1
    c = (low + high) / 2
    a, b, _ = _least_squares(x, y, c)
    return Fit(a=float(a), b=float(b * pts[0][0] ** c), c=float(c), points=len(pts))


def curve_fit(row: dict) -> Fit | None:
    """The power law of a row's learning curve, if it has one with enough points."""
    curve = row.get("curve")
    if curve is None:
        return None
    return fit_power_law(curve["tokens"].astype(float).tolist(), curve["bits_per_char"].astype(float).tolist())


def trained_tokens(row: dict) -> float | None:
    """The training tokens of a row's curve at its last point."""
    curve = row.get("curve")
    return None if curve is None else float(curve["tokens"].iloc[-1])


def seeds(frame: pd.DataFrame) -> int:
    """The most training seeds any method of the run has results for (its cells over ``train_seed``, grouped as
    the lead's rows are: headline.lead_rows); 1 where none is recorded."""
    if frame.empty or "train_seed" not in frame:
        return 1
    counts = [row["seeds"] for row in headline.lead_rows(frame, is_source, headline.row_name)]
    return max(counts, default=1)
