"""A filled table as Markdown, LaTeX (booktabs), CSV and HTML, with the paper's marks.

Best / second best: bold / underline in every format. Better than Source: green cell in LaTeX (xcolor) and HTML, a
trailing "↑" in Markdown. Gray rows (not comparable): italic label in Markdown, gray text in LaTeX and HTML.
"""

from __future__ import annotations

import csv
import html
import io

from workflow_scripts.paper.cells import MISSING, Cell, Filled
from workflow_scripts.paper.names import language_name, model_name

BETTER = "↑"


def headers(filled: Filled) -> list[str]:
    """One header per value column: the language code alone when a table has one column per language."""
    spec = filled.spec
    if len(spec.columns) == 1:
        return [language_name(lang) for lang in spec.languages]
    return [f"{language_name(lang)} {col.header}" for lang in spec.languages for col in spec.columns]


def _has_groups(filled: Filled) -> bool:
    return any(row.group for row in filled.spec.rows)


def _legend(filled: Filled) -> list[str]:
    """What the marks mean, for the marks the table carries; where it could mark but nothing is marked, why."""
    spec, legend = filled.spec, []
    cells = [c for b in filled.blocks for _, row_cells in b.rows for c in row_cells]
    ranked, better = any(c.rank for c in cells), any(c.better for c in cells)
    if ranked:
        legend.append(f"Bold / underlined: best / second-best ({'lowest' if spec.best == 'min' else 'highest'}).")
    if better:
        legend.append(f"{BETTER} (green): better than Source on the same language and task.")
    compares = spec.mark_source and any(c.higher_is_better is not None for c in spec.columns)
    if ranked or better:
        legend.append(
            "Marked only where the difference lies outside the measured spread (mean ± sd over runs, or [worst–best] "
            "over a speed test's repeats, not overlapping); an entry from one run without a spread is never marked."
        )
    elif spec.best or compares:
        legend.append(
            "Nothing is marked: no difference lies outside the measured spread (mean ± sd over runs, or [worst–best] "
            "over a speed test's repeats); an entry from one run without a spread is never marked."
        )
    if any(c.n > 1 for b in filled.blocks for _, cells in b.rows for c in cells):
        legend.append("mean ± sd over runs where several exist.")
    return legend


def _md_cell(c: Cell) -> str:
    text = c.text
    if c.rank == 1:
        text = f"**{text}**"
    elif c.rank == 2:
        text = f"<u>{text}</u>"
    return f"{text} {BETTER}" if c.better else text


def markdown(filled: Filled, data_labels: list[str] = ()) -> str:
    """The table as Markdown: a title, one table per model block, the legend and the footnotes."""
    spec, groups = filled.spec, _has_groups(filled)
    lines = [f"## {spec.title}", "", spec.caption, ""]
    lines += [f"> Data: {label}." for label in data_labels] + ([""] if data_labels else [])
    for block in filled.blocks:
        if len(filled.blocks) > 1 or block.results_model != block.model:
            name = model_name(block.model)
            stand = f" (results of {model_name(block.results_model)})" if block.results_model != block.model else ""
            lines += [f"**{name}**{stand}", ""]
        head = ["", "Model"] if groups else ["Model"]
        head += headers(filled)
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row, cells in block.rows:
            label = f"*{row.label}*" if row.gray else row.label
            first = [row.group, label] if groups else [label]
            lines.append("| " + " | ".join([*first, *(_md_cell(c) for c in cells)]) + " |")
        lines.append("")
    lines += [*_legend(filled), ""]
    lines += [f"- {n.strip()}" if not n.startswith("  ") else f"  - {n.strip()}" for n in filled.notes]
    return "\n".join(lines) + "\n\n"


def plain_rows(filled: Filled) -> list[list[str]]:
    """The table's rows as plain text (no marks), with a header: model, group, row, then every value column."""
    out = [["model", "results_model", "group", "row", *headers(filled)]]
    for block in filled.blocks:
        for row, cells in block.rows:
            names = [model_name(block.model), model_name(block.results_model)]
            out.append([*names, row.group, row.label, *(c.text for c in cells)])
    return out


def to_csv(filled: Filled) -> str:
    """The plain rows as CSV."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(plain_rows(filled))
    return buf.getvalue()


_TEX_ESCAPE = {"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\~{}"}


def tex_escape(text: str) -> str:
    """Escape LaTeX's special characters; ± and the arrow become math."""
    text = "".join(_TEX_ESCAPE.get(ch, ch) for ch in text)
    return text.replace("±", r"$\pm$").replace("×", r"$\times$").replace("–", "--").replace(BETTER, r"$\uparrow$")


