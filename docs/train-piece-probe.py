"""What the cost of an encoder pass in `models.length_cut.BATCH_COST_TOKENS` does to training time.

The bench sweep's trial (`platform/nerplat/bench/sweep.yaml`: 100 CoNLL-2003 sentences, MiniLM-L6,
4 epochs of 7 steps) at learning rate 1.96e-4, in-process on 2 threads, over seeds TUNE_SEED,
TUNE_SEED - 1, ...: its training seconds, real training sub-tokens a second and best dev micro F1,
with its batches (nearly random at this size, `trial.batching.MIN_GROUPS`) encoded in length pieces
cut at several costs a pass, in whole batches (no pieces), and with the set sorted by length as one
group (the rule before the groups were capped). The cost also applies to the cut of evaluation
batches while it runs; only training seconds are compared.
Run from the repository root: `.venv/bin/python docs/train-piece-probe.py [SEEDS] [--sentences N]
[--profile smoke] [--set KEY=VALUE ...]` (default 3 seeds and the sweep's 100 training sentences; the
sweep's `smoke` profile swaps in the tiny encoder and `--set` overrides its spec, as tests/integration/docs
runs it: `--set train.batch_size=32 --set train.dev_subset=10`).
"""

import argparse
import statistics

import torch

import nerplat.trial.batching as batching
from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.models.length_cut import cheapest_cut
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.trial.loop import run_trial

COSTS = [0, 8, 32, 64, 128, 512]
WHOLE = 10**9  # a pass costs more than any padding: every batch in one pass
ONE_GROUP = 1e-9  # as MIN_GROUPS, lifts the cap: groups of `batches_per_group` batches at any set size


def trial(arm, seed: int, cost: int, min_groups: float) -> tuple[float, float, float]:
    defaults, quarter = cheapest_cut.__defaults__, batching.MIN_GROUPS
    cheapest_cut.__defaults__, batching.MIN_GROUPS = (cost,), min_groups
    try:
        result = run_trial(arm.trial_config({"train.lr": 1.96e-4}, seed=seed, eval_split=None))
    finally:
        cheapest_cut.__defaults__, batching.MIN_GROUPS = defaults, quarter
    timings = result.evaluations[-1].timings
    return timings.train, timings.tokens_per_second(), max(e.dev["micro_f1"] for e in result.evaluations)


def main(count: int, sentences: int, profile: str | None, overrides: list[str]) -> None:
    torch.set_num_threads(2)
    sample = f"samplers=[{{low_resource: {{size: {sentences}, partitions: 1}}}}]"
    overrides = ["train.threads=2", "resources.cpus_per_worker=2", sample, *overrides]
    arm = compile_plan(SpecSource(SWEEP_SPEC, profile, overrides=overrides), default_catalog()).arms[0]
    seeds = [TUNE_SEED - repeat for repeat in range(count)]
    rows = [(f"pieces at cost {cost}", cost, batching.MIN_GROUPS) for cost in COSTS]
    rows += [("whole batches", WHOLE, batching.MIN_GROUPS), ("sorted as one group", cheapest_cut.__defaults__[0], ONE_GROUP)]
    for name, cost, min_groups in rows:
        runs = [trial(arm, seed, cost, min_groups) for seed in seeds]
        train, tokens, best = (statistics.median(column) for column in zip(*runs))
        print(f"{name:>20}: training {train:.2f} s, {tokens:.0f} tokens/s, best dev {best:.3f} (medians of {count})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", nargs="?", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=100, help="training sentences (the sweep's 100)")
    parser.add_argument("--profile", help="a profile of the bench sweep (smoke: the tiny encoder)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="a spec override after the probe's own, as `nerplat run --set` takes it (tests: fewer epochs and dev sentences)",
    )  # fmt: skip
    args = parser.parse_args()
    main(args.seeds, args.sentences, args.profile, args.overrides)
