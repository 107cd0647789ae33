"""`replicate.sequential` end to end: real embedded Ray and SQLite MLflow, tiny encoder, CoNLL-2003.

A claim decided at the first look stops its arms there; an arm in no claim runs the first look only;
the report's verdicts.parquet says at which look each claim was decided.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from nerplat_processes import finish, nerplat, runs

from nerplat.track import schema

pytestmark = pytest.mark.slow

SPEC = Path(__file__).parent / "specs" / "sequential_run.yaml"


def test_a_claim_decided_at_the_first_look_stops_its_arms(tmp_path: Path):
    shutil.copy(SPEC, tmp_path / "spec.yaml")
    code, output = finish(nerplat("run", "spec.yaml", workdir=tmp_path), timeout=900)
    assert code == 0, output
    assert "look 1:" in output
    replicates = [r for r in runs(tmp_path, "sequential_run") if r.data.tags[schema.KIND] == "replicate"]
    per_method = Counter(r.data.tags[schema.METHOD] for r in replicates)
    assert per_method == {"ce": 3, "mom": 3, "wce": 3}, per_method  # max_seeds is 6
    verdicts = pl.read_parquet(tmp_path / "reports" / "sequential_run" / "verdicts.parquet")
    (row,) = verdicts.iter_rows(named=True)
    assert row["claim"] == "decided" and row["decided_look"] == 0 and row["n_pairs"] == 3
    assert row["direction_verdict"] == "equivalent" and row["unit"] == "seed" and row["n_units"] == 3
    assert -1.0 < row["ci_low"] <= row["ci_high"] < 1.0 and row["design"].startswith("sequential (pocock")
