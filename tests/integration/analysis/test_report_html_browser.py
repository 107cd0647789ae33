"""report.html in a real browser at 1280 pixels (issue 63, item 3): every table's caption sits outside
its sideways scroller, within the window, and the verdicts table's Verdict column is on screen without
scrolling.

The page is the report's own HTML (`render.html_page` of `render.to_html` tables, as `analysis.report`
writes report.html) for the verdicts of a committed report, with a measuring script added to the copy
the browser opens: it writes each table's element positions into the DOM that `--dump-dom` returns.
A screenshot is kept in the test's folder.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest
from chromium import rendered_page
from repo_paths import REPO

from nerplat.analysis.context_tables import verdicts_table
from nerplat.analysis.render import html_page, to_html

pytestmark = pytest.mark.slow

WIDTH = 1280
REPORT = REPO / "docs" / "results" / "auc2t_lowres_conll"  # six claims, long ids and verdicts
MEASURE = """<script>
window.addEventListener("load", () => {
  const found = {width: document.documentElement.clientWidth, tables: {}};
  for (const figure of document.querySelectorAll("figure.nerplat-table")) {
    const heads = [...figure.querySelectorAll("thead th")];
    const verdict = heads.find((th) => th.textContent.trim() === "Verdict");
    const caption = figure.querySelector("figcaption, caption");
    found.tables[figure.id] = {
      verdict_right: verdict ? verdict.getBoundingClientRect().right : null,
      caption_right: caption.getBoundingClientRect().right,
      caption_in_scroller: caption.closest(".table-scroll") !== null,
    };
  }
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>
"""


def test_the_verdict_and_every_caption_are_on_screen_at_1280_pixels(tmp_path: Path):
    table = verdicts_table(pl.read_parquet(REPORT / "verdicts.parquet"))
    page = html_page("report", to_html(table)).replace("</body>", MEASURE + "</body>")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    dom = rendered_page(path.as_uri(), tmp_path / "report-1280.png", width=WIDTH, height=900, budget_ms=3000)
    measured = json.loads(html.unescape(re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S).group(1)))
    width = measured["width"]
    verdicts = measured["tables"]["verdicts"]
    assert verdicts["verdict_right"] is not None and verdicts["verdict_right"] <= width, measured
    for name, found in measured["tables"].items():
        assert not found["caption_in_scroller"] and found["caption_right"] <= width, (name, measured)
