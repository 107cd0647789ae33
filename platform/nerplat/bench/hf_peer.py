"""The peer of `nerplat bench peer`: the bench sweep as a Hugging Face user would write it,
`Trainer.hyperparameter_search` with the Optuna backend, in one process (the bench starts it as a
process of its own: `bench.side_process`).

Its imports are only what that sweep needs (nerplat's data layer, encoder loader and metrics), not
nerplat's runner, so its process pays no import a hand-written sweep would not.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from functools import partial
from typing import Any

from nerplat.metrics import evaluate_tags
from nerplat.models.encoders import load_encoder, quiet_transformers
from nerplat.plan.model import Arm
from nerplat.trial.batching import ids_to_tags, join_windows
from nerplat.trial.data import prepare_trial_data
from nerplat.trial.device import autocast
from nerplat.trial.features import featurize_windows
from nerplat.trial.precision_calibration import resolve_eval_precision, resolve_precision

PEER_SEARCH_SEED = 0  # the order in which Optuna's grid sampler visits nerplat's learning rates


def hf_optuna_sweep(arm: dict[str, Any], threads: int, learning_rates: list[float], seed: int) -> dict[str, Any]:
    """`Trainer.hyperparameter_search(backend="optuna")` trying each of `learning_rates` once, training at
    `seed`, on the data and encoder of the tuning trials of `arm` (a plan's arm as JSON: the settings a
    hand-written sweep would spell out): its best dev micro F1 and the learning rates it tried."""
    import torch
    from transformers import DataCollatorForTokenClassification
    from transformers.trainer_callback import PrinterCallback

    arm = Arm.model_validate(arm)
    ((key, space),) = arm.search_space.items()
    config = arm.trial_config({key: space.low}, seed=seed, eval_split=None)
    train = config.train
    cpu = torch.device("cpu")
    trained_in = resolve_precision(train.precision, cpu, threads)
    eval_precision = resolve_eval_precision(train.eval_precision, trained_in, cpu, threads)
    torch.set_num_threads(threads)
    encoder = load_encoder(config.encoder)
    data = prepare_trial_data(config, encoder.tokenizer, featurize_windows)
    gold = [list(sentence.tags) for sentence in data.dev_sentences]
    scores: list[float] = []
    tried: set[float] = set()

    def hp_space(trial: Any) -> dict[str, float]:
        learning_rate = trial.suggest_float("learning_rate", space.low, space.high, log=True)
        tried.add(learning_rate)
        return {"learning_rate": learning_rate}

    window_of = WindowLookup(data.dev)

    def compute_metrics(prediction: Any) -> dict[str, float]:
        windows = window_of.rows(prediction.inputs)  # length grouping reorders the dev windows
        words = [
            logits[labels != -100].argmax(-1).tolist() for logits, labels in zip(prediction.predictions, prediction.label_ids)
        ]
        predicted = ids_to_tags(join_windows(data.dev, windows, words), data.labels)
        micro_f1 = evaluate_tags(gold, predicted)["micro_f1"]
        scores.append(micro_f1)
        return {"micro_f1": micro_f1}

    with tempfile.TemporaryDirectory(prefix="nerplat-bench-peer-") as scratch:
        trainer = evaluating_in(eval_precision)(
            model_init=partial(_token_classifier, config, encoder, len(data.labels)),
            args=_training_arguments(scratch, config),
            train_dataset=window_dataset(data.train),
            eval_dataset=window_dataset(data.dev),
            data_collator=DataCollatorForTokenClassification(encoder.tokenizer),
            compute_metrics=compute_metrics,
            callbacks=[evaluate_every(train.eval_every, train.epochs)],
        )
        trainer.remove_callback(PrinterCallback)  # it prints every log line when progress bars are off
        _grid_search(trainer, hp_space, learning_rates)
    return {"best_dev_micro_f1": max(scores), "learning_rates": sorted(tried)}


def _grid_search(trainer: Any, hp_space: Callable[[Any], dict[str, float]], learning_rates: list[float]) -> None:
    """Optuna's grid over `learning_rates`, each tried once, maximising dev micro F1."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with quiet_transformers():
        trainer.hyperparameter_search(
            hp_space=hp_space,
            compute_objective=lambda metrics: metrics["eval_micro_f1"],
            n_trials=len(learning_rates),
            direction="maximize",
            backend="optuna",
            sampler=optuna.samplers.GridSampler({"learning_rate": learning_rates}, seed=PEER_SEARCH_SEED),
            pruner=optuna.pruners.NopPruner(),  # the sweep's scheduler is FIFO: no trial is stopped early
        )


