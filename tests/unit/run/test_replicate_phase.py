"""The replicate phase records the registrations its runs serve, and a sequential design stopped for
budget after look K (`nerplat run --through-look K`) leaves the next looks to a --resume."""

from __future__ import annotations

import json

import polars as pl

from nerplat.analysis.verdicts import SCHEMA
from nerplat.track import schema

SEQUENTIAL = (
    "samplers=[{low_resource: {size: 40, partitions: 6}}]", "replicate={seeds: 1, sequential: {max_seeds: 6, look_every: 1}}",
    "claims=[{id: mom_vs_ce, paper: x, source: Table 3, method: mom, partner: ce, metric: micro_f1, effect: 0.01}]",
)


def phase_of(plan, tmp_path, tracking_uri, **options):
    from rich.console import Console

    from nerplat.run.ledger import RunLedger
    from nerplat.run.runner import ExperimentRunner, RunOptions
    from nerplat.track.experiment_tracker import ExperimentTracker

    runner = ExperimentRunner(plan, RunOptions(workdir=tmp_path, **options), Console(quiet=True))
    runner.tracker = ExperimentTracker.open(tracking_uri, plan.experiment)
    runner.ledger = RunLedger(runner.tracker)
    runner._open_phases()
    return runner


def test_each_replicate_run_records_the_registrations_it_serves(tiny_plan, tracking_uri, tmp_path):
    runner = phase_of(tiny_plan, tmp_path, tracking_uri, registrations={"mom_vs_ce": "abc"})
    ce = tiny_plan.arms[0]
    (job,) = runner.replicate_phase._replicate_jobs(ce, ce.replicates[:1], {}, {})
    tags = runner.tracker.client.get_run(job["run_id"]).data.tags
    assert json.loads(tags[schema.REGISTRATIONS]) == {"mom_vs_ce": "abc"}


def test_a_run_serving_no_registration_records_none(tiny_plan, tracking_uri, tmp_path):
    runner = phase_of(tiny_plan, tmp_path, tracking_uri)
    ce = tiny_plan.arms[0]
    (job,) = runner.replicate_phase._replicate_jobs(ce, ce.replicates[:1], {}, {})
    assert schema.REGISTRATIONS not in runner.tracker.client.get_run(job["run_id"]).data.tags


def looks_run(plan, tmp_path, tracking_uri, monkeypatch, **options) -> tuple[list[int], int | None]:
    """The units each look asks of the method's arm, with the trials and verdicts stubbed (nothing decided),
    and the phase's `next_look`."""
    from nerplat.run.outcomes import ArmOutcome

    runner = phase_of(plan, tmp_path, tracking_uri, **options)
    phase, asked = runner.replicate_phase, []

    def look(arms, wanted, outcomes, parents):
        asked.append(len(wanted[plan.arms[1].id]))
        parents.update({arm.id: runner.ledger.start_phase(arm, "replicate", params={}).run_id for arm in arms})

    monkeypatch.setattr(phase, "_replicate_look", look)
    monkeypatch.setattr(phase, "_claim_verdicts", lambda: pl.DataFrame(schema=SCHEMA))
    phase.replicate(list(plan.arms), {arm.id: ArmOutcome(arm.id, chosen={}) for arm in plan.arms})
    return asked, phase.next_look


def test_a_run_stops_after_the_look_it_is_given(tiny_plan_with, tracking_uri, tmp_path, monkeypatch):
    plan = tiny_plan_with(*SEQUENTIAL)
    assert looks_run(plan, tmp_path, tracking_uri, monkeypatch)[0] == [3, 4, 5, 6]
    assert looks_run(plan, tmp_path / "budget", tracking_uri, monkeypatch, through_look=2)[0] == [3, 4]


def test_a_run_stopped_before_the_designs_end_names_the_look_a_resume_runs(tiny_plan_with, tracking_uri, tmp_path, monkeypatch):
    """reproduce.sh keeps the store for a later session only when looks are left (`nerplat run` prints `next_look`)."""
    plan = tiny_plan_with(*SEQUENTIAL)
    assert looks_run(plan, tmp_path / "budget", tracking_uri, monkeypatch, through_look=2)[1] == 3
    assert looks_run(plan, tmp_path / "last", tracking_uri, monkeypatch, through_look=4)[1] is None  # looks at 3, 4, 5, 6
    assert looks_run(plan, tmp_path / "whole", tracking_uri, monkeypatch)[1] is None
