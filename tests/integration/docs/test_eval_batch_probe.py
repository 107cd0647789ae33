"""docs/eval-batch-probe.py with the tiny encoder on a few dev sentences: every cut, its padding and its time."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

HEAD = re.compile(r"^8 sentences: (?P<real>\d+) real sub-tokens, longest (?P<longest>\d+)$")
ROW = re.compile(
    r"^\s*(?P<name>.+): +(?P<batches>\d+) batches, +(?P<padded>\d+) padded sub-tokens, "
    r"median \d+\.\d{3} s \((?P<ratio>\d+\.\d{3})x\)$"
)
CUTS = ["128 windows", "filled 4096", "filled 2048", "filled 1024", "filled 512"]
CUTS += [f"cheapest, cost {c}" for c in (0, 32, 64, 128, 256)] + ["16 windows"]


def test_the_probe_times_every_cut_and_counts_its_padding():
    lines = output_lines(run_docs_script("eval-batch-probe.py", "8", "1", "--encoder", "tiny", timeout=300))
    head = HEAD.match(lines[0])
    assert head, lines[0]
    rows = {row["name"]: row for row in map(ROW.match, lines[1:]) if row}
    assert list(rows) == CUTS, lines
    real = int(head["real"])
    assert all(int(row["padded"]) >= real for row in rows.values())
    assert int(rows["cheapest, cost 0"]["padded"]) == real  # a cut at no cost a batch pads nothing
    assert rows["128 windows"]["batches"] == "1" and rows["128 windows"]["ratio"] == "1.000"
