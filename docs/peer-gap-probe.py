"""Why `nerplat bench peer`'s best dev scores differ between the sides (docs/performance.md).

At one learning rate of the bench sweep (`platform/nerplat/bench/sweep.yaml`), over seeds
TUNE_SEED, TUNE_SEED - 1, ... (the seeds of bench peer's repeats), in-process on 2 threads:
- the forward and backward pass of nerplat's tagger and of the peer's token classifier on the same
  weights and batch, dropout off (loss and gradient norm; they should agree to rounding);
- nerplat's trial (`run_trial`; its best dev micro F1 over the sweep's evaluations) as it is, with
  torch's dropout in place of packed dropout, with every dropout off, with training batches drawn at
  random (with dropout, and with every dropout off), and with the whole training set sorted as one
  group of length-grouped batches (the rule before groups were capped at a quarter of the windows);
- the peer's Trainer (`bench.hf_peer`'s settings, no evaluation during training), its model scored
  after the last epoch by nerplat's `evaluate_sentences`, with dropout and with every dropout off.
Run from the repository root: `.venv/bin/python docs/peer-gap-probe.py [LR] [SEEDS] [SENTENCES]
[batches] [--profile smoke] [--set KEY=VALUE ...]` (defaults 1.96e-4, the sweep's highest drawn rate,
where both sides scored best, 8 seeds and the sweep's 100 training sentences; `batches` runs only
nerplat's three batchings, with dropout; the sweep's `smoke` profile swaps in the tiny encoder and `--set`
overrides its spec, as tests/integration/docs runs it: `--set train.epochs=1 --set train.dev_subset=10`).
"""

import argparse
import dataclasses
import statistics
import tempfile
from functools import partial

import torch
from transformers import DataCollatorForTokenClassification, Trainer

import numpy as np

import nerplat.trial.batching as batching
import nerplat.trial.session as session_module
from nerplat.bench import hf_peer
from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.models.encoders import load_encoder
from nerplat.models.heads.softmax import SoftmaxHead
from nerplat.models.tagger import Tagger
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.trial.data import prepare_trial_data
from nerplat.trial.features import featurize_windows
from nerplat.trial.loop import run_trial
from nerplat.trial.predict import Inference, evaluate_sentences
from nerplat.trial.variant_registry import session_for

PACKED = session_module.use_packed_dropout
LENGTH_GROUPED = batching.length_grouped_batches
QUARTER = batching.MIN_GROUPS
ONE_GROUP = 1e-9  # as MIN_GROUPS, lifts the cap: groups of `batches_per_group` batches at any set size


def random_batches(lengths, batch_size: int, *, seed: int | None, **options) -> list[np.ndarray]:
    """Training batches drawn at random (a permutation cut in order); evaluation's as they are."""
    if seed is None:
        return LENGTH_GROUPED(lengths, batch_size, seed=seed, **options)
    order = np.random.default_rng(seed).permutation(len(lengths))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def without_dropout(model: torch.nn.Module) -> torch.nn.Module:
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0  # attention reads its rate from its dropout module too
    return model


def same_pass(arm, lr: float) -> str:
    """nerplat's tagger and the peer's classifier on the same weights and batch, dropout off."""
    config = arm.trial_config({"train.lr": lr}, seed=TUNE_SEED, eval_split=None)
    session = session_for(config.head)(config, select_metric="micro_f1", progress=None, device=None, keep_weights=False)
    session.setup()
    model = hf_peer._token_classifier(config, load_encoder(config.encoder), len(session.data.labels))
    model.classifier.load_state_dict(session.tagger.head.classifier.state_dict())
    session.step_module.eval(), model.eval()
    batch = next(iter(session.data.train.batches(16, seed=1)))
    labels = torch.full(batch.input_ids.shape, -100)
    for row, column in batch.word_mask.nonzero().tolist():
        labels[row, batch.word_starts[row, column]] = batch.labels[row, column]
    ours = session.step_module(batch, 0)
    theirs = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=labels).loss
    ours.backward(), theirs.backward()
    norms = [torch.nn.utils.clip_grad_norm_(m.parameters(), float("inf")).item() for m in (session.tagger, model)]
    return f"loss {ours.item():.6f} / {theirs.item():.6f}, gradient norm {norms[0]:.6f} / {norms[1]:.6f}"


