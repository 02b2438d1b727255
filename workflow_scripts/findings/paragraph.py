"""The findings page's sentences under its opening bullets (glance.py), generated from the numbers (numbers.py); a
sentence whose numbers the run does not have is left out. docs/findings.md says what each sentence compares."""

from __future__ import annotations

from workflow_scripts.findings.numbers import WITHIN, Panel, relative, trained_tokens
from workflow_scripts.findings.text import tokens_text
from workflow_scripts.intervals import verdict
from workflow_scripts.paper.names import panel_name


def panel_label(panel: Panel, multi: bool) -> str:
    """The panel's name in the page's sentences: its language, and its model where the run has several."""
    return panel_name(panel.model, panel.language, multi)


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
        where = panel_label(panel, multi)
        return f"On {where}, after training the initializations order {end} in bits per character.{noise}"
    start, start_spread = _order(start_rows, lambda r: r["bpc0"])
    narrows = "narrows" if end_spread < start_spread else "does not narrow"
    same = [r["name"] for r in sorted(start_rows, key=lambda r: r["bpc0"])] == [
        r["name"] for r in sorted(start_rows, key=lambda r: r["bpc"][1])
    ]
    return (
        f"On {panel_label(panel, multi)}, before training (step 0) the initializations order {start} in bits per "
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
    where = panel_label(panel, multi)
    if not reached:
        most = max(trained_tokens(r) for r in rows)
        return (
            f"On {where}, no expanded method reaches Source's bits per character within the tokens trained (up "
            f"to {tokens_text(most)})."
        )
    level = "Source's bits per character"  # named in the first clause, "it" after (reached is not empty)
    at_start = [r["name"] for r in reached if r["reach"] == 0]
    later = [r for r in reached if r["reach"] > 0]
    parts = [f"{', '.join(at_start)} {'is' if len(at_start) == 1 else 'are'} below {level} before training"] * bool(
        at_start
    )
    if later:
        first = later[0]
        parts.append(
            f"{first['name']} reaches {'it' if at_start else level} after {tokens_text(first['reach'])} "
            f"training tokens{_ends_above(first, panel)}"
        )
        parts += [
            f"{r['name']} after {tokens_text(r['reach'])} ({r['reach'] / first['reach']:.1f}x the tokens of "
            f"{first['name']}){_ends_above(r, panel)}"
            for r in later[1:]
        ]
    parts += [f"{r['name']} does not reach it within the {tokens_text(trained_tokens(r))} it trained" for r in missed]
    return f"On {where}, " + "; ".join(parts) + "."


def _ends_above(row: dict, panel: Panel) -> str:
    """ " but ends above it (7.674)" for a curve that came down to Source's level and rose above it again by the end."""
    end, level = row["bpc"][1], panel.source["bpc"]
    return f" but ends above it ({end:.3f})" if end is not None and level is not None and end > level else ""


def bound_sentence(panels: list[Panel], multi: bool, floor: float = 0.9) -> str:
    """How close the expanded cells' paired speed-ups come to their bounds: the lowest ratio, and every cell under
    ``floor`` of its bound."""
    cells = [
        (r, p, r["paired"][0] / r["bound"])
        for p in panels
        for r in p.expanded()
        if r["paired"][0] is not None and r["bound"]
    ]
    if not cells:
        return ""
    low, panel, ratio = min(cells, key=lambda c: c[2])
    at = f"{low['name']} on {panel_label(panel, multi)}, {low['paired'][0]:.2f}x of {low['bound']:.2f}x"
    if len(cells) == 1:
        return f"The expanded cell's paired speed-up is {ratio:.2f} of its bound ({at})."
    under = [c for c in cells if c[2] < floor]
    if not under:
        return (
            f"Every expanded cell's paired speed-up is at least {int(ratio * 100) / 100:.2f} of its bound "
            f"(lowest: {at})."
        )
    listed = "; ".join(f"{r['name']} on {panel_label(p, multi)} ({q:.2f})" for r, p, q in under)
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
        parts = [
            f"{what} {text}"
            for what, text in (
                ("paired speed-up", _change(lo["paired"][0], hi["paired"][0], "{:.2f}x")),
                ("final bits per character", _change(lo["bpc"][1], hi["bpc"][1], "{:.3f}", percent=True)),
                ("tokens per held-out sentence", _change(lo["tokens"][1], hi["tokens"][1], "{:.1f}", percent=True)),
            )
            if text
        ]
        if parts:
            out.append(
                f"On {panel_label(panel, multi)}, {label} with {hi['k']} new tokens instead of {lo['k']}: "
                + "; ".join(parts)
                + "."
            )
    return out


def details(panels: list[Panel], uncurved: list[str]) -> list[str]:
    """The sentences under the opening bullets: per panel the initializations' order before and after training and
    when each reaches Source's level; then how close the speed-ups come to their bounds, and where no curve allows the
    extrapolation (``uncurved``: the languages without one)."""
    multi = len({p.model for p in panels}) > 1
    sentences = [s for p in panels for s in (order_sentence(p, multi), reach_sentence(p, multi))]
    if uncurved:
        sentences.append(
            f"Without learning curves, the training tokens needed to come within {WITHIN:.0f}% of "
            f"CPT-only cannot be extrapolated ({', '.join(uncurved)}): set training.curve_points to 5 "
            "or more to record them."
        )
    sentences.append(bound_sentence(panels, multi))
    return [s for s in sentences if s]
