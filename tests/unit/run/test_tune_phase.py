"""The tune phase's refusal of a resume whose completed choice cannot stand (issue 62), on a real SQLite store."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from nerplat.errors import UserInputError
from nerplat.run.job import SAMPLE_INDEX_KEY, TrialJob
from nerplat.run.ledger import RunLedger
from nerplat.run.tune_phase import TunePhase
from nerplat.track import schema

METRIC = "dev_best_micro_f1"


@pytest.fixture
def mom(tiny_plan):
    return next(arm for arm in tiny_plan.arms if arm.search_space)


def tuned(ledger: RunLedger, arm, evaluation_at) -> str:
    """The arm's tune phase completed with two tied trials; the first sampled is chosen. Its run id."""
    parent = ledger.start_phase(arm, "tune", params={"search_space": {}}).run_id
    job = TrialJob(arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1", parent_run_id=parent)
    for index, value in enumerate((0.8613, 0.7531)):
        ledger.start_trial(f"t{index}", job, {"objective.lambda": value, SAMPLE_INDEX_KEY: index})
        ledger.record_evaluation(f"t{index}", evaluation_at(2, 0.0319), awaits_checkpoint=False)
        ledger.end(f"t{index}", failed=False)
    ledger.record_choice(parent, ledger.finished_trials(parent, METRIC)[0], METRIC)
    ledger.finish(parent, "completed")
    return parent


def phase(ledger: RunLedger) -> TunePhase:
    return TunePhase(SimpleNamespace(ledger=ledger, select_metric="micro_f1"))


def test_a_completed_choice_its_replicates_trained_stands(ledger, mom, evaluation_at):
    tuned(ledger, mom, evaluation_at)
    ledger.start_phase(mom, "replicate", params={}, tags={schema.SAMPLED: json.dumps({"objective.lambda": 0.8613})})
    phase(ledger).refuse_unusable_choices([mom])
    assert ledger.recorded_choice(mom, METRIC).values == {"objective.lambda": 0.8613}


def test_a_choice_rewritten_after_its_replicates_started_is_refused_naming_both_points(ledger, mom, evaluation_at):
    """What an earlier nerplat left after optuna.db was lost: the replicates refused "the spec changed"."""
    parent = tuned(ledger, mom, evaluation_at)
    ledger.start_phase(mom, "replicate", params={}, tags={schema.SAMPLED: json.dumps({"objective.lambda": 0.8613})})
    rechosen = ledger.finished_trials(parent, METRIC)[1]
    ledger.tracker.client.set_tag(parent, schema.SAMPLED, json.dumps(rechosen.values))
    ledger.tracker.edits.mark_best_trial(parent, rechosen.run_id)
    with pytest.raises(UserInputError) as refused:
        phase(ledger).refuse_unusable_choices([mom])
    message = str(refused.value)
    assert mom.id in message and "0.7531" in message and '{"objective.lambda": 0.8613}' in message
    assert "nothing was changed" in message and "spec changed" not in message


def test_a_completed_tune_run_without_a_readable_choice_is_refused(ledger, mom, evaluation_at):
    parent = tuned(ledger, mom, evaluation_at)
    ledger.tracker.client.set_tag(parent, schema.SAMPLED, "not json")
    with pytest.raises(UserInputError, match="records no choice nerplat can read back"):
        phase(ledger).refuse_unusable_choices([mom])


def test_arms_whose_tune_phase_did_not_complete_are_left_to_tune(ledger, mom, tiny_plan):
    ledger.start_phase(mom, "tune", params={"search_space": {}})
    phase(ledger).refuse_unusable_choices(list(tiny_plan.arms))
