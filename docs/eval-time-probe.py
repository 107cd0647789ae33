"""Where a dev evaluation's time goes in the bench sweep's trial (docs/performance.md).

Sets up the trial of `platform/nerplat/bench/sweep.yaml` (100 CoNLL-2003 sentences, MiniLM-L6, dev
passes in bf16 where the CPU runs it natively) in-process on 2 threads, trains its first 2 epochs
at learning rate 1.96e-4, then times, in turns, R times each:

- `evaluate`: the session's whole dev evaluation (what a trial's `timings.evaluate` counts);
- `forward, autocast per batch`: the forward passes alone, as `trial.predict.head_outputs` runs them,
  each batch under its own autocast (the weights cast to bf16 again for every batch);
- `forward, one autocast`: the same passes inside one outer autocast for the split, so each weight is
  cast once per evaluation (autocast keeps its casts until its outermost context exits), not what a
  trial runs;
- `forward, bf16 weights`: the same passes without autocast on a copy of the tagger in bf16 (every
  operation in bf16, the residual stream too; the copy's time is `bf16 copy`), not what a trial runs;
- `forward, int8 weights`: the passes without autocast on a copy whose linear layers torch's dynamic
  quantization made int8 (`quantize_dynamic`; the copy's time is `int8 copy`), not what a trial runs;
- `metrics`: `metrics.evaluate_tags` (seqeval) on the predicted tags.

It also prints how many dev words each copy labels differently from autocast.

Prints each part's median seconds and its share of `evaluate`.
Run from the repository root: `.venv/bin/python docs/eval-time-probe.py [R] [--profile smoke] [--set
KEY=VALUE ...]` (default 9 turns; the sweep's `smoke` profile swaps in the tiny encoder and `--set`
overrides its spec, as tests/integration/docs runs it on 20 training and 10 dev sentences).
"""

import argparse
import copy
import dataclasses
import statistics
import time

import torch

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.metrics import evaluate_tags
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.device import autocast
from nerplat.trial.predict import head_outputs, predict
from nerplat.trial.session import TrialSession


def under_one_autocast(session: TrialSession) -> list:
    """`head_outputs` inside an outer autocast: its per-batch contexts nest, so the casts are kept."""
    inference = session.inference
    with torch.inference_mode(), autocast(inference.precision, inference.device):
        return list(head_outputs(session.tagger, session.data.dev, inference))


def bf16_copy(session: TrialSession) -> torch.nn.Module:
    return copy.deepcopy(session.tagger).to(torch.bfloat16)


def int8_copy(session: TrialSession) -> torch.nn.Module:
    return torch.ao.quantization.quantize_dynamic(copy.deepcopy(session.tagger).eval(), {torch.nn.Linear}, dtype=torch.qint8)


def main(repeats: int, profile: str | None, overrides: list[str]) -> None:
    torch.set_num_threads(2)
    arm = compile_plan(SpecSource(SWEEP_SPEC, profile, overrides=["train.threads=2", *overrides]), default_catalog()).arms[0]
    session = TrialSession(arm.trial_config({"train.lr": 1.96e-4}, seed=TUNE_SEED, eval_split=None), keep_weights=False)
    session.setup()
    for epoch in (1, 2):
        session.train_epoch(epoch)
    data, inference = session.data, session.inference
    plain = dataclasses.replace(inference, precision="fp32")  # the copies compute in their own dtypes
    exact = predict(session.tagger, data.dev, inference)
    gold, predicted = [list(s.tags) for s in data.dev_sentences], ids_to_tags(exact, data.labels)
    copies = {"bf16": bf16_copy(session), "int8": int8_copy(session)}
    parts = {
        "evaluate": session.evaluate,
        "forward, one autocast": lambda: under_one_autocast(session),
        "forward, autocast per batch": lambda: list(head_outputs(session.tagger, data.dev, inference)),
        "bf16 copy": lambda: bf16_copy(session),
        "forward, bf16 weights": lambda: list(head_outputs(copies["bf16"], data.dev, plain)),
        "int8 copy": lambda: int8_copy(session),
        "forward, int8 weights": lambda: list(head_outputs(copies["int8"], data.dev, plain)),
        "metrics": lambda: evaluate_tags(gold, predicted),
    }
    seconds = {name: [] for name in parts}
    for _ in range(repeats):
        for name, part in parts.items():
            started = time.perf_counter()
            part()
            seconds[name].append(time.perf_counter() - started)
    whole = statistics.median(seconds["evaluate"])
    print(f"{len(data.dev_sentences)} dev sentences, precision {inference.precision}, {repeats} turns")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"{name:>28}: median {median:.4f} s ({min(times):.4f}-{max(times):.4f}), {median / whole:.3f} of evaluate")
    words = sum(len(sentence) for sentence in exact)
    for name, tagger in copies.items():
        labelled = predict(tagger, data.dev, plain)
        differing = sum(a != b for e, r in zip(exact, labelled) for a, b in zip(e, r))
        print(f"{name} weights label {differing} of {words} dev words differently from autocast")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repeats", nargs="?", type=int, default=9)
    parser.add_argument("--profile", help="a profile of the bench sweep (smoke: the tiny encoder)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="a spec override after the probe's own, as `nerplat run --set` takes it (tests: fewer epochs and dev sentences)",
    )  # fmt: skip
    args = parser.parse_args()
    main(args.repeats, args.profile, args.overrides)
