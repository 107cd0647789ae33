"""docs/peer-gap-probe.py on the bench sweep's smoke profile (the tiny encoder), one epoch on 20 sentences
and 10 dev sentences: its pass check and one score line per variant."""

import re

import pytest
from docs_scripts import output_lines, run_docs_script

pytestmark = pytest.mark.slow

ROWS = (
    "nerplat, packed dropout", "nerplat, torch dropout", "nerplat, no dropout", "nerplat, random batches",
    "nerplat, one group", "nerplat, random, no dropout", "peer Trainer, dropout", "peer Trainer, no dropout",
)  # fmt: skip
SCORE = re.compile(
    r"^\s*(?P<name>.+): median (?P<median>[01]\.\d{3}), mean [01]\.\d{3}; by seed (?P<seeds>[01]\.\d{3}( [01]\.\d{3})*)$"
)
PASS = re.compile(r"^same weights and batch, nerplat / peer: loss (\S+) / (\S+), gradient norm (\S+) / (\S+)$")


def test_the_probe_compares_one_pass_and_scores_every_variant():
    small = ["--set", "train.epochs=1", "--set", "train.dev_subset=10"]
    lines = output_lines(run_docs_script("peer-gap-probe.py", "1.96e-4", "1", "20", *small, "--profile", "smoke", timeout=900))
    assert lines[0] == "20 training sentences, learning rate 0.000196"
    losses = PASS.match(lines[1])
    assert losses, lines[1]
    ours, theirs, our_norm, their_norm = map(float, losses.groups())
    assert ours == pytest.approx(theirs, rel=1e-4) and our_norm == pytest.approx(their_norm, rel=1e-3)  # the same model twice
    scores = [SCORE.match(line) for line in lines[2:] if not line.startswith("{")]  # the Trainer prints its log as dicts
    assert all(scores), lines[2:]
    assert tuple(score["name"] for score in scores) == ROWS
    assert all(len(score["seeds"].split()) == 1 for score in scores)
