"""The findings paragraph, generated sentence by sentence from the numbers (numbers.py); a sentence whose numbers the
run does not have is left out. docs/findings.md says what each sentence compares."""

from __future__ import annotations

from workflow_scripts.findings.numbers import WITHIN, Panel, curve_fit, relative, trained_tokens
from workflow_scripts.findings.text import FIT_WORDS, tokens_text
from workflow_scripts.intervals import verdict
from workflow_scripts.paper.names import panel_name


def _where(panel: Panel, multi: bool) -> str:
    return panel_name(panel.model, panel.language, multi)


def best_sentence(panel: Panel, multi: bool) -> tuple[str, bool | None]:
    """The best expanded cell (at the panel's main number of new tokens) against CPT-only, and whether it is within
    WITHIN percent of it (None where either is missing)."""
    cpt, rows = panel.cpt(), [r for r in panel.expanded(panel.main_k()) if r["bpc"][1] is not None]
    if cpt is None or cpt["bpc"][1] is None or not rows:
        return "", None
    best = min(rows, key=lambda r: r["bpc"][1])
    diff = relative(best["bpc"][1], cpt["bpc"][1])
    within = diff <= WITHIN
    which = "the only expanded method" if len(rows) == 1 else "the best expanded method"
    which += f" (at {panel.main_k()} new tokens)" if len(panel.expanded()) > len(rows) else ""
    side = "above" if diff > 0 else "below"
    return (
        f"On {_where(panel, multi)}, {which}, {best['name']}, ends {abs(diff):.1f}% {side} CPT-only's bits per "
        f"character ({best['bpc'][1]:.3f} against {cpt['bpc'][1]:.3f}): {'' if within else 'not '}within "
        f"{WITHIN:.0f}%.{noise_clause(best, 'CPT-only')}",
        within,
    )


def noise_clause(row: dict, reference: str) -> str:
    """ " Against CPT-only it is worse (95% interval [+0.010, +0.040] bits per character)." from the row's paired
    bootstrap interval (``vs_cpt``, ``vs_source``: headline.lead_rows); "" where the run has none."""
    interval = row.get("vs_cpt" if reference == "CPT-only" else "vs_source")
    if interval is None:
        return ""
    return f" Against {reference}, in bits per character, it is {verdict(interval)}."


def against_cpt(rows: list[dict]) -> str:
    """ " Against CPT-only, in bits per character: Align within noise (95% interval [...]); Mean worse (...)." for
    the rows with a paired bootstrap interval; "" where none has one."""
    parts = [f"{r['name']} {verdict(r['vs_cpt'])}" for r in rows if r.get("vs_cpt") is not None]
    return f" Against CPT-only, in bits per character: {'; '.join(parts)}." if parts else ""


def _order(rows: list[dict], key) -> tuple[str, float]:
    rows = sorted(rows, key=key)
    return " < ".join(f"{r['name']} ({key(r):.3f})" for r in rows), key(rows[-1]) - key(rows[0])


def order_sentence(panel: Panel, multi: bool) -> str:
    """How the initializations (at the main number of new tokens) order before training and after it, and whether
    training narrows their spread."""
    rows = [r for r in panel.expanded(panel.main_k()) if r["bpc"][1] is not None]
    if len(rows) < 2:
        return ""
    end, end_spread = _order(rows, lambda r: r["bpc"][1])
    noise = against_cpt(sorted(rows, key=lambda r: r["bpc"][1]))
    start_rows = [r for r in rows if r["bpc0"] is not None]
    if len(start_rows) < 2:
        where = _where(panel, multi)
        return f"On {where}, after training the initializations order {end} in bits per character.{noise}"
    start, start_spread = _order(start_rows, lambda r: r["bpc0"])
    narrows = "narrows" if end_spread < start_spread else "does not narrow"
    same = [r["name"] for r in sorted(start_rows, key=lambda r: r["bpc0"])] == [
        r["name"] for r in sorted(start_rows, key=lambda r: r["bpc"][1])
    ]
    return (
        f"On {_where(panel, multi)}, before training (step 0) the initializations order {start} in bits per "
        f"character, a spread of {start_spread:.3f}; after training {end}, a spread of {end_spread:.3f}: training "
        f"{narrows} the gap, and the order {'stays the same' if same else 'changes'}.{noise}"
    )


