"""Renderers: the same marks in every format, and text escaped for each."""

from __future__ import annotations

import csv
import io
import re

import pytest

from nerplat.analysis.render import html_page, latex_escape, to_csv, to_html, to_latex, to_markdown
from nerplat.analysis.table_model import Cell, Column, Row, Table

TABLE = Table(
    name="demo",
    caption="F1 of a_b & c, 5% <best>",
    row_header="Method",
    columns=(Column("size 20", "P"), Column("size 20", "F1"), Column("", "Support", ranked=False)),
    rows=(
        Row("ce", (Cell(0.5, se=0.01, rank=2), Cell(0.6, rank=1), Cell(text="1,000"))),
        Row("m|x", (Cell(0.7, delta=0.2, significant=True, rank=1), Cell(0.4, arrow="down"), Cell())),
        Row("Macro-avg", (Cell(0.55), Cell(0.5, arrow="up"), Cell(text="")), rule_above=True),
    ),
    notes=("† p < 0.05",),
)


def test_markdown_marks_best_second_se_delta_and_significance_without_html_tags():
    """MLflow's artifact viewer prints HTML tags as text: REPORT.md showed `<u>0.0359</u>`."""
    text = to_markdown(TABLE)
    assert "| ce | *0.5000* (SE 0.0100) | **0.6000** | 1,000 |" in text
    assert not re.search(r"</?[a-z]+>", text.replace("<best>", ""))
    captioned = to_markdown(Table("t", "Mean; best in bold, second underlined.", "Method", TABLE.columns, TABLE.rows))
    assert "**Mean; best in bold, second in italics.**" in captioned
    assert "| m\\|x | **0.7000** (+0.2000)† | 0.4000↓ |  |" in text
    assert "size 20 · P" in text and "_† p < 0.05_" in text


def test_latex_escapes_text_and_spans_group_headers():
    text = to_latex(TABLE)
    assert r"\caption{F1 of a\_b \& c, 5\% <best>}" in text
    assert r"\multicolumn{2}{c}{size 20}" in text and r"\cmidrule(lr){2-3}" in text
    assert r"\underline{0.5000}$_{0.0100}$" in text
    assert r"\textbf{0.7000} (+0.2000)$^{\dagger}$" in text
    assert r"0.4000$\downarrow$" in text
    assert text.count(r"\midrule") == 2  # below the header and above the average row
    assert latex_escape("~^\\") == r"\textasciitilde{}\textasciicircum{}\textbackslash{}"
    assert "standard deviation" not in text  # no cell carries one


def test_latex_gives_mean_plus_minus_sd_at_the_cells_digits_and_display_names():
    table = Table(
        "demo", "F1", "Method", (Column("conll", "F1"),),
        (Row("wce1", (Cell(0.56789, sd=0.01234, digits=3, rank=1),)), Row("ce", (Cell(0.5, sd=0.02, digits=3),))),
    )
    text = to_latex(table, names={"wce1": "WCE ($w$=1)"})
    assert r"\textbf{0.568} $\pm$ 0.012" in text and r"0.500 $\pm$ 0.020" in text
    assert r"WCE (\$w\$=1) & " in text and "wce1" not in text
    assert r"Means over replicates $\pm$ their standard deviation." in text
    assert "0.568 |" in to_markdown(table) or "**0.568** |" in to_markdown(table)  # Markdown: no sd, same digits


def test_html_escapes_and_marks():
    text = to_html(TABLE)
    assert "F1 of a_b &amp; c, 5% &lt;best&gt;" in text
    assert '<th colspan="2">size 20</th>' in text
    assert "<td><b>0.7000</b> (+0.2000)<sup>†</sup></td>" in text
    assert '<tr class="rule"><th>Macro-avg</th>' in text
    assert html_page("t", text).startswith("<!DOCTYPE html>")


def test_a_wide_html_table_scrolls_in_its_own_box():
    text = to_html(TABLE)
    box = text.index('<div class="table-scroll">')
    assert box < text.index("<table>") < text.index("</table>") < text.index("</div>") < text.index('<p class="note">')
    assert re.search(r"\.table-scroll \{[^}]*overflow-x: auto", html_page("t", text))


def test_csv_is_one_line_per_cell_with_exact_numbers():
    rows = list(csv.DictReader(io.StringIO(to_csv(TABLE))))
    assert len(rows) == 9
    first = rows[0]
    assert (first["row"], first["group"], first["column"], first["rank"], first["text"]) == ("ce", "size 20", "P", "2", "0.5000")
    assert float(first["value"]) == 0.5 and float(first["se"]) == pytest.approx(0.01)
    assert rows[3]["significant"] == "true" and float(rows[3]["delta"]) == pytest.approx(0.2)
    assert rows[2]["value"] == "" and rows[2]["text"] == "1,000"
