"""Evaluation the way the papers report it, from gold and predicted IOB2 tags per sentence.

Span metrics are seqeval's strict IOB2 matching, asked for explicitly (`mode="strict"`,
`scheme=IOB2`: without the scheme seqeval silently falls back to lenient conlleval matching). A span
starts at B-X and runs over the following I-X; an I-X that does not continue a span of type X starts
nothing, and a predicted span counts only if its type and both boundaries equal a gold span's. Macro
averages are over the types found in gold or predictions (seqeval's definition), so a type that is
only ever predicted counts as a zero. A division by zero (no gold or no predicted span) gives 0.

Beside them, the micro scores in seqeval's default mode (conlleval's lenient matching, where an I-X
after anything but B-X or I-X starts a span): what a paper citing seqeval without naming a mode
reports. The two differ most for decoders that can leave a span without its B-X (the two-task
heads of Nguyen et al. 2023a).

Keys (the scalar ones are `METRIC_NAMES`; a run logs them as `<split>_<name>`, `nerplat.track.schema`):
- micro_precision, micro_recall, micro_f1, macro_precision, macro_recall, macro_f1
- conlleval_micro_precision, conlleval_micro_recall, conlleval_micro_f1 (lenient, seqeval's default)
- type_<TYPE>_precision, type_<TYPE>_recall, type_<TYPE>_f1, type_<TYPE>_support (gold spans)
- token_macro_f1: F1 of each word-level label (O, B-X, I-X, ...) as a class, averaged without
  weights over the labels that occur in gold or predictions, O included: the papers' token-level
  view of NER as multi-class classification (Nemoto et al. 2024, sec. 3; sklearn's `f1_score(average="macro")`).
- word_accuracy: share of words whose tag is right; sentence_accuracy: share of sentences whose
  tags are all right (Nemoto et al. 2024, Fig. 2, Table 7).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

# A two-task head's metrics at its configured threshold, beside those at the thresholds chosen on dev:
# `<split>_fixed_threshold_<name>` (`nerplat.trial.thresholds`).
FIXED_THRESHOLD_INFIX = "fixed_threshold_"

# The scalar keys of every evaluation, besides type_<TYPE>_*: what a spec's tune.metric may name
# (`dev_<name>`) and what the replicate phase averages.
METRIC_NAMES = (
    "micro_precision",
    "micro_recall",
    "micro_f1",
    "macro_precision",
    "macro_recall",
    "macro_f1",
    "conlleval_micro_precision",
    "conlleval_micro_recall",
    "conlleval_micro_f1",
    "token_macro_f1",
    "sentence_accuracy",
    "word_accuracy",
)


def evaluate_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
    return {**span_scores(gold, pred), **token_scores(gold, pred)}


def span_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro, macro and per-type strict IOB2 span precision, recall and F1, and the lenient micro
    scores (seqeval)."""
    return {**_strict_span_scores(gold, pred), **_lenient_micro_scores(gold, pred)}


def _lenient_micro_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """One pass of seqeval's default (lenient) matching: its precision_score, recall_score and
    f1_score would each extract every span again, on every dev evaluation."""
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

    precision, recall, f1, _ = precision_recall_fscore_support(
        [list(s) for s in gold], [list(s) for s in pred], average="micro", zero_division=0
    )
    return {
        "conlleval_micro_precision": float(precision), "conlleval_micro_recall": float(recall), "conlleval_micro_f1": float(f1)
    }


def _strict_span_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    if not any(tag.startswith("B") for sentences in (gold, pred) for s in sentences for tag in s):
        # No B anywhere: every strict score is a division by zero (seqeval would give NaN macro scores).
        return {f"{a}_{n}": 0.0 for a in ("micro", "macro") for n in ("precision", "recall", "f1")}
    report = classification_report(
        [list(s) for s in gold],
        [list(s) for s in pred],
        mode="strict",
        scheme=IOB2,
        output_dict=True,
        zero_division=0,
    )
    scores: dict[str, float] = {}
    for average in ("micro", "macro"):
        row = report.get(f"{average} avg", {})
        for name in ("precision", "recall", "f1"):
            scores[f"{average}_{name}"] = float(row.get(_seqeval_name(name), 0.0))
    for entity_type, row in report.items():
        if entity_type.endswith(" avg"):
            continue
        for name in ("precision", "recall", "f1", "support"):
            scores[f"type_{entity_type}_{name}"] = float(row[_seqeval_name(name)])
    return scores


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Token-level macro F1 over labels, word accuracy and sentence accuracy."""
    true_positive, gold_count, pred_count = Counter(), Counter(), Counter()
    words = correct_words = correct_sentences = 0
    for g_sentence, p_sentence in zip(gold, pred):
        sentence_correct = True
        for g, p in zip(g_sentence, p_sentence):
            gold_count[g] += 1
            pred_count[p] += 1
            if g == p:
                true_positive[g] += 1
                correct_words += 1
            else:
                sentence_correct = False
        words += len(g_sentence)
        correct_sentences += sentence_correct
    labels = gold_count.keys() | pred_count.keys()
    f1s = [2 * true_positive[label] / (gold_count[label] + pred_count[label]) for label in labels]
    return {
        "token_macro_f1": sum(f1s) / len(f1s) if f1s else 0.0,
        "word_accuracy": correct_words / words if words else 0.0,
        "sentence_accuracy": correct_sentences / len(gold) if gold else 0.0,
    }


def _seqeval_name(name: str) -> str:
    return {"f1": "f1-score"}.get(name, name)