def reach_sentence(panel: Panel, multi: bool) -> str:
    """Which expanded cells come down to Source's bits per character within the tokens trained, and after how many
    tokens relative to the fastest."""
    rows = [r for r in panel.expanded() if r["curve"] is not None]
    if not rows:
        return ""
    reached = sorted((r for r in rows if r["reach"] is not None), key=lambda r: r["reach"])
    missed = [r for r in rows if r["reach"] is None]
    where = _where(panel, multi)
    if not reached:
        most = max(trained_tokens(r) for r in rows)
        return (f"On {where}, no expanded method reaches Source's bits per character within the tokens trained (up "
                f"to {tokens_text(most)}).")  # fmt: skip
    level = "Source's bits per character"  # named in the first clause, "it" after (reached is not empty)
    at_start = [r["name"] for r in reached if r["reach"] == 0]
    later = [r for r in reached if r["reach"] > 0]
    parts = [f"{', '.join(at_start)} {'is' if len(at_start) == 1 else 'are'} below {level} before training"] * bool(
        at_start
    )
    if later:
        first = later[0]
        parts.append(f"{first['name']} reaches {'it' if at_start else level} after {tokens_text(first['reach'])} "
                     f"training tokens{_ends_above(first, panel)}")  # fmt: skip
        parts += [f"{r['name']} after {tokens_text(r['reach'])} ({r['reach'] / first['reach']:.1f}x the tokens of "
                  f"{first['name']}){_ends_above(r, panel)}" for r in later[1:]]  # fmt: skip
    parts += [f"{r['name']} does not reach it within the {tokens_text(trained_tokens(r))} it trained" for r in missed]
    return f"On {where}, " + "; ".join(parts) + "."


def _ends_above(row: dict, panel: Panel) -> str:
    """ " but ends above it (7.674)" for a curve that came down to Source's level and rose above it again by the end."""
    end, level = row["bpc"][1], panel.source["bpc"]
    return f" but ends above it ({end:.3f})" if end is not None and level is not None and end > level else ""


def extrapolation_sentence(panel: Panel, multi: bool) -> str:
    """Where no expanded cell ends within WITHIN percent of CPT-only: the training tokens each curve's power law
    needs to come down to (1 + WITHIN %) × CPT-only's final bits per character, labelled as an extrapolation."""
    cpt, rows = panel.cpt(), panel.expanded(panel.main_k())
    if cpt is None or cpt["bpc"][1] is None or not rows:
        return ""
    where = _where(panel, multi)
    curved = [r for r in rows if r["curve"] is not None]
    if not curved:
        return ""
    target = (1 + WITHIN / 100) * cpt["bpc"][1]
    parts = []
    for r in curved:
        fit = curve_fit(r)
        if fit is None:
            parts.append(f"{r['name']}: no estimate (too few points after step 0 to fit)")
        elif not fit.decreasing():
            parts.append(f"{r['name']}: no estimate (the fitted curve does not decrease)")
        elif fit.tokens_for(target) is None:
            parts.append(f"{r['name']}: no estimate (the fitted curve levels off at {fit.a:.3f}, above the target)")
        else:
            needed, trained = fit.tokens_for(target), trained_tokens(r)
            parts.append(f"{r['name']} about {tokens_text(needed)} training tokens ({needed / trained:.1f}x the "
                         f"{tokens_text(trained)} it trained)")  # fmt: skip
    return (
        f"Extrapolation, not a measurement ({FIT_WORDS}): to come within {WITHIN:.0f}% of CPT-only on {where} "
        f"({target:.3f} bits per character), " + "; ".join(parts) + "."
    )