def _token_classifier(config: Any, encoder: Any, labels: int) -> Any:
    """The encoder a nerplat trial starts from, under transformers' token-classification head."""
    from transformers import AutoModelForTokenClassification

    model_config = encoder.model.config
    model_config.num_labels = labels
    with quiet_transformers():
        model = AutoModelForTokenClassification.from_config(model_config)
    model.base_model.load_state_dict(load_encoder(config.encoder).model.state_dict())
    return model


def _training_arguments(scratch: str, config: Any) -> Any:
    """The Trainer's settings: the trial's training batch, schedule and seed; evaluation batches of a
    training batch's size, grouped by length. nerplat cuts its own by padded size
    (`models.length_cut.cheapest_cut` under `trial.predict.CPU_EVAL_BATCH_TOKENS`); on the sweep's
    dev sentences the two take about the same time (docs/performance.md, "Figures behind the code's
    choices")."""
    import torch
    from transformers import TrainingArguments

    train = config.train
    return TrainingArguments(
        output_dir=scratch,
        per_device_train_batch_size=train.batch_size,
        per_device_eval_batch_size=train.batch_size,
        num_train_epochs=train.epochs,
        weight_decay=train.weight_decay,
        warmup_steps=train.warmup_ratio,  # a float below 1 is a share of the steps
        lr_scheduler_type="linear",
        max_grad_norm=train.max_grad_norm,
        train_sampling_strategy="group_by_length",
        eval_strategy="no",  # `EvaluateEvery` asks for the sweep's evaluations
        include_for_metrics=["inputs"],  # to find each evaluated window (`WindowLookup`)
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning is for copies to a GPU
        seed=config.seed,
    )


def evaluating_in(precision: str) -> type:
    """The Trainer, its evaluation steps under autocast at `precision` (fp32: the Trainer as it is)
    and their logits handed on in fp32 (numpy has no bf16)."""
    import torch
    from transformers import Trainer

    if precision == "fp32":
        return Trainer

    class AutocastEvaluation(Trainer):
        def prediction_step(self, model: Any, inputs: Any, prediction_loss_only: bool, ignore_keys: Any = None) -> Any:
            with autocast(precision, torch.device(self.args.device.type)):
                loss, logits, labels = super().prediction_step(model, inputs, prediction_loss_only, ignore_keys)
            return loss, None if logits is None else logits.float(), labels

    return AutocastEvaluation


def window_dataset(features: Any) -> list[dict[str, Any]]:
    """nerplat's windows as token-classification examples: a word's label on its first sub-token,
    -100 (ignored) on the other sub-tokens and on context words another window owns."""
    examples = []
    for index in range(len(features)):
        window = features.window(index)
        labels = [-100] * len(window.input_ids)
        for start, label in zip(window.word_starts.tolist(), window.labels.tolist()):
            labels[start] = label
        examples.append({"input_ids": window.input_ids.tolist(), "labels": labels})
    return examples


class WindowLookup:
    """Which window of `features` each evaluated row is, from its input ids.

    `group_by_length` orders evaluation batches by length too, and the Trainer hands
    `compute_metrics` rows in that order. Rows come padded: with the pad id inside a batch, with
    -100 where batches were joined; a window never ends with the pad id (it ends with [SEP]).
    Identical windows are told apart by order, which is harmless: their predictions are the same.
    """

    def __init__(self, features: Any):
        self.pad_id = int(features.pad_id)
        self.indices: dict[tuple[int, ...], list[int]] = {}
        for index in range(len(features)):
            self.indices.setdefault(tuple(features.window(index).input_ids.tolist()), []).append(index)

    def rows(self, inputs: Any) -> list[int]:
        unclaimed = {ids: list(indices) for ids, indices in self.indices.items()}
        windows = []
        for row in inputs:
            ids = [int(i) for i in row]
            while ids and ids[-1] in (-100, self.pad_id):
                ids.pop()
            windows.append(unclaimed[tuple(ids)].pop(0))
        return windows


def evaluate_every(every: int, epochs: int) -> Any:
    """A Trainer callback that evaluates when a nerplat trial does: every `every` epochs and after the last."""
    from transformers import TrainerCallback

    class EvaluateEvery(TrainerCallback):
        def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            epoch = round(state.epoch)
            control.should_evaluate = epoch % every == 0 or epoch == epochs
            return control

    return EvaluateEvery()
