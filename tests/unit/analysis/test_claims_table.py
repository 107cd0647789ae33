"""The claims table: one verdict per registered claim from all of its confirmatory runs, the rest
exploratory with a pooled reading, a summary and a forest plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from nerplat.analysis.claims_table import (
    NOT_YET_RUN,
    claims_summary,
    exploratory_rows,
    exploratory_table,
    forest_plot,
    pooled_reading,
    registered_rows,
    registered_table,
)
from nerplat.analysis.pooling import dersimonian_laird
from nerplat.analysis.registrations import KEYS, digest_of, load_registrations, registration_text
from nerplat.analysis.boundaries import boundaries, stagewise_p
from nerplat.analysis.sequential import VerdictRule, decide
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.analysis.verdicts import verdicts
from nerplat.config.experiment import Claim

LOOKS, UNITS = (3, 6, 9), (9, 10, 11, 12, 13, 14, 15, 16, 17)  # the units a registration lists, in look order
ALPHA = 0.05


def register(folder: Path, claim_id: str, effect: float = 0.02, looks: tuple[int, ...] = LOOKS) -> str:
    """A registration file as `nerplat claims register` writes it (the fields the table reads); returns its digest."""
    claim = {"id": claim_id, "paper": "Nemoto et al. 2024", "source": "Table 3", "kind": "superior", "method": "mom",
             "partner": "ce", "metric": "macro_f1", "effect": effect, "direction": None, "margin": None}
    design = {"arms": {}, "tuning": {}, "early_stopping": None, "epochs_cap": 20, "unit": "seed", "units": list(UNITS),
              "looks": list(looks), "max_units": 9, "spending": "pocock" if len(looks) > 1 else None, "alpha": ALPHA,
              "metric": "test_macro_f1"}
    document = {"claim": claim, "spec": "specs/x.yaml", "profile": None, "setting": {}, "design": design, "digest": ""}
    document["digest"] = digest_of(document)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{claim_id}.yaml").write_text(registration_text({k: document[k] for k in KEYS}), encoding="utf-8")
    return document["digest"]


def row(report: str, claim: str, keys: list[int], differences: list[float], digest: str | None, converged: bool = True) -> dict:
    evidence = "confirmatory" if digest else "exploratory"
    return {"report": report, "claim": claim, "registration": digest, "evidence": evidence, "unit_keys": keys,
            "unit_differences": differences, "converged": converged, "evidence_reason": None if digest else "no registration"}


def test_the_units_of_every_confirmatory_report_are_one_sequence_of_looks(tmp_path: Path):
    """Two runs of one registration: units 9-14 then 15-17 (and 12 again, and 30, which the registration
    does not list). Judged as one sequence against the registered boundaries, not as two fresh designs."""
    digest = register(tmp_path, "mom_vs_ce")
    rng = np.random.default_rng(3)
    d = list(0.004 + 0.01 * rng.standard_normal(9))
    frame = pl.DataFrame([
        row("run-2", "mom_vs_ce", [15, 16, 17, 12, 30], [*d[6:], 0.9, 0.9], digest),
        row("run-1", "mom_vs_ce", [9, 10, 11, 12, 13, 14], d[:6], digest),
    ])
    (found,) = registered_rows(frame, load_registrations(tmp_path))
    design = boundaries(LOOKS, 9, ALPHA, "pocock")
    expected = decide(d, VerdictRule(side=1), design)
    assert found.units == 9 and found.decision == expected and set(found.reports) == {"run-1", "run-2"}
    if expected.decided_look is None:
        assert found.verdict == "inconclusive after all 3 looks" and found.standing == "inconclusive"
        t = np.mean(d) / (np.std(d, ddof=1) / 3)
        assert found.p_stagewise == pytest.approx(stagewise_p(design, 2, t))


def test_a_claim_stopped_for_budget_keeps_its_row_and_one_without_runs_reads_not_yet_run(tmp_path: Path):
    digest = register(tmp_path, "stopped")
    register(tmp_path, "waiting")
    frame = pl.DataFrame([row("run-1", "stopped", [9, 10, 11], [0.01, -0.01, 0.002], digest)])
    rows = {r.registration.claim_id: r for r in registered_rows(frame, load_registrations(tmp_path))}
    assert rows["stopped"].verdict == "undecided after look 1 of 3" and rows["stopped"].standing == "undecided"
    assert rows["stopped"].p_stagewise is None
    assert rows["waiting"].verdict == NOT_YET_RUN and rows["waiting"].reports == ()
    table = registered_table(list(rows.values()))
    assert [r.label for r in table.rows] == ["stopped", "waiting"] and table.columns[0].name == "Verdict"


def test_a_decided_claim_shows_its_look_stagewise_p_and_margin_and_non_convergence_gates_it(tmp_path: Path):
    digest = register(tmp_path, "clear")
    frame = pl.DataFrame([row("run-1", "clear", [9, 10, 11], [0.05, 0.051, 0.049], digest)])
    (found,) = registered_rows(frame, load_registrations(tmp_path))
    assert found.verdict == "reproduced, at look 1 of 3" and found.margin > 0 and found.p_stagewise <= ALPHA
    gated = pl.DataFrame([row("run-1", "clear", [9, 10, 11], [0.05, 0.051, 0.049], digest, converged=False)])
    (found,) = registered_rows(gated, load_registrations(tmp_path))
    assert found.verdict == "inconclusive (not converged), interval decided at look 1 of 3" and found.standing == "inconclusive"


@pytest.mark.parametrize(
    ("looks", "converged", "expected"),
    [
        ((9,), True, "inconclusive after its one look"),
        ((9,), False, "inconclusive (not converged) after its one look"),
        (LOOKS, True, "inconclusive after all 3 looks"),
        (LOOKS, False, "inconclusive (not converged) after all 3 looks"),
    ],
)
def test_a_claim_undecided_at_its_last_look_is_inconclusive_and_says_if_a_run_hit_its_cap(
    tmp_path: Path, looks: tuple[int, ...], converged: bool, expected: str
):
    digest = register(tmp_path, "flat", looks=looks)
    differences = [0.01, -0.01, 0.02, -0.02, 0.005, -0.005, 0.01, -0.01, 0.0]  # mean 0: never decided
    frame = pl.DataFrame([row("run-1", "flat", list(UNITS), differences, digest, converged=converged)])
    (found,) = registered_rows(frame, load_registrations(tmp_path))
    assert found.decision.decided_look is None
    assert (found.verdict, found.standing) == (expected, "inconclusive")


@pytest.mark.parametrize(("looks", "label"), [((9,), "(fixed)"), (LOOKS, "(stage-wise)")])
def test_the_table_names_a_fixed_design_s_p_as_fixed_and_a_sequential_one_s_as_stage_wise(
    tmp_path: Path, looks: tuple[int, ...], label: str
):
    digest = register(tmp_path, "clear", looks=looks)
    differences = [0.05, 0.051, 0.049, 0.052, 0.048, 0.05, 0.051, 0.049, 0.05]
    frame = pl.DataFrame([row("run-1", "clear", list(UNITS), differences, digest)])
    table = registered_table(registered_rows(frame, load_registrations(tmp_path)))
    (p_cell,) = (cell.text for column, cell in zip(table.columns, table.rows[0].cells) if column.name == "p")
    assert p_cell.endswith(label)


def test_rows_that_served_another_digest_are_not_the_registration_s_evidence(tmp_path: Path):
    register(tmp_path, "mom_vs_ce")
    frame = pl.DataFrame([row("run-1", "mom_vs_ce", [9, 10, 11], [0.05, 0.051, 0.049], "an-older-digest")])
    (found,) = registered_rows(frame, load_registrations(tmp_path))
    assert found.verdict == NOT_YET_RUN


def _report_rows(report: str, gain: float, seed: int, **claim_fields) -> pl.DataFrame:
    frame = synthetic_replicates(methods=("ce", "mom"), sizes=(100,), seeds=6, types=())
    rng = np.random.default_rng(seed)
    frame = frame.with_columns(
        pl.Series("test_macro_f1", [0.7 + (gain if m == "mom" else 0.0) + rng.normal(0, 0.01) for m in frame["method"]]),
        pl.lit(True).alias("converged_run"),
    )
    claim = Claim(id="mom_vs_ce", paper="Nemoto et al. 2024", source="Table 3", method="mom", partner="ce",
                  metric="macro_f1", **({"effect": 0.3} | claim_fields))
    found = verdicts(frame, AnalysisSettings(claims=(claim,), average="macro"), aso=False)
    return found.with_columns(pl.lit(report).alias("report"), pl.lit("exploratory").alias("evidence"),
                              pl.lit("no registration").alias("evidence_reason"))


def test_exploratory_reports_are_pooled_by_dersimonian_laird_as_a_reading():
    frame = pl.concat([_report_rows("a", 0.02, 1), _report_rows("b", 0.03, 2)])
    (found,) = exploratory_rows(frame)
    rows = frame.rows(named=True)
    from scipy.stats import t as student_t

    ses = [(r["ci_high"] - r["ci_low"]) / 2 / student_t.isf((1 - r["ci_level"]) / 2, r["n_units"] - 1) for r in rows]
    assert found.pooled == dersimonian_laird([r["delta"] for r in rows], ses)
    table = exploratory_table([found])
    cells = [c.text for c in table.rows[0].cells]
    assert "over 2 reports" in cells[4] and "paper's effect outside" in cells[5] and "(no registration)" in cells[6]
    assert "cap ? ep / cap ? ep" in cells[6]  # no epochs recorded: the cap alone, never read as epochs trained
    assert "chosen after results" in table.caption


def test_a_pooled_extrapolation_against_its_direction_is_not_read_as_against_the_paper():
    beyond = {"effect": None, "direction": "worse", "extrapolation": "the paper ran full data only"}
    frame = pl.concat([_report_rows("a", 0.02, 1, **beyond), _report_rows("b", 0.03, 2, **beyond)])
    (found,) = exploratory_rows(frame)
    assert pooled_reading(found) == "against the claim (extrapolation)"
    assert all(r["verdict"] == "does not extend" for r in found.rows)


def test_the_summary_counts_verdicts_and_links_the_forest_plot(tmp_path: Path):
    digest = register(tmp_path, "clear")
    register(tmp_path, "waiting")
    registered = registered_rows(pl.DataFrame([row("r", "clear", [9, 10, 11], [0.05, 0.051, 0.049], digest)]),
                                 load_registrations(tmp_path))
    exploratory = exploratory_rows(_report_rows("a", 0.02, 1))
    text = claims_summary(registered, exploratory, "claims-forest.png")
    assert text.startswith("**2 registered claims**: 1 reproduced, 1 registered, not yet run.")
    assert "**1 exploratory claim readings**" in text
    assert "![Our intervals against the papers' effects](claims-forest.png)" in text
    figure = forest_plot(registered, exploratory)
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert labels == ["mom_vs_ce (pooled, exploratory)", "clear (registered)"]