def bound_sentence(panels: list[Panel], multi: bool, floor: float = 0.9) -> str:
    """How close the expanded cells' paired speed-ups come to their bounds: the lowest ratio, and every cell under
    ``floor`` of its bound."""
    cells = [(r, p, r["paired"][0] / r["bound"]) for p in panels for r in p.expanded()
             if r["paired"][0] is not None and r["bound"]]  # fmt: skip
    if not cells:
        return ""
    low, panel, ratio = min(cells, key=lambda c: c[2])
    at = f"{low['name']} on {_where(panel, multi)}, {low['paired'][0]:.2f}x of {low['bound']:.2f}x"
    if len(cells) == 1:
        return f"The expanded cell's paired speed-up is {ratio:.2f} of its bound ({at})."
    under = [c for c in cells if c[2] < floor]
    if not under:
        return (f"Every expanded cell's paired speed-up is at least {int(ratio * 100) / 100:.2f} of its bound "
                f"(lowest: {at}).")  # fmt: skip
    listed = "; ".join(f"{r['name']} on {_where(p, multi)} ({q:.2f})" for r, p, q in under)
    verb = "reaches" if len(under) == 1 else "reach"
    return f"{len(under)} of {len(cells)} expanded cells {verb} less than {floor} of their bound: {listed}."


def _change(before: float | None, after: float | None, fmt: str, percent: bool = False) -> str | None:
    if before is None or after is None:
        return None
    step = f"{relative(after, before):+.1f}%" if percent else f"{after - before:+.2f}x"
    return f"{fmt.format(before)} → {fmt.format(after)} ({step})"


def k_sentences(panel: Panel, multi: bool) -> list[str]:
    """For each initialization with several numbers of new tokens: what the largest gains in paired speed-up and
    costs in final bits per character against the smallest."""
    out = []
    by_init: dict[str, list[dict]] = {}
    for r in panel.expanded():
        by_init.setdefault(r["label"], []).append(r)
    for label, rows in by_init.items():
        if len({r["k"] for r in rows}) < 2:
            continue
        lo, hi = min(rows, key=lambda r: r["k"]), max(rows, key=lambda r: r["k"])
        parts = [f"{what} {text}" for what, text in (
            ("paired speed-up", _change(lo["paired"][0], hi["paired"][0], "{:.2f}x")),
            ("final bits per character", _change(lo["bpc"][1], hi["bpc"][1], "{:.3f}", percent=True)),
            ("tokens per held-out sentence", _change(lo["tokens"][1], hi["tokens"][1], "{:.1f}", percent=True)),
        ) if text]  # fmt: skip
        if parts:
            out.append(f"On {_where(panel, multi)}, {label} with {hi['k']} new tokens instead of {lo['k']}: "
                       + "; ".join(parts) + ".")  # fmt: skip
    return out


def paragraph(panels: list[Panel], scope_text: str) -> str:
    """The findings paragraph: per panel the best expanded cell against CPT-only, the initializations' order before
    and after training, when each reaches Source's level, the extrapolation where none is within reach, the k
    trade-off; then the bound, then what the run cannot say (``scope_text``)."""
    multi = len({p.model for p in panels}) > 1
    sentences, uncurved = [], []
    for panel in panels:
        best, within = best_sentence(panel, multi)
        sentences += [best, order_sentence(panel, multi), reach_sentence(panel, multi)]
        if within is False:
            sentences.append(extrapolation_sentence(panel, multi))
            if not any(r["curve"] is not None for r in panel.expanded(panel.main_k())):
                uncurved.append(_where(panel, multi))
        sentences += k_sentences(panel, multi)
    if uncurved:
        sentences.append(f"Without learning curves, the training tokens needed to come within {WITHIN:.0f}% of "
                         f"CPT-only cannot be extrapolated ({', '.join(uncurved)}).")  # fmt: skip
    sentences += [bound_sentence(panels, multi), scope_text]
    return " ".join(s for s in sentences if s)
