"""Tables -> Markdown, LaTeX (booktabs), HTML and tidy CSV text.

Each renderer shows the same content: best bold, second underlined (italic in Markdown, which has
no underline), the SE (a subscript in LaTeX and HTML, "(SE x)" in Markdown), delta in parentheses,
† for a significant difference, ‡ for an epoch budget that did not converge, arrows against a
reference. Markdown uses no HTML tags, so MLflow's artifact viewer (which prints tags as text)
renders it. LaTeX adds each mean's standard deviation over replicates (mean ± sd) and writes
methods under their display names. CSV is long (one line per cell) with the numbers unrounded to
the table's digits, for spreadsheets and scripts.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import groupby

from nerplat.analysis.table_model import Cell, Table

FORMATS = {"md": "Markdown", "latex": "LaTeX", "html": "HTML", "csv": "CSV"}
EXTENSIONS = {"md": "md", "latex": "tex", "html": "html", "csv": "csv"}
DAGGER = "†"
DOUBLE_DAGGER = "‡"
ARROWS = {"up": "↑", "down": "↓", "": ""}


_NUMBER_TEXT = re.compile(r"^(?:[\d,.\s/%<+-]*|n/a)$")


def _numeric(table: Table) -> list[bool]:
    """Columns of numbers (or of counts and p-values written as text) are right-aligned, others left."""
    return [
        any(row.cells[j].value is not None or row.cells[j].text for row in table.rows)
        and all(row.cells[j].value is not None or _NUMBER_TEXT.match(row.cells[j].text or "") for row in table.rows)
        for j in range(len(table.columns))
    ]


def _spans(table: Table) -> list[tuple[str, int]]:
    """Consecutive columns sharing a group header: [(group, width), ...]."""
    return [(group, len(list(run))) for group, run in groupby(c.group for c in table.columns)]


@dataclass(frozen=True)
class CellMarkup:
    """How one output format marks what a table cell carries besides its number."""

    escape: Callable[[str], str]
    best: str  # format string around the number of the best cell
    second: str
    se: str  # format string around the standard error
    up: str
    down: str
    significant: str
    unconverged: str
    sd: str | None = None  # format string around the standard deviation; None: not shown


def format_cell(cell: Cell, markup: CellMarkup) -> str:
    """The cell's number with rank emphasis, standard error, arrow, delta and significance mark."""
    if cell.value is None:
        return markup.escape(cell.text or "")
    text = cell.number()
    if cell.rank == 1:
        text = markup.best.format(text)
    elif cell.rank == 2:
        text = markup.second.format(text)
    if cell.se is not None:
        text += markup.se.format(f"{cell.se:.{cell.digits}f}")
    if cell.sd is not None and markup.sd is not None:
        text += markup.sd.format(f"{cell.sd:.{cell.digits}f}")
    text += {"up": markup.up, "down": markup.down}.get(cell.arrow, "")
    if cell.delta is not None:
        text += f" ({cell.delta:+.{cell.digits}f})"
    if cell.significant:
        text += markup.significant
    if cell.unconverged:
        text += markup.unconverged
    return text


# --- Markdown -------------------------------------------------------------------------------

MARKDOWN = CellMarkup(
    lambda t: t.replace("|", "\\|"), "**{}**", "*{}*", " (SE {})", ARROWS["up"], ARROWS["down"], DAGGER, DOUBLE_DAGGER
)


SECOND_WORDS = ("second underlined", "second in italics")  # Markdown has no underline: the caption says what it shows


def to_markdown(table: Table) -> str:
    headers = [table.row_header] + [f"{c.group} · {c.name}" if c.group else c.name for c in table.columns]
    caption = table.caption.replace(*SECOND_WORDS)
    lines = [f"**{caption}**", "", "| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |"]
    lines.append("|:--|" + "".join("--:|" if numeric else ":--|" for numeric in _numeric(table)))
    for row in table.rows:
        label = row.label.replace("|", "\\|")
        lines.append("| " + " | ".join([label] + [format_cell(c, MARKDOWN) for c in row.cells]) + " |")
    lines += [""] + [f"_{note}_  " for note in table.notes]
    return "\n".join(lines).rstrip() + "\n"


# --- LaTeX ----------------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "†": r"$^{\dagger}$", "‡": r"$^{\ddagger}$", "Δ": r"$\Delta$", "·": r"$\cdot$", "±": r"$\pm$",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


LATEX = CellMarkup(
    latex_escape, r"\textbf{{{}}}", r"\underline{{{}}}", "$_{{{}}}$", r"$\uparrow$", r"$\downarrow$",
    r"$^{\dagger}$", r"$^{\ddagger}$", sd=r" $\pm$ {}",
)
SD_NOTE = "Means over replicates ± their standard deviation."


