"""`claims:` and `replicate.sequential`: names resolved against the spec, every problem located."""

import pytest

from nerplat.spec.validate import load_spec
from spec_testing import spec_problems

SPEC = (
    "experiment: t\ndataset: conll2003\n"
    "samplers: [[], [{fraction: {f: 0.5}}]]\n"
    "methods:\n"
    "  ce: {loss: ce}\n"
    "  mom: {loss: mom, lambda: 0.2, samplers: [full]}\n"
)


def test_claims_and_a_sequential_design_compile_into_the_plan(catalog, write_spec):
    text = SPEC + (
        "replicate: {sequential: {max_seeds: 6, look_every: 2}}\n"
        "claims:\n"
        "  - {id: a, paper: 'Nemoto et al. 2024', source: Table 3, method: mom, partner: ce, metric: macro_f1, effect: 0.0033}\n"
        "  - {id: b, paper: x, source: Fig. 2, method: ce, partner: ce, partner_sampler: full, where: {sampler: fraction-0.5},"
        " metric: micro_f1, direction: better}\n"
    )
    validated = load_spec(write_spec(text), catalog)
    assert [c.id for c in validated.spec.claims] == ["a", "b"]
    assert validated.seeds == {"full": tuple(range(6)), "fraction-0.5": tuple(range(6))}
    assert validated.spec.claims[1].side == 1 and validated.spec.replicate.sequential.spending == "obrien_fleming"


@pytest.mark.parametrize(
    ("claim", "path", "message"),
    [
        ("{id: a, paper: x, source: Table 1, method: mon, partner: ce, metric: micro_f1, effect: 0.1}", "claims[0].method",
         "unknown method 'mon'; did you mean 'mom'?"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: bst, metric: micro_f1, effect: 0.1}", "claims[0].partner",
         "or best_other"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: mom, metric: micro_f1, effect: 0.1}", "claims[0].partner",
         "with itself tests nothing"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1, where: {sampler: nope}}",
         "claims[0].where.sampler", "unknown sampler setting 'nope'"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1,"
         " where: {sampler: fraction-0.5}}", "claims[0]", "never run with the same sampler setting"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: f1, effect: 0.1}", "claims[0].metric", "micro_f1"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: true}", "claims[0].effect",
         "not true"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1}", "claims[0]", "or only its direction"),
        ("{id: a, paper: x, method: mom, partner: ce, metric: micro_f1, effect: 0.1}", "claims[0].source",
         "missing required key 'source'"),
        ("{id: a, paper: x, source: ' ', method: mom, partner: ce, metric: micro_f1, effect: 0.1}", "claims[0].source",
         "a table ('Table 3')"),
        ("{id: a, paper: x, source: sec. V, kind: equivalent, method: mom, partner: ce, metric: micro_f1}", "claims[0]",
         "needs a margin"),
        ("{id: a, paper: x, source: sec. V, kind: equivalent, margin: 0.01, method: mom, partner: ce, metric: micro_f1,"
         " direction: better}", "claims[0]", "has no direction"),
        ("{id: a, paper: x, source: Table 1, margin: 0.01, method: mom, partner: ce, metric: micro_f1, effect: 0.1}",
         "claims[0]", "margin is the equivalence margin"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.0}", "claims[0]",
         "give kind equivalent"),
        ("{id: a, paper: x, source: Fig. 2, method: mom, partner: ce, metric: micro_f1, direction: better, paper_se: 0.01}",
         "claims[0]", "give the effect too"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1, paper_se: 0}",
         "claims[0].paper_se", "greater than 0"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 5}", "claims[0].effect",
         "5 is beyond ±1, but F1 and the other metrics are fractions (0.85, not 85): write 2 points as 0.02"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: -1e308}", "claims[0].effect",
         "is beyond ±1"),
        ("{id: a, paper: x, source: sec. V, kind: equivalent, margin: 2, method: mom, partner: ce, metric: micro_f1}",
         "claims[0].margin", "is beyond ±1"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1, paper_se: 1.5}",
         "claims[0].paper_se", "is beyond ±1"),
        ("{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1, pilot_sd: 3}",
         "claims[0].pilot_sd", "is beyond ±1"),
        ("{id: a, paper: x, source: Table 1, method: ce, partner: ce, partner_sampler: nope, where: {sampler: full},"
         " metric: micro_f1, effect: 0.1}", "claims[0].partner_sampler", "unknown sampler setting 'nope'"),
    ],
)
def test_a_bad_claim_is_located(catalog, write_spec, claim, path, message):
    found = spec_problems(catalog, write_spec, SPEC + f"claims:\n  - {claim}\n")
    assert any(p == path and line == 8 and message in text for p, line, text in found), found


