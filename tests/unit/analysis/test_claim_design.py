"""Before a run: claims whose arms get unequal tuning effort, each claim's design and cost, and
whether the design can decide it at the paper's effect."""

from __future__ import annotations

import math

import pytest
from spec_testing import fake_catalog

from nerplat.analysis.claim_design import PilotSd, claim_costs, claim_power, undecidable_claims, unequal_effort
from nerplat.plan.compiler import compile_plan

SPEC = """
experiment: fair
dataset: conll2003
model: {encoder: tiny}
train: {epochs: 4, lr: {loguniform: [1.0e-5, 1.0e-3]}}
methods:
  ce: {loss: ce}
  focal: {loss: focal, gamma: {uniform: [0.0, 5.0]}}
  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}
tune: {num_samples: 6}
replicate: {sequential: {max_seeds: 9, look_every: 3, spending: pocock}}
claims:
  - {id: mom_vs_ce, paper: x, source: Table 3, method: mom, partner: ce, metric: micro_f1, effect: 0.0033, pilot_sd: 0.0071}
  - {id: mom_vs_best, paper: x, source: Table 3, method: mom, partner: best_other, metric: micro_f1, effect: 0.01}
"""


@pytest.fixture
def plan_of(tmp_path):
    def compiled(text: str):
        path = tmp_path / "spec.yaml"
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, fake_catalog())

    return compiled


def test_equal_effort_passes_and_a_fixed_learning_rate_or_shorter_budget_is_named(plan_of):
    assert unequal_effort(plan_of(SPEC)) == []
    unfair = SPEC.replace("  ce: {loss: ce}", "  ce: {loss: ce, train: {lr: 1.0e-4, epochs: 2}}")
    lines = unequal_effort(plan_of(unfair))
    assert len(lines) == 2 and all("ce (0 trials, searching no training key, 2 epochs)" in line for line in lines)
    assert lines[0].startswith("claim mom_vs_ce: unequal tuning effort, mom (6 trials, searching train.lr, 4 epochs)")
    excused = unfair.replace(
        "metric: micro_f1, effect: 0.01}", "metric: micro_f1, effect: 0.01, unequal_effort: the paper tunes MoM only}"
    )
    excused = excused.replace("pilot_sd: 0.0071}", "pilot_sd: 0.0071, unequal_effort: the paper tunes MoM only}")
    assert unequal_effort(plan_of(excused)) == []


def _noncentral_t_power(effect: float, sd: float, n: int, alpha: float) -> float:
    """The two-sided paired t-test's power, straight from scipy's noncentral t (the oracle)."""
    from scipy import stats

    critical = stats.t.ppf(1 - alpha / 2, n - 1)
    shift = effect / (sd / math.sqrt(n))
    return float(stats.nct.sf(critical, n - 1, shift) + stats.nct.cdf(-critical, n - 1, shift))


def test_a_declared_pilot_sd_gives_effect_in_sd_power_and_units_needed(plan_of):
    plan = plan_of(SPEC)
    power = claim_power(plan, plan.claims[0])
    assert (power.sd, power.units, power.unit, power.alpha) == (0.0071, 9, "seed", 0.025)  # 0.05 over 2 claims
    assert power.power == pytest.approx(_noncentral_t_power(0.0033, 0.0071, 9, 0.025), abs=1e-9)
    assert power.power < 0.5 and power.undecidable
    needed = math.ceil(power.units_needed)
    assert _noncentral_t_power(0.0033, 0.0071, needed, 0.025) >= 0.8 > _noncentral_t_power(0.0033, 0.0071, needed - 1, 0.025)
    line = power.line()
    assert line.startswith(
        "claim mom_vs_ce: pilot sd 0.0071 (the claim's pilot_sd); paper effect +0.0033 = 0.46 sd; fixed design power "
    )
    assert f"at 9 seeds (alpha 0.025); {needed} seeds for power 0.8; the sequential design (looks at [3, 6, 9]): " in line
    assert line.endswith(f"(10,000 simulated experiments); undecidable at this budget (needs {needed} units)")


def test_without_a_pilot_the_power_is_unknown_and_a_report_pilot_is_used_where_the_claim_declares_none(plan_of):
    plan = plan_of(SPEC)
    assert claim_power(plan, plan.claims[1]).line() == "claim mom_vs_best: no pilot sd: power unknown"
    decidable = claim_power(plan, plan.claims[1], PilotSd(0.004, "docs/results/x/runs.parquet, 9 seeds"))
    assert decidable.power > 0.5 and not decidable.undecidable and "undecidable" not in decidable.line()
    assert claim_power(plan, plan.claims[0], PilotSd(0.001, "ignored")).sd == 0.0071  # the claim's own pilot_sd first
    assert [p.claim for p in undecidable_claims(plan)] == ["mom_vs_ce"]
    assert [p.claim for p in undecidable_claims(plan, {"mom_vs_best": PilotSd(0.05, "report")})] == ["mom_vs_ce", "mom_vs_best"]