def to_latex(table: Table, names: Mapping[str, str] | None = None) -> str:
    """A `table` float with a booktabs `tabular` (needs \\usepackage{booktabs}); means carry ± sd.

    `names` maps method keys to display names (the spec's `display:`), written for the row labels
    and column groups that are method keys."""
    names = names or {}

    def shown(label: str) -> str:
        return latex_escape(names.get(label, label))

    lines = [
        "% generated by `nerplat analyze`; needs \\usepackage{booktabs}",
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(table.caption)}}}",
        rf"\label{{tab:{table.name}}}",
        r"\begin{tabular}{l" + "".join("r" if numeric else "l" for numeric in _numeric(table)) + "}",
        r"\toprule",
    ]
    if table.has_groups():
        heads, rules, start = [""], [], 2
        for group, width in _spans(table):
            heads.append(rf"\multicolumn{{{width}}}{{c}}{{{shown(group)}}}" if width > 1 else shown(group))
            if group:
                rules.append(rf"\cmidrule(lr){{{start}-{start + width - 1}}}")
            start += width
        lines.append(" & ".join(heads) + r" \\")
        lines.append(" ".join(rules))
    lines.append(" & ".join(latex_escape(h) for h in [table.row_header, *(c.name for c in table.columns)]) + r" \\")
    lines.append(r"\midrule")
    for row in table.rows:
        if row.rule_above:
            lines.append(r"\midrule")
        lines.append(" & ".join([shown(row.label), *(format_cell(c, LATEX) for c in row.cells)]) + r" \\")
    lines.append(r"\bottomrule")
    lines.append(r"\end{tabular}")
    notes = (*table.notes, SD_NOTE) if any(c.sd is not None for row in table.rows for c in row.cells) else table.notes
    if notes:
        lines.append(r"\par\smallskip\footnotesize " + r" \\ ".join(latex_escape(n) for n in notes))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# --- HTML -----------------------------------------------------------------------------------

HTML = CellMarkup(
    html.escape, "<b>{}</b>", "<u>{}</u>", "<sub>{}</sub>", ARROWS["up"], ARROWS["down"],
    f"<sup>{DAGGER}</sup>", f"<sup>{DOUBLE_DAGGER}</sup>",
)


def to_html(table: Table) -> str:
    """An HTML fragment (a <figure> holding its caption, then the table in a box of its own that scrolls
    sideways when the table is wider than the page, and the notes below it); `html_page` wraps fragments
    in a page. The caption stays outside the scroller, so it wraps at the page's width and never scrolls
    away; the row labels stay in view while the columns scroll (`HTML_STYLE`)."""
    e = html.escape
    lines = [
        f'<figure class="nerplat-table" id="{e(table.name)}">', f"<figcaption>{e(table.caption)}</figcaption>",
        '<div class="table-scroll">', "<table>", "<thead>",
    ]
    if table.has_groups():
        cells = [f'<th rowspan="2">{e(table.row_header)}</th>'] + [
            f'<th colspan="{w}">{e(g)}</th>' if w > 1 else f"<th>{e(g)}</th>" for g, w in _spans(table)
        ]
        lines.append("<tr>" + "".join(cells) + "</tr>")
        lines.append("<tr>" + "".join(f"<th>{e(c.name)}</th>" for c in table.columns) + "</tr>")
    else:
        lines.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in [table.row_header, *(c.name for c in table.columns)]) + "</tr>")
    lines += ["</thead>", "<tbody>"]
    text_columns = [not numeric for numeric in _numeric(table)]
    for row in table.rows:
        attribute = ' class="rule"' if row.rule_above else ""
        cells = "".join(
            f'<td class="text">{format_cell(c, HTML)}</td>' if text else f"<td>{format_cell(c, HTML)}</td>"
            for c, text in zip(row.cells, text_columns)
        )
        lines.append(f"<tr{attribute}><th>{e(row.label)}</th>{cells}</tr>")
    lines += ["</tbody>", "</table>", "</div>"]
    lines += [f'<p class="note">{e(n)}</p>' for n in table.notes]
    lines.append("</figure>")
    return "\n".join(lines) + "\n"


HTML_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 80em; color: #222; }
figure.nerplat-table { margin: 2em 0; }
.table-scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
figure.nerplat-table figcaption { padding-bottom: .5em; }
tbody th:first-child { position: sticky; left: 0; background: #fff; }
th, td { padding: .25em .6em; text-align: right; white-space: nowrap; }
th:first-child, td.text { text-align: left; }
thead { border-top: 2px solid #222; border-bottom: 1px solid #222; }
tbody { border-bottom: 2px solid #222; }
tr.rule { border-top: 1px solid #222; }
.note { font-size: .85em; color: #555; }
.warning { color: #8a4b00; }
img { max-width: 100%; }
"""


def html_page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )


# --- CSV ------------------------------------------------------------------------------------

CSV_FIELDS = ("table", "row", "group", "column", "value", "se", "delta", "significant", "unconverged", "arrow", "rank", "text")


def to_csv(table: Table) -> str:
    """One line per cell; numbers to 12 significant digits, `text` as printed in the other formats."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row in table.rows:
        for column, cell in zip(table.columns, row.cells):
            printed = cell.text if cell.value is None else cell.number()
            writer.writerow(
                (
                    table.name, row.label, column.group, column.name,
                    _exact(cell.value),
                    _exact(cell.se),
                    _exact(cell.delta),
                    str(cell.significant).lower(), str(cell.unconverged).lower(), cell.arrow, cell.rank or "", printed or "",
                )
            )
    return buffer.getvalue()


def _exact(number: float | None) -> str:
    """12 significant digits: every digit the statistics carry, none of the last-bit noise that
    differs between BLAS builds."""
    return "" if number is None else f"{float(number):.12g}"


RENDERERS: dict[str, Callable[[Table], str]] = {"md": to_markdown, "latex": to_latex, "html": to_html, "csv": to_csv}
