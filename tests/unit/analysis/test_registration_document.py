"""A registration: the claim and its design from the compiled plan, hashed; one file per claim, read
back intact or named; a register that writes all or nothing, never on units an earlier registration
of the claim held; a run serves a registration only when its plan reproduces it."""

from __future__ import annotations

import copy
import os
import subprocess

import pytest
import yaml
from spec_testing import fake_catalog

from nerplat.analysis import registration_document as registration_module
from nerplat.analysis.registration_document import register_claims, registration_document, served_registrations
from nerplat.analysis.registrations import (
    DESIGN_KEYS,
    digest_of,
    load_registrations,
    read_registration,
    registered_design,
    registration_text,
)
from nerplat.errors import UserInputError
from nerplat.plan import model as plan_model
from nerplat.plan.compiler import compile_plan

SPEC = """
experiment: registered
dataset: conll2003
model: {encoder: tiny}
train: {epochs: 4, lr: {loguniform: [1.0e-5, 1.0e-3]}, early_stopping: {patience: 2, min_delta: 0.001}}
methods:
  ce: {loss: ce}
  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}
tune: {num_samples: 6}
replicate: {seeds: [5, 6, 7, 8, 9, 10, 11, 12, 13], sequential: {max_seeds: 9, look_every: 3, spending: pocock}}
claims:
  - {id: mom_vs_ce, paper: x, source: Table 3, method: mom, partner: ce, metric: micro_f1, effect: 0.0033}
  - {id: mom_vs_best, paper: x, source: Table 3, method: mom, partner: best_other, metric: micro_f1, effect: 0.01}
"""


@pytest.fixture
def plan_of(tmp_path):
    def compiled(text: str = SPEC):
        path = tmp_path / "specs" / "spec.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, fake_catalog()), path

    return compiled


def test_the_document_holds_the_claim_setting_and_design(plan_of):
    plan, spec = plan_of()
    document = registration_document(plan, "mom_vs_ce", spec)
    design = document["design"]
    assert document["spec"] == "specs/spec.yaml" and document["claim"]["effect"] == 0.0033
    assert design["arms"]["method"]["arm"].endswith("/mom") and design["arms"]["partner"]["arm"].endswith("/ce")
    method = design["arms"]["method"]
    assert method["trials"] == 6 and set(method["searched"]) == {"objective.lambda", "train.lr"}
    assert design["early_stopping"] == {"patience": 2, "min_delta": 0.001} and design["epochs_cap"] == 4
    assert (design["unit"], design["units"], design["looks"], design["max_units"]) == ("seed", list(range(5, 14)), [3, 6, 9], 9)
    assert design["spending"] == "pocock" and design["metric"] == "test_micro_f1"
    assert design["selection_metric"] == "dev_micro_f1"  # the checkpoint and stopping metric of every run
    assert design["alpha"] == pytest.approx(0.05 / 2)  # two claim rows in the plan


def test_the_digest_is_stable_and_survives_the_file(plan_of, tmp_path):
    plan, spec = plan_of()
    first = registration_document(plan, "mom_vs_ce", spec)
    again = registration_document(plan_of()[0], "mom_vs_ce", spec)
    assert first["digest"] == again["digest"] == digest_of(first)
    path = tmp_path / "mom_vs_ce.yaml"
    path.write_text(registration_text(first), encoding="utf-8")
    read = read_registration(path)
    assert read.intact and read.digest == first["digest"] and read.looks == (3, 6, 9) and read.units == tuple(range(5, 14))


@pytest.mark.parametrize("field", DESIGN_KEYS)
def test_the_digest_changes_with_every_design_field(plan_of, field):
    plan, spec = plan_of()
    document = registration_document(plan, "mom_vs_ce", spec)
    changed = copy.deepcopy(document)
    changed["design"][field] = {"changed": True}
    assert digest_of(changed) != document["digest"]


@pytest.mark.parametrize("edit", [
    ("num_samples: 6", "num_samples: 7"),  # tuning budget
    ("patience: 2", "patience: 3"),  # early stopping
    ("epochs: 4", "epochs: 5"),  # the cap
    ("[5, 6, 7, 8, 9, 10, 11, 12, 13]", "[6, 7, 8, 9, 10, 11, 12, 13, 14]"),  # units
    ("spending: pocock", "spending: obrien_fleming"),
    ("look_every: 3", "look_every: 4"),
    ("metric: micro_f1, effect: 0.0033", "metric: macro_f1, effect: 0.0033"),
    ("lambda: {uniform: [0.0, 1.0]}", "lambda: {uniform: [0.1, 1.0]}"),  # searched space
])
def test_the_digest_changes_when_the_spec_changes_the_design(plan_of, edit):
    plan, spec = plan_of()
    before = registration_document(plan, "mom_vs_ce", spec)["digest"]
    changed, _ = plan_of(SPEC.replace(*edit))
    assert registration_document(changed, "mom_vs_ce", spec)["digest"] != before


