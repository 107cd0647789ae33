"""New sentences are windowed, decoded and joined as a trial evaluates them."""

from __future__ import annotations

import pytest
import torch

from nerplat.data.corpus import Sentence
from nerplat.metrics import evaluate_tags
from nerplat.serving.bundle import load_bundle
from nerplat.serving.predictor import Span, spans_of, tag_sentences
from nerplat.trial.features import tokenize_sentences
from nerplat.trial.predict import Inference, predict
from tiny_taggers import SENTENCES


def loop_tags(bundle, sentences):
    """What the trial loop's own `predict` decodes for these sentences."""
    blank = [Sentence(tuple(s), ("O",) * len(s)) for s in sentences]
    features = tokenize_sentences(blank, bundle.tokenizer, bundle.encoder, bundle.labels)
    return [
        [bundle.labels[i] for i in ids]
        for ids in predict(bundle.tagger, features, Inference(torch.device("cpu"), batch_size=8))
    ]


@pytest.mark.parametrize("head", ["softmax", "crf", "two_task"])
def test_tags_equal_the_trial_loop_predictions_for_every_head(head, request):
    bundle = load_bundle(request.getfixturevalue(f"{head}_dir"))
    long_sentence = ["Peter", "Blackburn", "visited", "Brussels", "on", "Monday", "."] * 12  # > 48 sub-tokens: windowed
    sentences = [*SENTENCES, long_sentence]
    tagged = tag_sentences(bundle, sentences, batch_size=3)
    assert [t.tags for t in tagged] == loop_tags(bundle, sentences)
    assert [t.words for t in tagged] == sentences
    assert tagged[2].tags == [] and tagged[2].spans == []
    assert len(tagged[-1].tags) == len(long_sentence)


def test_softmax_scores_are_the_probability_of_the_chosen_label(softmax_bundle):
    tagged = tag_sentences(softmax_bundle, SENTENCES)
    for sentence in tagged:
        assert len(sentence.scores) == len(sentence.words)
        assert all(1 / len(softmax_bundle.labels) <= s <= 1 for s in sentence.scores)  # argmax of a softmax
        for span in sentence.spans:
            assert span.score == pytest.approx(sum(sentence.scores[span.start : span.end]) / (span.end - span.start))


def test_crf_heads_give_no_scores(crf_dir):
    tagged = tag_sentences(load_bundle(crf_dir), SENTENCES)
    assert all(t.scores is None for t in tagged)
    assert all(span.score is None for t in tagged for span in t.spans)


def test_two_task_decoding_uses_the_saved_thresholds(two_task_dir):
    bundle = load_bundle(two_task_dir)
    bundle.tagger.head.set_thresholds(0.999999, 0.5)  # nothing is an entity
    assert all(set(t.tags) <= {"O"} for t in tag_sentences(bundle, SENTENCES))
    bundle.tagger.head.set_thresholds(1e-6, 1e-6)  # every word begins an entity
    assert all(set(t.tags) == {"B-ENT"} for t in tag_sentences(bundle, SENTENCES) if t.tags)


def test_spans_are_the_strict_iob2_spans_evaluate_scores():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "B-ORG", "B-ORG", "I-MISC", "I-MISC"]
    spans = spans_of(tags, [0.5, 0.7, 0.9, 0.4, 0.8, 0.6, 0.2, 0.3])
    assert [(s.type, s.start, s.end) for s in spans] == [("PER", 0, 2), ("ORG", 4, 5), ("ORG", 5, 6)]
    assert spans[0].score == pytest.approx(0.6)
    assert spans_of(["B-X"], None) == [Span("X", 0, 1, None)]
    scored = evaluate_tags([tags], [tags])  # the spans are those the metrics count, no more
    assert len(spans) == sum(int(v) for k, v in scored.items() if k.startswith("type_") and k.endswith("_support"))


def test_lenient_spans_follow_the_conlleval_convention_on_request():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "B-ORG", "B-ORG", "I-MISC"]
    spans = spans_of(tags, [0.5, 0.7, 0.9, 0.4, 0.8, 0.6, 0.2], "lenient")
    assert [(s.type, s.start, s.end) for s in spans] == [
        ("PER", 0, 2), ("LOC", 3, 4), ("ORG", 4, 5), ("ORG", 5, 6), ("MISC", 6, 7)
    ]


def test_tagging_batches_are_bounded_in_padded_sub_tokens_as_a_cpu_evaluation(softmax_bundle):
    import dataclasses

    from nerplat.trial.predict import CPU_EVAL_BATCH_TOKENS

    shapes = []
    real_tagger = softmax_bundle.tagger

    class Recording:
        def __call__(self, batch):
            shapes.append(tuple(batch.input_ids.shape))
            return real_tagger(batch)

        def decode(self, output):
            return real_tagger.decode(output)

    recording = dataclasses.replace(softmax_bundle, tagger=Recording())
    long_sentence = ["Peter", "Blackburn", "visited", "Brussels", "on", "Monday", "."] * 6
    tagged = tag_sentences(recording, [long_sentence] * 80, batch_size=256)
    assert len(tagged) == 80 and len(shapes) > 1
    assert all(rows * width <= CPU_EVAL_BATCH_TOKENS or rows == 1 for rows, width in shapes)