def nerplat_score(arm, lr: float, seed: int, dropout: str, batches: str = "length-grouped") -> float:
    session_module.use_packed_dropout = {"packed": PACKED, "torch": lambda model: model, "off": without_dropout}[dropout]
    batching.length_grouped_batches = random_batches if batches == "random" else LENGTH_GROUPED
    batching.MIN_GROUPS = ONE_GROUP if batches == "one group" else QUARTER
    try:
        result = run_trial(arm.trial_config({"train.lr": lr}, seed=seed, eval_split=None))
    finally:
        session_module.use_packed_dropout, batching.length_grouped_batches = PACKED, LENGTH_GROUPED
        batching.MIN_GROUPS = QUARTER
    return max(evaluation.dev["micro_f1"] for evaluation in result.evaluations)


def peer_score(arm, lr: float, seed: int, dropout: str) -> float:
    config = arm.trial_config({"train.lr": lr}, seed=seed, eval_split=None)
    encoder = load_encoder(config.encoder)
    data = prepare_trial_data(config, encoder.tokenizer, featurize_windows)

    def model_init():
        model = hf_peer._token_classifier(config, encoder, len(data.labels))
        return without_dropout(model) if dropout == "off" else model

    with tempfile.TemporaryDirectory() as scratch:
        args = dataclasses.replace(hf_peer._training_arguments(scratch, config), learning_rate=lr)
        trainer = Trainer(
            model_init=model_init, args=args, train_dataset=hf_peer.window_dataset(data.train),
            data_collator=DataCollatorForTokenClassification(encoder.tokenizer),
        )  # fmt: skip
        trainer.train()
    model = trainer.model.eval()
    head = SoftmaxHead(encoder.hidden_size, len(data.labels))
    head.classifier.load_state_dict(model.classifier.state_dict())
    tagger = Tagger(model.base_model, head, dropout=0.0)
    inference = Inference.on(torch.device("cpu"), "fp32", 64)
    metrics, _ = evaluate_sentences(tagger, data.dev, data.dev_sentences, data.labels, inference)
    return metrics["micro_f1"]


def main(lr: float, count: int, sentences: int, only_batches: bool, profile: str | None, overrides: list[str]) -> None:
    torch.set_num_threads(2)
    sample = f"samplers=[{{low_resource: {{size: {sentences}, partitions: 1}}}}]"
    overrides = ["train.threads=2", "resources.cpus_per_worker=2", sample, *overrides]
    arm = compile_plan(SpecSource(SWEEP_SPEC, profile, overrides=overrides), default_catalog()).arms[0]
    print(f"{sentences} training sentences, learning rate {lr:g}")
    if not only_batches:
        print(f"same weights and batch, nerplat / peer: {same_pass(arm, lr)}")
    seeds = [TUNE_SEED - repeat for repeat in range(count)]
    rows = [
        ("nerplat, packed dropout", partial(nerplat_score, dropout="packed")),
        ("nerplat, torch dropout", partial(nerplat_score, dropout="torch")),
        ("nerplat, no dropout", partial(nerplat_score, dropout="off")),
        ("nerplat, random batches", partial(nerplat_score, dropout="packed", batches="random")),
        ("nerplat, one group", partial(nerplat_score, dropout="packed", batches="one group")),
        ("nerplat, random, no dropout", partial(nerplat_score, dropout="off", batches="random")),
        ("peer Trainer, dropout", partial(peer_score, dropout="torch")),
        ("peer Trainer, no dropout", partial(peer_score, dropout="off")),
    ]
    for name, score in [rows[0], rows[3], rows[4]] if only_batches else rows:
        scores = [score(arm, lr, seed) for seed in seeds]
        median, mean, by_seed = statistics.median(scores), statistics.mean(scores), " ".join(f"{s:.3f}" for s in scores)
        print(f"{name:>27}: median {median:.3f}, mean {mean:.3f}; by seed {by_seed}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lr", nargs="?", type=float, default=1.96e-4)
    parser.add_argument("seeds", nargs="?", type=int, default=8)
    parser.add_argument("sentences", nargs="?", type=int, default=100)
    parser.add_argument("mode", nargs="?", choices=["batches"])
    parser.add_argument("--profile", help="a profile of the bench sweep (smoke: the tiny encoder)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="a spec override after the probe's own, as `nerplat run --set` takes it (tests: fewer epochs and dev sentences)",
    )  # fmt: skip
    args = parser.parse_args()
    main(args.lr, args.seeds, args.sentences, args.mode == "batches", args.profile, args.overrides)
