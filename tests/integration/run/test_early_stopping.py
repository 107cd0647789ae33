"""`train.early_stopping` under real Ray Tune (ASHA) and MLflow: stopped trials end as finished runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from nerplat_processes import SPEC, finish, nerplat, runs

from nerplat.track import schema

pytestmark = pytest.mark.slow


def test_trials_and_replicates_stopped_by_patience_end_completed_under_asha(tmp_path: Path):
    """Patience 1 and min_delta 0 at lr 3e-3 (the tiny tagger's dev F1 rises after a few epochs, then wobbles): a run
    stops at the first evaluation after its rise above its first one that does not improve, else at the cap of 8;
    the runs end completed (not early_stopped, not failed) and say why they stopped."""
    code, output = finish(
        nerplat(
            "run", str(SPEC), "--workdir", str(tmp_path), "--no-analyze", "--set", "train.epochs=8", "--set", "train.lr=3.0e-3",
            "--set", "train.early_stopping={patience: 1, min_delta: 0.0}", workdir=tmp_path,
        )
    )
    assert code == 0, output
    trained = [r for r in runs(tmp_path, "tiny_run") if r.data.tags.get(schema.KIND) in ("trial", "replicate")]
    assert len(trained) == 3 + 4  # mom's 3 tuning trials, 2 replicates per arm
    stopped = {"completed": [], "early_stopped": []}
    for run in trained:
        tags, metrics = run.data.tags, run.data.metrics
        stopped[tags[schema.STATUS]].append(run)
        assert "dev_best_micro_f1" in metrics, tags[schema.RUN_KEY]
        if tags[schema.STATUS] == "completed":
            assert tags[schema.STOPPED_BY] in ("patience", "cap"), tags[schema.RUN_KEY]
            assert 2.0 <= metrics["stopped_epoch"] <= 8.0, tags[schema.RUN_KEY]  # patience needs a rise, then a fall
            if tags[schema.STOPPED_BY] == "cap":
                assert metrics["stopped_epoch"] == 8.0, tags[schema.RUN_KEY]
        else:  # ASHA may still cut a tuning trial at its first rung, before patience could
            assert tags[schema.KIND] == "trial" and schema.STOPPED_BY not in tags, tags[schema.RUN_KEY]
    assert sum(r.data.tags[schema.KIND] == "trial" for r in stopped["completed"]) >= 1  # the first trial meets no ASHA cut-off
    assert any(r.data.tags[schema.STOPPED_BY] == "patience" and r.data.metrics["stopped_epoch"] < 8 for r in stopped["completed"])