def test_a_fixed_design_has_one_look_and_no_spending(plan_of):
    plan, spec = plan_of(SPEC.replace(", sequential: {max_seeds: 9, look_every: 3, spending: pocock}", ""))
    design = registration_document(plan, "mom_vs_ce", spec)["design"]
    assert (design["looks"], design["max_units"], design["spending"]) == ([9], 9, None)


@pytest.mark.parametrize("claim, message", [
    ("mom_vs_best", "its partner is best_other"),
    ("nope", "unknown claim 'nope'"),
])
def test_claims_no_design_fixes_are_refused(plan_of, claim, message):
    plan, spec = plan_of()
    with pytest.raises(UserInputError, match=message):
        registration_document(plan, claim, spec)


def test_a_claim_over_several_settings_is_refused(plan_of):
    plan, spec = plan_of(SPEC.replace("dataset: conll2003", "datasets: [conll2003, wnut17]"))
    with pytest.raises(UserInputError, match="covers 2 settings of this plan"):
        registration_document(plan, "mom_vs_ce", spec)


def test_register_writes_all_or_nothing(plan_of):
    plan, spec = plan_of()
    folder = spec.parent / "registered"
    with pytest.raises(UserInputError, match="best_other"):
        register_claims(plan, spec, ["mom_vs_ce", "mom_vs_best"])
    assert not folder.exists()
    done = register_claims(plan, spec, ["mom_vs_ce"])
    assert [d.written for d in done] == [True] and (folder / "mom_vs_ce.yaml").is_file()
    assert [d.written for d in register_claims(plan, spec, ["mom_vs_ce"])] == [False]  # the same design again
    assert set(load_registrations(folder)) == {"mom_vs_ce"}


def test_a_new_design_needs_replace_and_fresh_units(plan_of):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    path = spec.parent / "registered" / "mom_vs_ce.yaml"
    text = path.read_text(encoding="utf-8")
    overlapping, _ = plan_of(SPEC.replace("[5, 6, 7, 8, 9, 10, 11, 12, 13]", "[13, 14, 15, 16, 17, 18, 19, 20, 21]"))
    with pytest.raises(UserInputError, match="already registered with another design"):
        register_claims(overlapping, spec, ["mom_vs_ce"])
    with pytest.raises(UserInputError, match=r"already holds seeds \[13\] of claim mom_vs_ce"):
        register_claims(overlapping, spec, ["mom_vs_ce"], replace=True)
    assert path.read_text(encoding="utf-8") == text
    fresh, _ = plan_of(SPEC.replace("[5, 6, 7, 8, 9, 10, 11, 12, 13]", "[14, 15, 16, 17, 18, 19, 20, 21, 22]"))
    assert register_claims(fresh, spec, ["mom_vs_ce"], replace=True)[0].written
    assert read_registration(path).units == tuple(range(14, 23))


def test_an_edited_file_is_not_intact_and_not_served(plan_of):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    assert served_registrations(plan, spec)[0] == {"mom_vs_ce": registration_document(plan, "mom_vs_ce", spec)["digest"]}
    path = spec.parent / "registered" / "mom_vs_ce.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("looks: [3, 6, 9]", "looks: [9]"), encoding="utf-8")
    assert not read_registration(path).intact
    served, notes = served_registrations(plan, spec)
    assert served == {} and "was edited after it was written" in notes[0]


def test_a_plan_with_another_design_serves_no_registration(plan_of):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    other, _ = plan_of(SPEC.replace("num_samples: 6", "num_samples: 8"))
    served, notes = served_registrations(other, spec)
    assert served == {} and "this plan's design differs from" in notes[0]


@pytest.mark.parametrize("text, message", [
    ("claim: {id: x}\n", "not a registration: expected the keys"),
    ("[1, 2]\n", "not a registration"),
    (": :\n", "cannot read a registration"),
])
def test_a_file_that_is_no_registration_is_named(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserInputError, match=message) as error:
        load_registrations(tmp_path)
    assert error.value.problems[0].source == str(path)


