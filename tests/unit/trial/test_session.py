"""Each stage of a `TrialSession` alone, with the tiny encoder on real CoNLL-2003 sentences."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.errors import UserInputError
from nerplat.models.packed_dropout import ATTENTION, PackedDropout
from nerplat.trial.results import Evaluation, Thresholds, Timings, TrialResult
from nerplat.trial.session import CHECKPOINT_FILE, TrialSession, load_checkpoint


def tiny_config(objective: str = "ce", head: str = "softmax", **train) -> TrialConfig:
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="untyped"),) * (head == "two_task")
        + (Component(name="low_resource", params={"size": 16, "partitions": 1}),),
        encoder=EncoderSettings(name="tiny", max_length=48),
        head=Component(name=head),
        objective=Component(name=objective),
        train=TrainSettings(**{"epochs": 2, "batch_size": 8, "lr": 1e-3, "dev_subset": 24, "threads": 1, **train}),
        eval_split="dev",
    )


def started(config: TrialConfig) -> TrialSession:
    session = TrialSession(config)
    session.setup()
    return session


def test_train_epoch_advances_the_epoch_and_returns_a_finite_loss():
    session = started(tiny_config())
    assert list(session.remaining_epochs()) == [1, 2]
    loss = session.train_epoch(1)
    assert math.isfinite(loss) and session.epoch == 1 and session.last_loss == loss
    assert list(session.remaining_epochs()) == [2]
    assert session.timings.first_step_unix > 0 and session.timings.train_tokens > 0


def test_a_cpu_trial_trains_with_packed_dropout_masks():
    tagger = started(tiny_config()).tagger
    assert not any(type(module) is torch.nn.Dropout for module in tagger.modules())
    assert any(isinstance(module, PackedDropout) for module in tagger.modules())
    assert tagger.encoder.config._attn_implementation == ATTENTION


def test_evaluate_records_the_best_evaluation_and_its_weights():
    session = started(tiny_config())
    session.train_epoch(1)
    evaluation = session.evaluate()
    assert evaluation.epoch == 1 and evaluation.epochs == 2
    assert evaluation.dev_best == evaluation.dev and session.best.epoch == 1
    assert session.best.value == evaluation.dev["micro_f1"]
    assert all(tensor.device.type == "cpu" for tensor in session.best.state.values())
    assert session.evaluations == [evaluation]


def test_finish_without_an_evaluation_selects_the_last_epoch():
    session = started(tiny_config(epochs=1))
    session.train_epoch(1)
    result = session.finish()
    assert result.selected_epoch == 1 and result.evaluations == []
    assert 0.0 <= result.metrics["dev_micro_f1"] <= 1.0 and len(result.predictions) > 0


def test_setup_leaves_the_labels_without_training_words_out_of_the_ova_heads_argmax():
    session = started(tiny_config(objective="ova_auc", head="ova"))
    counts = dict(zip(session.data.labels, session.tagger.head.trained_labels.tolist()))
    assert counts["I-MISC"] is False  # the 16-sentence draw holds no I-MISC word
    assert [label for label, kept in counts.items() if not kept] == ["I-MISC"]

def test_a_bf16_step_gives_a_finite_loss_close_to_fp32s():
    """One batch holds the whole training set, so an epoch's loss is its only step's, from the same initial weights."""
    losses = {
        precision: started(tiny_config(precision=precision, batch_size=64)).train_epoch(1) for precision in ("fp32", "bf16")
    }
    assert math.isfinite(losses["bf16"])
    assert losses["bf16"] != losses["fp32"]  # the forward pass did run in bf16
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=0.01)


def test_a_short_bf16_training_lowers_the_loss():
    session = started(tiny_config(precision="bf16", batch_size=64, epochs=8, warmup_ratio=0.0))
    losses = [session.train_epoch(epoch) for epoch in session.remaining_epochs()]
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < 0.8 * losses[0], losses


def test_fp16_on_the_cpu_is_refused_before_anything_loads():
    with pytest.raises(UserInputError, match="fp16 needs a CUDA device, but this trial runs on cpu"):
        TrialSession(tiny_config(precision="fp16"), device=torch.device("cpu"))
    with pytest.raises(UserInputError, match="fp16 needs a CUDA device") as raised:
        TrialSession(tiny_config(eval_precision="fp16"), device=torch.device("cpu"))
    assert raised.value.problems[0].path == "train.eval_precision"


@pytest.mark.parametrize("objective, head", [("ce", "softmax"), ("comauc_2t", "two_task")])
def test_save_then_restore_in_a_new_session_continues_identically(tmp_path: Path, objective: str, head: str):
    """AdamW and the primal-dual optimiser (PDSCA) both come back under weights_only loading."""
    config = tiny_config(objective=objective, head=head)
    first = started(config)
    first.train_epoch(1)
    first.evaluate()
    first.save(tmp_path)
    first.train_epoch(2)
    expected = first.evaluate()

    second = started(config)
    assert second.restore(tmp_path)
    assert second.epoch == 1 and second.best.epoch == 1 and len(second.evaluations) == 1
    assert list(second.remaining_epochs()) == [2]
    second.train_epoch(2)
    assert second.evaluate().dev == expected.dev


def test_restore_without_a_checkpoint_starts_from_epoch_zero(tmp_path: Path):
    session = started(tiny_config())
    assert not session.restore(tmp_path)
    assert session.epoch == 0


class Pickled:
    """Any object beyond tensors and plain containers: weights_only loading must refuse it."""


def test_a_checkpoint_holding_a_pickled_object_is_refused(tmp_path: Path):
    path = tmp_path / CHECKPOINT_FILE
    torch.save({"epoch": 1, "hook": Pickled()}, path)
    with pytest.raises(ValueError, match=f"checkpoint {path} holds objects other than tensors.*refusing to unpickle"):
        load_checkpoint(path, torch.device("cpu"))
    session = started(tiny_config())
    with pytest.raises(ValueError, match="refusing to unpickle"):
        session.restore(tmp_path)


def evaluation(thresholds: Thresholds | None = None) -> Evaluation:
    timings = Timings(setup=1.5, train=2.0, evaluate=0.5, train_tokens=40, first_step_unix=1000.0)
    return Evaluation(2, 3, {"micro_f1": 0.4}, {"micro_f1": 0.5}, 0.25, timings, thresholds)


def test_evaluation_flattens_to_the_metric_names_mlflow_records():
    assert evaluation().metrics() == {
        "dev_micro_f1": 0.4,
        "dev_best_micro_f1": 0.5,
        "train_loss": 0.25,
        "time_setup_s": 1.5,
        "time_train_s": 2.0,
        "time_eval_s": 0.5,
        "time_first_step_unix": 1000.0,
        "train_tokens": 40.0,
    }
    with_thresholds = evaluation(Thresholds(entity=0.3, beginning=0.6)).metrics()
    assert (with_thresholds["threshold_entity"], with_thresholds["threshold_beginning"]) == (0.3, 0.6)


@pytest.mark.parametrize("thresholds", [None, Thresholds(0.3, 0.6)])
def test_evaluation_round_trips_through_plain_data(thresholds):
    original = evaluation(thresholds)
    assert Evaluation.from_dict(original.to_dict()) == original


def test_trial_result_round_trips_through_plain_data():
    from nerplat.data.corpus import Sentence

    result = TrialResult(
        metrics={"test_micro_f1": 0.5},
        evaluations=[evaluation()],
        predictions=[(Sentence(("EU", "rejects"), ("B-ORG", "O")), ("B-ORG", "B-MISC"))],
        train_sentences=16,
        size_factor=0.01,
        selected_epoch=2,
        timings=Timings(total=9.0),
        notes=("carved dev",),
        data_checksums={"train": "abc"},
        fit_converged=True,
    )
    assert TrialResult.from_dict(result.to_dict()) == result


@pytest.mark.parametrize(("train_bf16", "resolved"), [(0.5, "bf16"), (1.6, "fp32")])
def test_auto_resolves_by_the_hosts_calibration_and_the_trial_trains_and_evaluates_in_it(
    monkeypatch, tmp_path, train_bf16, resolved
):
    """On a CPU listing avx512_bf16 either way: bf16 where it measured faster, fp32 where slower."""
    from nerplat.trial import predict as predict_module
    from precision_hosts import calibrated_host

    evaluated_in = []
    real_autocast = predict_module.autocast
    monkeypatch.setattr(
        predict_module, "autocast", lambda precision, device: evaluated_in.append(precision) or real_autocast(precision, device)
    )
    calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=train_bf16, evaluate_bf16=0.5)
    session = started(tiny_config(precision="auto", epochs=1))
    assert session.precision == resolved and not session.scaler.is_enabled()
    session.train_epoch(1)
    evaluated_in.clear()
    session.evaluate()
    assert set(evaluated_in) == {resolved}  # eval_precision none: as training


def test_auto_on_a_cpu_without_bf16_units_trains_in_fp32(monkeypatch):
    from nerplat.trial import device as device_module

    monkeypatch.setattr(device_module, "cpu_flags", lambda: frozenset({"avx2"}))
    assert started(tiny_config(precision="auto", epochs=1)).precision == "fp32"


@pytest.mark.parametrize(("evaluate_bf16", "resolved"), [(0.5, "bf16"), (1.3, "fp32")])
def test_eval_precision_auto_evaluates_an_fp32_trial_in_bf16_only_where_it_measured_faster(
    monkeypatch, tmp_path, evaluate_bf16, resolved
):
    from nerplat.trial import predict as predict_module
    from precision_hosts import calibrated_host

    evaluated_in = []
    real_autocast = predict_module.autocast
    monkeypatch.setattr(
        predict_module, "autocast", lambda precision, device: evaluated_in.append(precision) or real_autocast(precision, device)
    )
    calibrated_host(monkeypatch, tmp_path, threads=1, train_bf16=1.6, evaluate_bf16=evaluate_bf16)
    session = started(tiny_config(eval_precision="auto", epochs=1))
    assert (session.precision, session.eval_precision) == ("fp32", resolved)
    session.train_epoch(1)
    evaluated_in.clear()
    session.evaluate()
    session.finish()
    assert set(evaluated_in) == {resolved}  # dev and the final evaluation alike


def test_evaluation_batches_fill_a_token_budget_at_the_longest_window():
    from nerplat.trial.session import EVAL_BATCH_TOKENS

    assert started(tiny_config()).inference.batch_size == EVAL_BATCH_TOKENS // 48  # max_length 48: 170 windows
    assert started(tiny_config(batch_size=128)).inference.batch_size == 256  # never below two training batches


def test_a_cpu_trial_evaluates_in_batches_of_bounded_padded_size(monkeypatch):
    from nerplat.trial.predict import CPU_EVAL_BATCH_TOKENS

    session = started(tiny_config())
    assert session.device.type == "cpu" and session.inference.max_tokens == CPU_EVAL_BATCH_TOKENS
    sizes = []
    real_batches = type(session.data.dev).batches
    def batches(self, *args, **kwargs):
        if kwargs["seed"] is None:  # an evaluation's
            sizes.append(kwargs.get("max_tokens"))
        return real_batches(self, *args, **kwargs)

    monkeypatch.setattr(type(session.data.dev), "batches", batches)
    session.train_epoch(1)
    session.evaluate()
    session.finish()
    assert sizes and set(sizes) == {CPU_EVAL_BATCH_TOKENS}  # dev and the final evaluation alike


def test_a_session_that_keeps_no_weights_selects_by_dev_scores_alone():
    session = TrialSession(tiny_config(epochs=2), keep_weights=False)
    session.setup()
    for epoch in session.remaining_epochs():
        session.train_epoch(epoch)
        session.evaluate()
    assert session.best.state == {} and session.best.epoch in (1, 2)
    last = {k: v.clone() for k, v in session.tagger.state_dict().items()}
    result = session.finish()
    assert result.selected_epoch == session.best.epoch
    assert all(torch.equal(last[k], v) for k, v in session.tagger.state_dict().items())  # nothing restored


def test_a_tuning_trial_copies_no_weights_and_a_replicate_does(monkeypatch):
    from nerplat.trial import loop, variant_registry

    kept = []
    real = variant_registry.VARIANTS["sequence_labelling"]

    def recording(*args, **kwargs):
        kept.append(kwargs["keep_weights"])
        return real(*args, **kwargs)

    monkeypatch.setitem(variant_registry.VARIANTS, "sequence_labelling", recording)
    loop.run_trial(tiny_config(epochs=1).model_copy(update={"eval_split": None}))
    loop.run_trial(tiny_config(epochs=1))
    assert kept == [False, True]
