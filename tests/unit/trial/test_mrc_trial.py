"""A whole trial with the mrc head: the loop trains on MRC examples and evaluates typed spans."""

from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.trial.loop import run_trial


def test_an_mrc_trial_trains_and_reports_span_metrics_on_dev():
    config = TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="low_resource", params={"size": 16, "partitions": 1}),),
        encoder=EncoderSettings(name="tiny", max_length=64, window_stride=8),
        head=Component(name="mrc"),
        objective=Component(name="mrc_mom", params={"lambda": 0.5}),
        train=TrainSettings(epochs=1, batch_size=8, lr=1e-3, dev_subset=20, threads=1),
        eval_split=None,  # the 20 dev sentences are joined from their windows and scored each epoch
    )
    result = run_trial(config)
    assert result.train_sentences == 16 and result.timings.train_tokens > 0
    (evaluation,) = result.evaluations
    assert {"micro_f1", "macro_f1", "word_accuracy"} <= set(evaluation.dev)
    assert 0.0 < evaluation.dev["word_accuracy"] <= 1.0