def test_a_file_named_for_another_claim_is_refused(plan_of):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    folder = spec.parent / "registered"
    (folder / "mom_vs_ce.yaml").rename(folder / "other.yaml")
    with pytest.raises(UserInputError, match="name it mom_vs_ce.yaml"):
        load_registrations(folder)


def test_the_registered_design_is_the_verdicts_boundaries(plan_of, tmp_path):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    registration = load_registrations(spec.parent / "registered")["mom_vs_ce"]
    design = registered_design(registration)
    assert design.looks == (3, 6, 9) and design.alpha == pytest.approx(0.025) and design.spending == "pocock"


def test_units_a_replaced_registration_held_stay_held(plan_of, tmp_path):
    def commit(message):
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@example.org"}
        for command in (["add", "specs"], ["commit", "-q", "-m", message]):
            subprocess.run(["git", "-C", str(tmp_path), *command], check=True, capture_output=True, env=env)

    subprocess.run(["git", "-C", str(tmp_path), "init", "-q"], check=True, capture_output=True)
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])  # seeds 5-13
    commit("first")
    second, _ = plan_of(SPEC.replace("[5, 6, 7, 8, 9, 10, 11, 12, 13]", "[14, 15, 16, 17, 18, 19, 20, 21, 22]"))
    register_claims(second, spec, ["mom_vs_ce"], replace=True)
    commit("second")
    with pytest.raises(UserInputError, match=r"\(or its git history\) already holds seeds \[5, 6, 7, 8, 9, 10, 11, 12, 13\]"):
        register_claims(plan, spec, ["mom_vs_ce"], replace=True)  # the first study's seeds again


def test_a_setting_added_to_nerplat_after_registering_leaves_it_served(plan_of, monkeypatch):
    """A config field nerplat gains later (its default null, empty or false) changes the digest but not
    the design: the run still serves the registration, under the registered digest."""
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])
    registered = load_registrations(spec.parent / "registered")["mom_vs_ce"].digest

    def with_new_field(*args, **kwargs):
        document = registration_document(*args, **kwargs)
        document["design"]["arms"]["method"]["fixed"]["dataset"]["split"] = None
        return document | {"digest": digest_of({k: v for k, v in document.items() if k != "digest"})}

    monkeypatch.setattr(registration_module, "registration_document", with_new_field)
    assert registration_module.served_registrations(plan, spec)[0] == {"mom_vs_ce": registered}


@pytest.mark.parametrize("change", [
    lambda fixed: fixed["dataset"].__setitem__("split", {"dev": 0.1}),  # a new field given a value
    lambda fixed: fixed["train"].__setitem__("epochs", 5),               # a registered value changed
    lambda fixed: fixed["train"].pop("epochs"),                          # a registered value gone
])
def test_a_new_or_changed_value_is_not_served(plan_of, monkeypatch, change):
    plan, spec = plan_of()
    register_claims(plan, spec, ["mom_vs_ce"])

    def changed(*args, **kwargs):
        document = registration_document(*args, **kwargs)
        change(document["design"]["arms"]["method"]["fixed"])
        return document | {"digest": digest_of({k: v for k, v in document.items() if k != "digest"})}

    monkeypatch.setattr(registration_module, "registration_document", changed)
    served, notes = registration_module.served_registrations(plan, spec)
    assert served == {} and "this plan's design differs from" in notes[0]


def test_a_registration_from_before_the_selection_metric_holds_the_default_of_its_time(plan_of, monkeypatch):
    """Registrations written before designs recorded `selection_metric` stay served while the runs
    select on what they selected on then, and are no longer served when that default changes."""
    untuned = SPEC.replace("tune: {num_samples: 6}\n", "").replace("{loguniform: [1.0e-5, 1.0e-3]}", "1.0e-4")
    plan, spec = plan_of(untuned.replace("{uniform: [0.0, 1.0]}", "0.5"))
    (done,) = register_claims(plan, spec, ["mom_vs_ce"])
    document = yaml.safe_load(done.path.read_text(encoding="utf-8"))
    del document["design"]["selection_metric"]
    document["digest"] = digest_of({k: v for k, v in document.items() if k != "digest"})
    done.path.write_text(registration_text(document), encoding="utf-8")
    assert registration_module.served_registrations(plan, spec)[0] == {"mom_vs_ce": document["digest"]}
    monkeypatch.setattr(plan_model, "DEFAULT_TUNE_METRIC", "dev_macro_f1")
    served, notes = registration_module.served_registrations(plan, spec)
    assert served == {} and "this plan's design differs from" in notes[0]
