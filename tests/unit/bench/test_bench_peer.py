"""The peer side's data plumbing: nerplat's windows as Trainer examples, and evaluated rows back to windows;
both sides timed alike, each as a process of its own."""

import random

import numpy as np
import pytest

from nerplat.bench.hf_peer import WindowLookup, window_dataset
from nerplat.config.trial import EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.models.encoders import load_encoder
from nerplat.trial.features import featurize

LABELS = ["O", "B-PER", "I-PER", "B-LOC"]


@pytest.fixture(scope="module")
def features():
    """Windows of 16 sub-tokens: the long sentence takes several, two sentences are the same."""
    long = Sentence(
        tuple(f"Peter{i} Blackburn" if i % 3 == 0 else "visited" for i in range(24)),
        tuple("B-PER" if i % 3 == 0 else "O" for i in range(24)),
    )
    short = Sentence(("EU", "rejects", "Paris"), ("O", "O", "B-LOC"))
    tokenizer = load_encoder(EncoderSettings(name="tiny")).tokenizer
    return featurize([long, short, short], tokenizer, EncoderSettings(name="tiny", max_length=16, window_stride=4), LABELS)


def test_a_window_is_labelled_on_the_first_sub_token_of_each_word_it_owns(features):
    examples = window_dataset(features)
    assert len(examples) == len(features) > 3
    for index, example in enumerate(examples):
        window = features.window(index)
        labelled = [i for i, label in enumerate(example["labels"]) if label != -100]
        assert labelled == window.word_starts.tolist() and [example["labels"][i] for i in labelled] == window.labels.tolist()
        assert example["input_ids"] == window.input_ids.tolist()


def test_evaluated_rows_in_any_order_and_padding_find_their_windows(features):
    order = list(range(len(features)))
    random.Random(0).shuffle(order)
    pad = int(features.pad_id)
    batches = [order[:3], order[3:]]  # padded with the pad id within a batch, with -100 where batches are joined
    width = max(len(features.window(i).input_ids) for i in order)
    rows = []
    for batch in batches:
        longest = max(len(features.window(i).input_ids) for i in batch)
        for i in batch:
            ids = features.window(i).input_ids.tolist()
            rows.append(ids + [pad] * (longest - len(ids)) + [-100] * (width - longest))
    found = WindowLookup(features).rows(np.array(rows))
    assert sorted(found) == list(range(len(features)))  # the two identical windows are told apart
    assert [features.window(i).input_ids.tolist() for i in found] == [features.window(i).input_ids.tolist() for i in order]


def test_each_sides_figures_over_repeats_and_the_per_repeat_ratio():
    from nerplat.bench.peer import PeerBenchResult, SideFigures, SweepFigures
    from nerplat.bench.repeats import Spread, ratios

    rates = [1e-5, 1e-4]
    ours = [SweepFigures("nerplat", 2, wall, 0.30, rates, seed) for seed, wall in enumerate((10.0, 12.0, 11.0, 30.0, 10.0))]
    theirs = [SweepFigures("peer", 2, wall, 0.29, rates, seed) for seed, wall in enumerate((16.0, 18.0, 17.0, 40.0, 15.0))]
    nerplat, peer = SideFigures.of(ours), SideFigures.of(theirs)
    assert nerplat.wall_s.median == 11.0 and nerplat.per_trial_s.median == 5.5 and nerplat.per_trial_s.max == 15.0
    assert nerplat.seeds == peer.seeds == [0, 1, 2, 3, 4]
    result = PeerBenchResult(
        trials=2, epochs=1, sentences=20, encoder="tiny", threads=1, repeats=5, nerplat=nerplat, peer=peer,
        ratio=ratios([s.wall_s for s in theirs], [s.wall_s for s in ours]), best_dev_difference=Spread.of([0.01] * 5),
    )  # fmt: skip
    assert result.ratio.median == pytest.approx(1.5) and result.same_learning_rates
    figures = result.as_dict()
    assert figures["nerplat"]["wall_s"]["repeats"] == [10.0, 12.0, 11.0, 30.0, 10.0]
    assert figures["ratio"]["median"] == pytest.approx(1.5)
    assert figures["same_learning_rates"] is True and figures["peer"]["seeds"] == [0, 1, 2, 3, 4]


def test_repeats_train_at_the_tuning_seed_then_the_seeds_below_it():
    from nerplat.bench.peer import repeat_seed
    from nerplat.config.experiment import TUNE_SEED

    assert [repeat_seed(repeat) for repeat in range(3)] == [TUNE_SEED, TUNE_SEED - 1, TUNE_SEED - 2]


def test_the_peers_evaluation_runs_in_nerplats_evaluation_arithmetic_and_hands_on_fp32_logits(tmp_path):
    import torch
    from transformers import BertConfig, BertForTokenClassification, Trainer, TrainingArguments

    from nerplat.bench.hf_peer import evaluating_in

    assert evaluating_in("fp32") is Trainer
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=3
    )
    model = BertForTokenClassification(config)
    arguments = TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    inputs = {
        "input_ids": torch.tensor([[1, 5, 7, 2]]), "attention_mask": torch.ones(1, 4, dtype=torch.long),
        "labels": torch.tensor([[0, 1, 2, 0]]),
    }  # fmt: skip
    exact = Trainer(model=model, args=arguments).prediction_step(model, dict(inputs), prediction_loss_only=False)[1]
    autocast = evaluating_in("bf16")(model=model, args=arguments)
    rounded = autocast.prediction_step(model, dict(inputs), prediction_loss_only=False)[1]
    assert rounded.dtype == exact.dtype == torch.float32
    assert not torch.equal(rounded, exact) and torch.allclose(rounded, exact, atol=0.1)


def test_both_sides_are_timed_as_processes_of_their_own_with_the_same_clock(monkeypatch):
    """The peer's sweep once ran in the bench's process, its clock after imports the bench had made,
    while nerplat's trial workers paid theirs inside its clock: now every sweep of either side is one
    `timed_call`, a new process timed from before its start to its exit."""
    from rich.console import Console

    from nerplat.bench import peer

    calls = []

    def timed_call(target, request):
        calls.append((target, request))
        rates = request.get("learning_rates", [2e-5, 1e-4])
        return 10.0 * len(calls), {"best_dev_micro_f1": 0.3, "learning_rates": rates}

    monkeypatch.setattr(peer, "timed_call", timed_call)
    result = peer.bench_peer(Console(quiet=True), trials=2, epochs=1, sentences=20, encoder="tiny", repeats=5)
    targets = [target for target, _ in calls]
    assert targets == ["nerplat.bench.peer:nerplat_sweep", "nerplat.bench.hf_peer:hf_optuna_sweep"] * 5
    assert result.nerplat.wall_s.repeats == [10.0, 30.0, 50.0, 70.0, 90.0]
    assert result.peer.wall_s.repeats == [20.0, 40.0, 60.0, 80.0, 100.0]
    assert [request["seed"] for _, request in calls] == [peer.repeat_seed(r) for r in range(5) for _ in "ab"]
    assert result.same_learning_rates


def test_the_peers_process_imports_none_of_nerplats_runner():
    """Its clock holds its own imports only: none a hand-written Trainer sweep would not make."""
    import subprocess
    import sys

    prefixes = ("nerplat.run", "nerplat.bench.peer", "ray", "mlflow")
    probe = f"import sys, nerplat.bench.hf_peer; print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "[]"
