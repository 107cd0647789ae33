"""A verdict is confirmatory only when its runs served a registration that is unchanged and that git
dates before their first test evaluation; otherwise exploratory, saying which of these failed."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone

import polars as pl
import pytest

from nerplat.analysis.evidence import dated_registrations, late_registrations, with_evidence
from nerplat.analysis.registrations import DESIGN_KEYS, digest_of, registration_text

ARMS = ["d/full/ce", "d/full/mom"]
REGISTERED = "2026-12-07T05:00:00+00:00"
TESTED = datetime(2026, 12, 7, 5, 10, tzinfo=timezone.utc).timestamp()  # ten minutes after the registration


def git(folder, *arguments, date=REGISTERED):
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "-C", str(folder), *arguments], check=True, capture_output=True, env=env)


def document(looks=(3, 6)) -> dict:
    design = dict.fromkeys(DESIGN_KEYS) | {"looks": list(looks), "max_units": looks[-1], "units": list(range(looks[-1])),
                                           "unit": "seed", "spending": "pocock", "alpha": 0.05, "metric": "test_micro_f1"}
    found = {"claim": {"id": "mom_vs_ce"}, "spec": "specs/s.yaml", "profile": None, "setting": {}, "design": design}
    return found | {"digest": digest_of(found)}


@pytest.fixture
def repo(tmp_path):
    """A git repository with specs/registered/mom_vs_ce.yaml committed at REGISTERED."""
    git(tmp_path, "init", "-q")
    folder = tmp_path / "specs" / "registered"
    folder.mkdir(parents=True)
    (folder / "mom_vs_ce.yaml").write_text(registration_text(document()), encoding="utf-8")
    git(tmp_path, "add", "specs")
    git(tmp_path, "commit", "-q", "-m", "register")
    return folder


def verdicts() -> pl.DataFrame:
    return pl.DataFrame({"claim": ["mom_vs_ce"], "arms": [ARMS], "verdict": ["reproduced"]})


def runs(served: str | None, tested: float = TESTED) -> pl.DataFrame:
    tag = json.dumps({"mom_vs_ce": served}) if served else None
    return pl.DataFrame({"arm": ARMS * 2, "registrations": [tag] * 4, "test_evaluated_at": [tested + i for i in range(4)]})


def evidence(folder, replicates) -> dict:
    return with_evidence(verdicts(), replicates, dated_registrations(folder)).row(0, named=True)


def test_a_registration_committed_before_the_first_test_evaluation_is_confirmatory(repo):
    row = evidence(repo, runs(document()["digest"]))
    assert (row["evidence"], row["evidence_reason"]) == ("confirmatory", None)
    assert row["registration"] == document()["digest"] and row["first_test_at"] == "2026-12-07T05:10:00Z"
    assert row["verdict"] == "reproduced"  # the verdict's own columns are kept


def test_runs_that_served_no_registration_are_exploratory(repo):
    row = evidence(repo, runs(None))
    assert (row["evidence"], row["evidence_reason"], row["registration"]) == ("exploratory", "no registration", None)


def test_a_registration_changed_since_the_run_is_named(repo):
    served = document()["digest"]
    path = repo / "mom_vs_ce.yaml"
    path.write_text(registration_text(document(looks=(3, 6, 9))), encoding="utf-8")  # registered anew, another design
    git(repo.parents[1], "commit", "-q", "-am", "again", date="2026-12-07T04:00:00+00:00")
    row = evidence(repo, runs(served))
    assert row["evidence"] == "exploratory"
    assert row["evidence_reason"] == (
        f"registration changed since the run (digest {served[:12]}, now {document((3, 6, 9))['digest'][:12]})"
    )
    path.write_text(path.read_text(encoding="utf-8").replace("looks: [3, 6, 9]", "looks: [9]"), encoding="utf-8")
    reason = evidence(repo, runs(document((3, 6, 9))["digest"]))["evidence_reason"]
    assert reason.startswith("registration changed since the run") and "the file was edited" in reason


def test_a_registration_dated_after_the_first_test_evaluation_is_named(repo):
    early = datetime(2026, 12, 7, 4, 50, tzinfo=timezone.utc).timestamp()
    row = evidence(repo, runs(document()["digest"], tested=early))
    assert row["evidence"] == "exploratory"
    assert row["evidence_reason"] == "registered 2026-12-07T05:00:00Z, after the first test evaluation 2026-12-07T04:50:00Z"


def test_a_missing_or_uncommitted_registration_is_named(repo, tmp_path):
    served = document()["digest"]
    assert evidence(tmp_path / "nowhere", runs(served))["evidence_reason"].startswith("registration missing")
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "mom_vs_ce.yaml").write_text(registration_text(document()), encoding="utf-8")
    assert evidence(loose, runs(served))["evidence_reason"].startswith("registration not committed")


def test_some_runs_without_the_registration_make_it_exploratory(repo):
    replicates = runs(document()["digest"]).with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("registrations")).alias("registrations")
    )
    assert evidence(repo, replicates)["evidence_reason"] == "no registration for 1 of its 4 runs"


def test_old_frames_date_the_test_evaluation_by_the_first_step(repo):
    replicates = runs(document()["digest"]).drop("test_evaluated_at").with_columns(
        pl.lit(TESTED - 3600.0).alias("time_first_step_unix")  # an hour before: before the registration
    )
    row = evidence(repo, replicates)
    assert row["evidence"] == "exploratory" and row["first_test_at"] == "2026-12-07T04:10:00Z"


def test_a_late_registration_injected_into_a_report_is_found(repo):
    judged = with_evidence(verdicts(), runs(document()["digest"]), dated_registrations(repo))
    assert late_registrations(judged, dated_registrations(repo)) == []
    injected = judged.with_columns(pl.lit("2026-12-07T04:59:00Z").alias("first_test_at"))  # a report claiming an earlier test
    lines = late_registrations(injected, dated_registrations(repo))
    assert lines == [
        "mom_vs_ce: confirmatory, but registered 2026-12-07T05:00:00Z, not before its first test evaluation 2026-12-07T04:59:00Z"
    ]
    assert late_registrations(judged, {}) == [
        f"mom_vs_ce: confirmatory, but its registration (digest {document()['digest']}) is not the file's"
    ]


def test_frames_without_the_evidence_columns_have_nothing_to_check():
    assert late_registrations(verdicts(), {}) == []


def test_an_analysed_experiment_reads_the_tag_and_mlflows_test_timestamps(store, repo, tmp_path):
    """End to end through a real MLflow store: each replicate carries the tag the replicate phase
    writes, its test metric MLflow's timestamp; verdicts.parquet says confirmatory, then exploratory
    for a registration committed after the runs' test evaluations."""
    from mlflow.entities import Metric

    from nerplat.analysis.report import analyze_experiment
    from nerplat.analysis.settings import AnalysisSettings
    from nerplat.config.experiment import Claim
    from nerplat.track import schema

    tag = json.dumps({"mom_vs_ce": document()["digest"]})
    for seed, (ce, mom) in enumerate([(0.50, 0.55), (0.52, 0.58), (0.49, 0.56), (0.51, 0.57)]):
        for method, value in (("ce", ce), ("mom", mom)):
            run = store.run("replicate", {schema.ARM: f"toy/full/{method}", schema.METHOD: method, schema.DATASET: "toy",
                                          schema.SAMPLER: "full", schema.SEED: seed, schema.PARTITION: 0,
                                          schema.STATUS: "completed", schema.REGISTRATIONS: tag})
            store.client.log_batch(run, metrics=[Metric("test_micro_f1", value, int(TESTED * 1000) + seed, 0)])
    store.summary({"analysis": {}, "replicate_split": "test"})
    claim = Claim(id="mom_vs_ce", paper="x", source="Table 3", method="mom", partner="ce", metric="micro_f1", effect=0.05)
    settings = AnalysisSettings(claims=(claim,))
    uri = store.client.tracking_uri
    report = analyze_experiment(store.experiment, uri, tmp_path / "out", ["md"], settings, registrations=repo)
    row = pl.read_parquet(report.out_dir / "verdicts.parquet").row(0, named=True)
    assert (row["evidence"], row["registration"], row["first_test_at"]) == (
        "confirmatory", document()["digest"], "2026-12-07T05:10:00Z"
    )
    late = tmp_path / "late"
    late.mkdir()
    git(late, "init", "-q")
    (late / "mom_vs_ce.yaml").write_text(registration_text(document()), encoding="utf-8")
    git(late, "add", "mom_vs_ce.yaml")
    git(late, "commit", "-q", "-m", "late", date="2026-12-07T06:00:00+00:00")
    report = analyze_experiment(store.experiment, uri, tmp_path / "out", ["md"], settings, registrations=late)
    row = pl.read_parquet(report.out_dir / "verdicts.parquet").row(0, named=True)
    assert row["evidence_reason"] == "registered 2026-12-07T06:00:00Z, after the first test evaluation 2026-12-07T05:10:00Z"
