"""Evaluation forward passes: in the trial's arithmetic, scores read in fp32, every sentence predicted once."""

from __future__ import annotations

import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings
from nerplat.data.corpora import load_corpus
from nerplat.models.encoders import load_encoder
from nerplat.models.tagger import build_tagger
from nerplat.trial.batching import iterate_batches
from nerplat.trial.features import featurize
from nerplat.trial.predict import CPU_EVAL_BATCH_TOKENS, Inference, evaluate_sentences, head_output, predict

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def scored():
    corpus = load_corpus(DatasetRef(name="conll2003"))
    labels, sentences = corpus.labels(), corpus.dev[:40]
    settings = EncoderSettings(name="tiny", max_length=48)
    encoder = load_encoder(settings)
    features = featurize(sentences, encoder.tokenizer, settings, labels)
    torch.manual_seed(0)
    return {
        head: (build_tagger(encoder, Component(name=head), labels).eval(), features, sentences, labels)
        for head in ("softmax", "crf")
    }


@pytest.mark.parametrize("head", ["softmax", "crf"])
def test_a_bf16_forward_pass_hands_decoding_fp32_scores_close_to_fp32s(scored, head):
    tagger, features, _, _ = scored[head]
    batch = next(iterate_batches(features, 16, seed=None))
    with torch.inference_mode():
        exact, rounded = head_output(tagger, batch, "fp32", CPU), head_output(tagger, batch, "bf16", CPU)
    assert exact.scores.dtype == rounded.scores.dtype == torch.float32
    assert not torch.equal(exact.scores, rounded.scores)  # the products did run in bf16
    assert torch.allclose(exact.scores, rounded.scores, atol=0.1)
    assert torch.equal(exact.mask, rounded.mask)


def test_a_bf16_evaluation_scores_every_sentence_and_mostly_agrees_with_fp32(scored):
    tagger, features, sentences, labels = scored["softmax"]
    exact, rounded = (predict(tagger, features, Inference(CPU, precision, 8)) for precision in ("fp32", "bf16"))
    assert [len(s) for s in rounded] == [len(s.tokens) for s in sentences]
    words = sum(len(s) for s in exact)
    assert sum(a != b for e, r in zip(exact, rounded) for a, b in zip(e, r)) <= 0.05 * words
    metrics, predicted = evaluate_sentences(tagger, features, tuple(sentences), labels, Inference(CPU, "bf16", 64))
    assert 0.0 <= metrics["micro_f1"] <= 1.0 and len(predicted) == len(sentences)


def test_predictions_do_not_depend_on_the_evaluation_batch_size(scored):
    """Batches are sorted by length, so a larger batch only pads differently; in fp32 the labels are the same."""
    tagger, features, _, _ = scored["softmax"]
    assert predict(tagger, features, Inference(CPU, batch_size=4)) == predict(tagger, features, Inference(CPU, batch_size=256))


@pytest.mark.parametrize("head", ["softmax", "crf"])
def test_a_padded_size_bound_cuts_the_batches_and_predicts_the_same_labels(scored, head):
    tagger, features, _, _ = scored[head]
    lengths = features.token_counts()
    bounded = list(features.batches(256, seed=None, max_tokens=4 * int(lengths.max())))
    assert len(bounded) > 1 and all(b.input_ids.numel() <= 4 * int(lengths.max()) or len(b.windows) == 1 for b in bounded)
    assert predict(tagger, features, Inference(CPU, batch_size=256, max_tokens=4 * int(lengths.max()))) == predict(
        tagger, features, Inference(CPU, batch_size=256)
    )


def test_inference_on_a_cpu_bounds_the_padded_size_and_elsewhere_only_the_window_count():
    on_cpu = Inference.on(CPU, "bf16", 64)
    assert (on_cpu.precision, on_cpu.batch_size, on_cpu.max_tokens) == ("bf16", 64, CPU_EVAL_BATCH_TOKENS)
    assert Inference.on(torch.device("cuda"), "bf16", 64).max_tokens is None
