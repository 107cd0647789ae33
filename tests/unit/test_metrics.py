import random

import pytest

from nerplat.metrics import METRIC_NAMES, evaluate_tags

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def strict_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Spans by hand: B-X opens a span of type X that runs over the I-X right after it."""
    spans, i = set(), 0
    while i < len(tags):
        if tags[i].startswith("B-"):
            kind, end = tags[i][2:], i + 1
            while end < len(tags) and tags[end] == f"I-{kind}":
                end += 1
            spans.add((kind, i, end))
            i = end
        else:
            i += 1
    return spans


def oracle_scores(gold, pred):
    gold_spans = {(s, *span) for s, tags in enumerate(gold) for span in strict_spans(tags)}
    pred_spans = {(s, *span) for s, tags in enumerate(pred) for span in strict_spans(tags)}

    def prf(g, p):
        tp = len(g & p)
        precision = tp / len(p) if p else 0.0
        recall = tp / len(g) if g else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1

    scores = dict(zip(("micro_precision", "micro_recall", "micro_f1"), prf(gold_spans, pred_spans)))
    types = sorted({span[1] for span in gold_spans | pred_spans})
    per_type = []
    for kind in types:
        g = {s for s in gold_spans if s[1] == kind}
        p = {s for s in pred_spans if s[1] == kind}
        per_type.append(prf(g, p))
        for name, value in zip(("precision", "recall", "f1"), per_type[-1]):
            scores[f"type_{kind}_{name}"] = value
        scores[f"type_{kind}_support"] = float(len(g))
    for k, name in enumerate(("precision", "recall", "f1")):
        scores[f"macro_{name}"] = sum(t[k] for t in per_type) / len(per_type) if per_type else 0.0
    return scores


def random_tags(rng: random.Random, length: int) -> list[str]:
    """Mostly O, with well-formed spans and malformed ones (I- without B-, type switches)."""
    return [rng.choice(TAGS) if rng.random() < 0.5 else "O" for _ in range(length)]


def test_span_scores_match_an_independent_strict_matcher_on_random_and_malformed_tags():
    rng = random.Random(7)
    for _ in range(200):
        gold = [random_tags(rng, rng.randint(0, 9)) for _ in range(rng.randint(1, 5))]
        pred = [[t if rng.random() < 0.6 else rng.choice(TAGS) for t in sentence] for sentence in gold]
        scores = evaluate_tags(gold, pred)
        expected = oracle_scores(gold, pred)
        span_keys = {k for k in scores if k.startswith(("micro_", "macro_", "type_"))}
        averages = {f"{a}_{n}" for a in ("micro", "macro") for n in ("precision", "recall", "f1")}
        assert span_keys == set(expected) | averages
        for key, value in expected.items():
            assert scores[key] == pytest.approx(value), (key, gold, pred)


def test_strict_mode_is_not_conlleval_lenient():
    # conlleval would count "I-PER I-PER" as a PER span and a match; strict IOB2 does not.
    gold = [["I-PER", "I-PER", "O", "B-LOC", "I-PER"]]
    pred = [["I-PER", "I-PER", "O", "B-LOC", "O"]]
    scores = evaluate_tags(gold, pred)
    assert scores["micro_precision"] == 1.0 and scores["micro_recall"] == 1.0  # only B-LOC is a span
    assert "type_PER_f1" not in scores
    assert scores["type_LOC_support"] == 1.0


def test_token_macro_f1_matches_sklearn_over_gold_and_predicted_labels_with_o():
    from sklearn.metrics import f1_score

    rng = random.Random(3)
    gold = [random_tags(rng, rng.randint(1, 8)) for _ in range(30)]
    pred = [[t if rng.random() < 0.7 else rng.choice(TAGS[:5]) for t in s] for s in gold]
    flat_gold = [t for s in gold for t in s]
    flat_pred = [t for s in pred for t in s]
    expected = f1_score(flat_gold, flat_pred, average="macro", labels=sorted(set(flat_gold) | set(flat_pred)))
    assert evaluate_tags(gold, pred)["token_macro_f1"] == pytest.approx(expected)


def test_accuracies_count_words_and_whole_sentences():
    gold = [["B-PER", "O"], ["O"], ["B-LOC", "I-LOC", "O"]]
    pred = [["B-PER", "O"], ["B-PER"], ["B-LOC", "O", "O"]]
    scores = evaluate_tags(gold, pred)
    assert scores["word_accuracy"] == pytest.approx(4 / 6)
    assert scores["sentence_accuracy"] == pytest.approx(1 / 3)


def test_no_spans_anywhere_scores_zero_not_nan():
    scores = evaluate_tags([["O", "O"]], [["O", "I-PER"]])
    assert scores["micro_f1"] == 0.0 and scores["macro_f1"] == 0.0
    assert scores["word_accuracy"] == 0.5


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="sentence 0"):
        evaluate_tags([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="gold sentences"):
        evaluate_tags([["O"]], [])


def test_conlleval_scores_count_a_span_left_without_its_beginning_and_strict_ones_do_not():
    gold = [["B-ENT", "I-ENT", "O", "B-ENT"]]
    pred = [["O", "I-ENT", "O", "B-ENT"]]  # the first span lost its B: lenient matching starts it at the I
    scores = evaluate_tags(gold, pred)
    assert scores["micro_precision"] == pytest.approx(1 / 1) and scores["micro_recall"] == pytest.approx(1 / 2)
    assert scores["conlleval_micro_precision"] == pytest.approx(1 / 2)  # (1, 2) is a span, but not the gold (0, 2)
    assert scores["conlleval_micro_recall"] == pytest.approx(1 / 2)
    exact = evaluate_tags(gold, [["B-ENT", "I-ENT", "O", "I-ENT"]])  # an orphan I matching a one-word gold span
    assert exact["conlleval_micro_f1"] == pytest.approx(1.0) and exact["micro_f1"] == pytest.approx(2 / 3)
    nothing = evaluate_tags([["O", "O"]], [["O", "I-ENT"]])  # no B anywhere: lenient still sees the predicted span
    assert nothing["micro_f1"] == 0.0 and nothing["conlleval_micro_precision"] == 0.0


@pytest.mark.parametrize("pred", [[["B-PER", "I-PER", "O"]], [["O", "O", "O"]]])
def test_the_metric_names_are_the_scalar_keys_of_every_evaluation(pred):
    """What a spec's tune.metric may name and the replicate phase averages is what an evaluation gives,
    with spans (its per-type keys aside) and without any."""
    scores = evaluate_tags([["B-PER", "I-PER", "O"]], pred)
    assert sorted(key for key in scores if not key.startswith("type_")) == sorted(METRIC_NAMES)