def test_a_direction_only_claim_is_sized_on_the_pilots_difference_and_never_gated(plan_of):
    plan = plan_of(SPEC.replace("effect: 0.0033, pilot_sd: 0.0071", "direction: better"))
    assert "power unknown" in claim_power(plan, plan.claims[0], PilotSd(0.0071, "a declared sd")).line()
    weak = claim_power(plan, plan.claims[0], PilotSd(0.0071, "report", 0.0033))
    assert weak.target is None and weak.pilot_difference == 0.0033
    assert weak.power == pytest.approx(_noncentral_t_power(0.0033, 0.0071, 9, 0.025), abs=1e-9) and weak.power < 0.5
    assert not weak.undecidable and undecidable_claims(plan, {"mom_vs_ce": PilotSd(0.0071, "report", 0.0033)}) == []
    needed = math.ceil(weak.units_needed)
    assert _noncentral_t_power(0.0033, 0.0071, needed, 0.025) >= 0.8 > _noncentral_t_power(0.0033, 0.0071, needed - 1, 0.025)
    line = weak.line()
    assert "direction only (the paper gives no effect): at the pilot's difference +0.0033 = 0.46 sd; fixed design power " in line
    assert f"{needed} seeds for power 0.8" in line and "undecidable" not in line


def test_an_equivalence_claim_is_powered_at_a_true_difference_of_zero(plan_of):
    text = SPEC.replace("effect: 0.0033, pilot_sd: 0.0071", "kind: equivalent, margin: 0.01, pilot_sd: 0.011")
    plan = plan_of(text)
    power = claim_power(plan, plan.claims[0])
    tost = 2 * _noncentral_t_power(0.01, 0.011, 9, 0.05) - 1  # both one-sided tests at 0.025: the bound 2 p - 1
    assert power.power == pytest.approx(tost, abs=1e-9) and power.undecidable
    needed = math.ceil(power.units_needed)
    assert (
        2 * _noncentral_t_power(0.01, 0.011, needed, 0.05) - 1
        >= 0.8
        > 2 * _noncentral_t_power(0.01, 0.011, needed - 1, 0.05) - 1
    )
    assert "margin 0.01 = 0.91 sd" in power.line() and f"(needs {needed} units)" in power.line()


def test_each_claim_gets_its_design_and_a_cost_at_the_most_from_measured_trials(plan_of):
    plan = plan_of(SPEC)
    against_ce, against_best = claim_costs(plan)
    assert against_ce.arms == ("conll2003/full/mom", "conll2003/full/ce") and against_ce.tune_trials == 12
    assert len(against_best.arms) == 3 and "looks at [3, 6, 9] seeds" in against_ce.design
    seconds = {arm.id: 60.0 for arm in plan.arms}
    (costed, _) = claim_costs(plan, seconds)
    assert costed.wall_s == pytest.approx(60.0 * 2 * (6 + 9))
    cost_line, power_line = costed.lines()
    assert cost_line.startswith("claim mom_vs_ce: 2 arms, 12 tune trials, at most 9 seeds (sequential, pocock")
    assert cost_line.endswith("at most 0.5 h of its arms' trials") and power_line.startswith("  claim mom_vs_ce: pilot sd")
    assert against_ce.wall_s is None and "seeds expected at stopping (10,000 simulated experiments)" in power_line


def test_a_sequential_design_gets_its_own_simulated_power_below_the_fixed_designs_and_the_gate_reads_it(plan_of):
    pocock = "replicate: {sequential: {max_seeds: 9, look_every: 3, spending: pocock}}"
    direction = SPEC.replace("effect: 0.0033, pilot_sd: 0.0071", "direction: better")
    pilot = PilotSd(0.0071, "report", 0.0066)
    sequential_plan, fixed_plan = plan_of(direction), plan_of(direction.replace(pocock, "replicate: {seeds: 9}"))
    sequential = claim_power(sequential_plan, sequential_plan.claims[0], pilot)
    fixed = claim_power(fixed_plan, fixed_plan.claims[0], pilot)
    assert sequential.looks == (3, 6, 9) and fixed.looks == () and math.isnan(fixed.sequential_power)
    assert sequential.power == pytest.approx(fixed.power) and fixed.power_as_run == fixed.power
    # Pocock spends alpha at looks 3 and 6, so the design that runs has less power than one test at 9 seeds
    assert 0.0 < sequential.sequential_power < sequential.power and sequential.power_as_run == sequential.sequential_power
    assert 3.0 < sequential.expected_units < 9.0
    assert "the sequential design (looks at [3, 6, 9]): power " in sequential.line()
    assert "fixed design power" in sequential.line() and "sequential" not in fixed.line()
    # the gate: a paper effect whose fixed power at 9 seeds clears 0.5 while the sequential design's does not
    gated = plan_of(SPEC.replace("pilot_sd: 0.0071", "pilot_sd: 0.0034"))
    power = claim_power(gated, gated.claims[0])
    assert power.power > 0.5 > power.sequential_power and power.undecidable