def test_an_equivalence_claim_and_a_token_level_metric_compile(catalog, write_spec):
    text = SPEC + (
        "claims:\n"
        "  - {id: a, paper: 'Nguyen et al. 2023a', source: \"sec. V.B, 'on par'\", kind: equivalent, margin: 0.01, effect: 0.002,"
        " method: mom, partner: ce, metric: token_macro_f1, comparable: '', pilot_sd: 0.007}\n"
    )
    (claim,) = load_spec(write_spec(text), catalog).spec.claims
    assert (claim.kind, claim.margin, claim.side, claim.metric, claim.pilot_sd) == (
        "equivalent", 0.01, 0, "token_macro_f1", 0.007
    )


def test_claim_ids_are_unique_and_seeds_agree_with_the_design(catalog, write_spec):
    claim = "{id: a, paper: x, source: Table 1, method: mom, partner: ce, metric: micro_f1, effect: 0.1}"
    found = spec_problems(catalog, write_spec, SPEC + f"claims:\n  - {claim}\n  - {claim}\n")
    assert ("claims[1].id", 9, "claim id 'a' is used twice: give each claim its own id") in found
    found = spec_problems(catalog, write_spec, SPEC + "replicate: {seeds: 3, sequential: {max_seeds: 6, look_every: 2}}\n")
    assert [(p, line) for p, line, _ in found] == [("replicate.seeds", 7)], found
    assert "no sampler setting is partitioned" in found[0][2] and "drop seeds, set it to max_seeds (6)" in found[0][2]
    found = spec_problems(catalog, write_spec, SPEC + "replicate: {seeds: [6, 7], sequential: {max_seeds: 6, look_every: 2}}\n")
    assert [p for p, _, _ in found] == ["replicate.seeds"] and "or list 6 seeds" in found[0][2]


def test_a_sequential_design_runs_the_seeds_it_lists_for_new_draws(catalog, write_spec):
    text = SPEC + "replicate: {seeds: [6, 7, 8, 9], sequential: {max_seeds: 4, look_every: 2}}\n"
    validated = load_spec(write_spec(text), catalog)
    assert validated.seeds == {"full": (6, 7, 8, 9), "fraction-0.5": (6, 7, 8, 9)}


TWO_TASK = (
    "experiment: t\ndataset: conll2003\nsamplers: [[untyped]]\n"
    "methods:\n  ce: {loss: ce}\n  auc_2t: {loss: auc_2t}\n  auc_2t_lambda1: {loss: auc_2t, lambda: 1}\n"
)


def test_a_claim_at_the_fixed_threshold_compares_two_task_heads(catalog, write_spec):
    text = TWO_TASK + (
        "claims:\n  - {id: a, paper: x, source: Table 2, method: auc_2t_lambda1, partner: auc_2t,"
        " metric: fixed_threshold_conlleval_micro_f1, effect: -0.7}\n"
    )
    assert load_spec(write_spec(text), catalog).spec.claims[0].metric == "fixed_threshold_conlleval_micro_f1"


def test_a_claim_at_the_fixed_threshold_against_a_head_without_one_is_refused(catalog, write_spec):
    text = TWO_TASK + (
        "claims:\n  - {id: a, paper: x, source: Table 2, method: auc_2t, partner: ce,"
        " metric: fixed_threshold_conlleval_micro_f1, effect: 0.2}\n"
    )
    [(path, line, message)] = spec_problems(catalog, write_spec, text)
    assert path == "claims[0].metric" and line == 9 and "ce's head softmax has none" in message
