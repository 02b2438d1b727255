"""The findings page's opening (docs/findings.md, "At a glance"): a few bullets generated from the numbers, against
Source first (how much faster, whether quality holds, with the paired interval), then against CPT-only, the
initializations' ranking with what is within noise, the number of new tokens; the ranking table per language and the
extrapolation as a table. A bullet whose numbers the run lacks is left out."""

from __future__ import annotations

from dataclasses import dataclass

from workflow_scripts.findings.numbers import WITHIN, Panel, curve_fit, relative, trained_tokens
from workflow_scripts.findings.paragraph import k_sentences, panel_label
from workflow_scripts.findings.text import MISSING, tokens_text
from workflow_scripts.intervals import Interval, paired_bpc_diff, verdict

BETTER, WITHIN_NOISE, WORSE, NO_INTERVAL = "better", "within noise", "worse", "no interval"


def _side(interval: Interval | None) -> str:
    if interval is None:
        return NO_INTERVAL
    if not interval.excludes_zero:
        return WITHIN_NOISE
    return BETTER if interval.high < 0 else WORSE


def _compared(panel: Panel) -> list[dict]:
    """The expanded cells at the panel's main number of new tokens that have a final bits per character, best first."""
    rows = [r for r in panel.expanded(panel.main_k()) if r["bpc"][1] is not None]
    return sorted(rows, key=lambda r: r["bpc"][1])


def speed_part(panel: Panel, multi: bool) -> str:
    """ "Thai: Mean 1.92x (bound 1.94x; 35.5 tokens a held-out sentence against 74.9)", or the range over several
    initializations at the main number of new tokens."""
    rows = [r for r in _compared(panel) if r["paired"][0] is not None]
    if not rows:
        return ""
    values = sorted(r["paired"][0] for r in rows)
    bounds = sorted({round(r["bound"], 2) for r in rows if r["bound"]})
    tokens = [r["tokens"][1] for r in rows if r["tokens"][1] is not None]
    what = (
        f"{rows[0]['name']} {values[0]:.2f}x"
        if len(rows) == 1
        else (f"{values[0]:.2f}x–{values[-1]:.2f}x over {len(rows)} initializations at {panel.main_k()} new tokens")
    )
    extra = []
    if bounds:
        extra.append("bound " + (f"{bounds[0]:.2f}x" if len(bounds) == 1 else f"{bounds[0]:.2f}x–{bounds[-1]:.2f}x"))
    if tokens and panel.source["tokens"] is not None:
        extra.append(f"{min(tokens):.1f} tokens a held-out sentence against {panel.source['tokens']:.1f}")
    return f"{panel_label(panel, multi)}: {what}" + (f" ({'; '.join(extra)})" if extra else "")