def _tex_cell(c: Cell) -> str:
    text = tex_escape(c.text)
    if c.rank == 1:
        text = rf"\textbf{{{text}}}"
    elif c.rank == 2:
        text = rf"\underline{{{text}}}"
    return rf"\cellcolor{{green!15}}{text}" if c.better else text


def latex(filled: Filled) -> str:
    """A booktabs table (needs \\usepackage{booktabs} and \\usepackage[table]{xcolor})."""
    spec, groups = filled.spec, _has_groups(filled)
    lead = 2 if groups else 1
    ncols = len(spec.columns)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\begin{{tabular}}{{{'l' * lead}{'r' * ncols * len(spec.languages)}}}",
    ]
    lines.append(r"\toprule")
    if ncols > 1:
        top = [""] * lead + [rf"\multicolumn{{{ncols}}}{{c}}{{{language_name(g)}}}" for g in spec.languages]
        rules = [
            rf"\cmidrule(lr){{{lead + 1 + i * ncols}-{lead + (i + 1) * ncols}}}" for i in range(len(spec.languages))
        ]
        lines += [" & ".join(top) + r" \\", " ".join(rules)]
        sub = [""] * (lead - 1) + ["Model"] + [tex_escape(c.header) for _ in spec.languages for c in spec.columns]
    else:
        sub = [""] * (lead - 1) + ["Model"] + [language_name(g) for g in spec.languages]
    lines += [" & ".join(sub) + r" \\", r"\midrule"]
    for i, block in enumerate(filled.blocks):
        if len(filled.blocks) > 1 or block.results_model != block.model:
            if i:
                lines.append(r"\midrule")
            name = tex_escape(model_name(block.model))
            if block.results_model != block.model:
                name += tex_escape(f" (results of {model_name(block.results_model)})")
            lines.append(rf"\multicolumn{{{lead + ncols * len(spec.languages)}}}{{l}}{{\textit{{{name}}}}} \\")
        for row, cells in block.rows:
            label = tex_escape(row.label)
            label = rf"\textcolor{{gray}}{{{label}}}" if row.gray else label
            first = [tex_escape(row.group), label] if groups else [label]
            lines.append(" & ".join([*first, *(_tex_cell(c) for c in cells)]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    notes = _legend(filled) + [n.strip() for n in filled.notes]
    lines.append(rf"\caption{{{tex_escape(spec.title)}: {tex_escape(spec.caption)}}}")
    if notes:
        lines.append(r"\par\footnotesize " + r" \\ ".join(tex_escape(n) for n in notes))
    lines.append(rf"\label{{tab:paper-{spec.number}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _html_cell(c: Cell) -> str:
    text = html.escape(c.text)
    if c.rank == 1:
        text = f"<b>{text}</b>"
    elif c.rank == 2:
        text = f"<u>{text}</u>"
    style = ' class="better"' if c.better else (' class="missing"' if c.text == MISSING else "")
    return f"<td{style}>{text}</td>"


CSS = (
    "body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse;margin-bottom:1em}"
    " th,td{padding:2px 6px;text-align:right;border-bottom:1px solid #ddd} td.label,th.label{text-align:left}"
    " td.better{background:#d9f2d9} td.missing{color:#999} tr.gray td.label{color:#888} .notes{font-size:12px}"
)


def to_html(filled: Filled, data_labels: list[str] = ()) -> str:
    """A standalone HTML page of the table (what the Snakemake report embeds)."""
    spec = filled.spec
    parts = [f"<html><head><meta charset='utf-8'><style>{CSS}</style></head><body>"]
    parts.append(f"<h3>{html.escape(spec.title)}</h3><p>{html.escape(spec.caption)}</p>")
    parts += [f"<p><i>Data: {html.escape(label)}.</i></p>" for label in data_labels]
    for block in filled.blocks:
        name = model_name(block.model)
        if block.results_model != block.model:
            name += f" (results of {model_name(block.results_model)})"
        parts.append(f"<p><b>{html.escape(name)}</b></p><table><tr><th class='label'></th><th class='label'>Model</th>")
        parts += [f"<th>{html.escape(h)}</th>" for h in headers(filled)]
        parts.append("</tr>")
        for row, cells in block.rows:
            cls = " class='gray'" if row.gray else ""
            parts.append(f"<tr{cls}><td class='label'>{html.escape(row.group)}</td>")
            parts.append(f"<td class='label'>{html.escape(row.label)}</td>{''.join(_html_cell(c) for c in cells)}</tr>")
        parts.append("</table>")
    notes = _legend(filled) + [n.strip() for n in filled.notes]
    parts.append("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul></body></html>")
    return "".join(parts) + "\n"