def _pilot_folder(folder, partitions: int, seeds: int, shifts: dict[tuple[int, int], float]):
    """A report folder whose runs.parquet holds ce and mom (mom = ce + shift) and a failed run to skip."""
    import polars as pl

    rows = []
    for method in ("ce", "mom"):
        for partition in range(partitions):
            for seed in range(seeds):
                value = 0.5 + 0.01 * seed + (shifts[partition, seed] if method == "mom" else 0.0)
                rows.append({"run_id": f"{method}-{partition}-{seed}", "arm": f"conll2003/full/{method}", "method": method,
                             "dataset": "conll2003", "sampler": "none", "sampler_label": "full", "size": 100, "seed": seed,
                             "partition": partition, "status": "completed", "encoder": "tiny", "head": "softmax",
                             "test_micro_f1": value, "dev_best_micro_f1": value})
    rows.append(rows[-1] | {"run_id": "failed", "seed": seeds, "status": "failed", "test_micro_f1": 9.0})
    folder.mkdir()
    pl.DataFrame(rows).write_parquet(folder / "runs.parquet")
    return folder


def test_a_report_pilot_gives_the_sd_of_the_unit_level_differences(plan_of, tmp_path):
    import numpy as np

    from nerplat.analysis.claim_design import pilot_sds
    from nerplat.errors import UserInputError

    plan = plan_of(SPEC)
    seeded = [0.001, 0.004, -0.002, 0.006, 0.003]
    found = pilot_sds(plan, _pilot_folder(tmp_path / "seeds", 1, 5, {(0, s): d for s, d in enumerate(seeded)}))
    assert found["mom_vs_ce"].sd == pytest.approx(np.std(seeded, ddof=1))
    assert found["mom_vs_ce"].source.endswith("runs.parquet, 5 seeds")
    assert found["mom_vs_ce"].difference == pytest.approx(np.mean(seeded))
    # partitions: the unit is the partition, its seeds' differences averaged first
    shifts = {(p, s): 0.002 * p + (0.003 if s else -0.003) for p in range(4) for s in range(2)}
    found = pilot_sds(plan, _pilot_folder(tmp_path / "partitions", 4, 2, shifts))
    assert found["mom_vs_ce"].sd == pytest.approx(np.std([0.0, 0.002, 0.004, 0.006], ddof=1))
    assert found["mom_vs_ce"].difference == pytest.approx(0.003)
    assert found["mom_vs_ce"].source.endswith("4 partitions")
    line = claim_power(plan, plan.claims[1], found["mom_vs_best"]).line()
    assert line.startswith(
        f"claim mom_vs_best: pilot sd {found['mom_vs_best'].sd:.4g} ({tmp_path / 'partitions' / 'runs.parquet'}, 4 partitions)"
    )
    with pytest.raises(UserInputError, match="holds neither runs.parquet nor mlflow.db"):
        pilot_sds(plan, tmp_path)


def test_a_store_pilot_reads_the_experiments_replicates_as_a_report_would(plan_of, tmp_path, empty_mlflow_db):
    import shutil

    import numpy as np
    import polars as pl
    from mlflow import MlflowClient

    from nerplat.analysis.claim_design import pilot_sds
    from nerplat.analysis.run_frames import INTEGER_TAGS, TEXT_TAGS
    from nerplat.errors import UserInputError
    from nerplat.track import schema

    plan = plan_of(SPEC)
    seeded = [0.001, 0.004, -0.002, 0.006, 0.003]
    rows = pl.read_parquet(_pilot_folder(tmp_path / "report", 1, 5, {(0, s): d for s, d in enumerate(seeded)}) / "runs.parquet")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(empty_mlflow_db, work / "mlflow.db")  # a run's work folder, its store migrated once per session
    client = MlflowClient(f"sqlite:///{work / 'mlflow.db'}")
    experiment = client.create_experiment(plan.experiment)
    for row in rows.iter_rows(named=True):
        tags = {tag: str(row[column]) for column, tag in (TEXT_TAGS | INTEGER_TAGS).items() if row.get(column) is not None}
        tags |= {schema.KIND: "replicate", schema.RUN_KEY: row["run_id"]}
        run = client.create_run(experiment, tags=tags, run_name=row["run_id"])
        client.log_metric(run.info.run_id, "test_micro_f1", row["test_micro_f1"])
    from_store = pilot_sds(plan, work)["mom_vs_ce"]
    assert from_store.sd == pytest.approx(np.std(seeded, ddof=1))
    assert from_store.source == f"sqlite:///{(work / 'mlflow.db').resolve()}, experiment {plan.experiment}, 5 seeds"
    assert pilot_sds(plan, work / "mlflow.db")["mom_vs_ce"].sd == pytest.approx(from_store.sd)
    with pytest.raises(UserInputError, match="neither runs.parquet nor mlflow.db"):
        pilot_sds(plan, tmp_path / "nothing.txt")