def _classified(rows: list[dict], key: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(_side(r.get(key)), []).append(r)
    return out


def quality_part(panel: Panel, multi: bool, reference: str) -> str:
    """Whether the expanded cells end better, within noise or worse than ``reference`` (Source or CPT-only) in
    held-out bits per character, by their paired bootstrap intervals; the best cell with its numbers."""
    rows = _compared(panel)
    ref = panel.source["bpc"] if reference == "Source" else (panel.cpt() or {}).get("bpc", (None, None))[1]
    if not rows or ref is None:
        return ""
    key = "vs_source" if reference == "Source" else "vs_cpt"
    best = rows[0]
    distance = relative(best["bpc"][1], ref)
    side = "below" if best["bpc"][1] < ref else "above"
    about_best = f"{best['bpc'][1]:.3f} against {ref:.3f}, {abs(distance):.1f}% {side}"
    if reference == "CPT-only":
        about_best += f", {'' if distance <= WITHIN else 'not '}within {WITHIN:.0f}%"
    sides = _classified(rows, key)
    where = panel_label(panel, multi)
    interval = best.get(key)
    if len(rows) == 1:
        return f"{where}: {best['name']} {about_best}; {verdict(interval) or 'no interval recorded'}"
    if len(sides) == 1:
        (side,) = sides
        groups = "no intervals recorded" if side == NO_INTERVAL else f"all {side}"
    else:
        groups = "; ".join(
            f"{side}: {', '.join(r['name'] for r in sides[side])}"
            for side in (BETTER, WITHIN_NOISE, WORSE, NO_INTERVAL)
            if side in sides
        )
    shown = f", {interval.text()}" if interval is not None else ""
    return f"{where}: best {best['name']} {about_best}{shown}; of {len(rows)} initializations {groups}"


@dataclass(frozen=True)
class Ranked:
    """One place of a language's ranking: the row, and its difference to the row above with the interval."""

    row: dict
    above: Interval | None  # this row minus the one ranked just above it (positive: worse); None for the first


def ranking(panel: Panel) -> list[Ranked]:
    """The expanded cells at the main number of new tokens, best first by final bits per character, each with its
    paired bootstrap difference to the one above (over seeds and held-out sentences: intervals.paired_bpc_diff)
    where both recorded their sentences' NLL."""
    rows, out = _compared(panel), []
    for i, row in enumerate(rows):
        above = rows[i - 1] if i else None
        interval = None
        if above is not None and row["nll"] is not None and above["nll"] is not None and row["chars"] == above["chars"]:
            interval = paired_bpc_diff(row["nll"], above["nll"], row["chars"])
        out.append(Ranked(row, interval))
    return out


def ranking_text(ranked: list[Ranked]) -> str:
    """ "Mean ≈ Align < Merge < Random": "<" where the pair's interval excludes zero, "≈" where it holds it, ","
    where the pair has no interval."""
    parts = [ranked[0].row["name"]]
    for place in ranked[1:]:
        side = _side(place.above)
        mark = {BETTER: "<", WORSE: "<", WITHIN_NOISE: "≈", NO_INTERVAL: ","}[side]
        parts.append(f"{'' if mark == ',' else ' '}{mark} {place.row['name']}")
    return "".join(parts)


def ranking_part(panel: Panel, multi: bool, ranked: list[Ranked] | None = None) -> str:
    """The ranking bullet of one language (``ranked``: its ``ranking``, computed here where not given)."""
    ranked = ranking(panel) if ranked is None else ranked
    if len(ranked) < 2:
        return ""
    lang = panel_label(panel, multi)
    if all(place.above is None for place in ranked[1:]):
        return f"{lang}: {', '.join(p.row['name'] for p in ranked)} by the point values (no intervals recorded)"
    seeds = sorted({p.row["seeds"] for p in ranked})
    seeds_text = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
    return f"{lang}: {ranking_text(ranked)} ({seeds_text} seed{'s' if seeds[-1] > 1 else ''} a method)"


def ranking_table(panel: Panel, ranked: list[Ranked] | None = None) -> list[str]:
    """The panel's ranking (``ranked``, computed here where not given) as a Markdown table: place, method, seeds, bits
    per character (mean ± sd over seeds), the difference to the method above with its 95% interval and the verdict;
    empty with fewer than two methods."""
    ranked = ranking(panel) if ranked is None else ranked
    if len(ranked) < 2:
        return []
    lines = [
        "| place | Method | seeds | final bits per character | vs the method above | 95% interval | |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for i, place in enumerate(ranked, start=1):
        r, iv = place.row, place.above
        sd = f" ± {r['bpc_sd']:.3f}" if r.get("bpc_sd") is not None else ""
        diff = f"{iv.diff:+.3f}" if iv else MISSING
        span = f"[{iv.low:+.3f}, {iv.high:+.3f}]" if iv else MISSING
        said = "" if i == 1 else (_side(iv) if iv else "no interval")
        lines.append(f"| {i} | {r['name']} | {r['seeds']} | {r['bpc'][1]:.3f}{sd} | {diff} | {span} | {said} |")
    return [*lines, ""]


def beyond_cpt(panel: Panel) -> bool:
    """Whether the panel has CPT-only and expanded cells at its main number of new tokens, none of them within WITHIN
    percent of CPT-only's final bits per character."""
    cpt, rows = panel.cpt(), _compared(panel)
    return bool(cpt and cpt["bpc"][1] is not None and rows and relative(rows[0]["bpc"][1], cpt["bpc"][1]) > WITHIN)


def extrapolation_rows(panel: Panel) -> list[list[str]]:
    """Where no expanded cell at the main number of new tokens ends within WITHIN percent of CPT-only: per cell with a
    curve, the target, the tokens trained and the power law's estimate of the tokens to reach it, or why none."""
    if not beyond_cpt(panel):
        return []
    target, rows = (1 + WITHIN / 100) * panel.cpt()["bpc"][1], _compared(panel)
    out = []
    for r in (r for r in rows if r["curve"] is not None):
        fit, trained = curve_fit(r), trained_tokens(r)
        if fit is None:
            estimate = "no estimate: too few points after step 0"
        elif not fit.decreasing():
            estimate = "no estimate: the fitted curve does not decrease"
        elif fit.tokens_for(target) is None:
            estimate = f"levels off at {fit.a:.3f}"
        else:
            needed = fit.tokens_for(target)
            estimate = f"about {tokens_text(needed)} ({needed / trained:.1f}x)"
        out.append([r["name"], f"{target:.3f}", tokens_text(trained), estimate])
    return out


def extrapolation_table(panels: list[Panel], multi: bool) -> list[str]:
    """The extrapolation table over every language (``extrapolation_rows``); empty where nothing is extrapolated."""
    body = [[panel_label(p, multi), *row] for p in panels for row in extrapolation_rows(p)]
    if not body:
        return []
    lines = [
        f"| Language | Method | target (CPT-only + {WITHIN:.0f}%) | tokens trained | tokens to reach it |",
        "|---|---|---:|---:|---|",
    ]
    return [*lines, *("| " + " | ".join(row) + " |" for row in body), ""]


def uncurved(panels: list[Panel], multi: bool) -> list[str]:
    """The languages where no expanded cell is within WITHIN percent of CPT-only and none has a learning curve to
    extrapolate from."""
    return [panel_label(p, multi) for p in panels if beyond_cpt(p) and all(r["curve"] is None for r in _compared(p))]


def bullets(panels: list[Panel], scope_text: str, rankings: list[list[Ranked]] | None = None) -> list[str]:
    """The page's opening bullets (module docstring), each a Markdown list item; the scope last, once. ``rankings``:
    each panel's ``ranking``, computed here where not given."""
    multi = len({p.model for p in panels}) > 1
    rankings = [ranking(p) for p in panels] if rankings is None else rankings
    found = [
        ("Faster than Source (paired teacher-forced speed-up)", [speed_part(p, multi) for p in panels]),
        ("Quality against Source (held-out bits per character)", [quality_part(p, multi, "Source") for p in panels]),
        (
            "Against CPT-only (the same training without new tokens)",
            [quality_part(p, multi, "CPT-only") for p in panels],
        ),
        (
            "Initializations ranked (final bits per character; ≈ within noise, < outside it)",
            [ranking_part(p, multi, r) for p, r in zip(panels, rankings, strict=True)],
        ),
    ]
    out = [
        f"- **{title}.** " + " · ".join(parts) + "."
        for title, parts in ((t, [x for x in xs if x]) for t, xs in found)
        if parts
    ]
    k_lines = [line for p in panels for line in k_sentences(p, multi)]
    if k_lines:
        out.append("- **The number of new tokens.** " + " ".join(k_lines))
    out.append(f"- **Scope.** {scope_text}")
    return out
