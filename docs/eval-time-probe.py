"""Where a dev evaluation's time goes in the bench sweep's trial (docs/performance.md).

Sets up the trial of `platform/nerplat/bench/sweep.yaml` (100 CoNLL-2003 sentences, MiniLM-L6, dev
passes in bf16 where the CPU runs it natively) in-process on 2 threads, trains its first 2 epochs
at learning rate 1.96e-4, then times, in turns, R times each:

- `evaluate`: the session's whole dev evaluation (what a trial's `timings.evaluate` counts);
- `forward, one autocast`: the forward passes alone, the split's batches under one autocast, so each
  weight is cast to bf16 once per evaluation (autocast caches casts until its outermost context
  exits), not what a trial runs;
- `forward, autocast per batch`: the same passes, each batch under its own autocast (the weights cast
  again for every batch), as `trial.predict.head_outputs` runs them;
- `forward, bf16 weights`: the same passes without autocast on a copy of the tagger in bf16 (every
  operation in bf16, the residual stream too; the copy's time is `bf16 copy`), not what a trial runs;
- `forward, int8 weights`: the passes without autocast on a copy whose linear layers torch's dynamic
  quantization made int8 (`quantize_dynamic`; the copy's time is `int8 copy`), not what a trial runs;
- `metrics`: `metrics.evaluate_tags` (seqeval) on the predicted tags.

It also prints how many dev words each copy labels differently from autocast.

Prints each part's median seconds and its share of `evaluate`.
Run from the repository root: `.venv/bin/python docs/eval-time-probe.py [R]` (default 9).
"""

import copy
import statistics
import sys
import time

import torch

from nerplat.bench.runner_overhead import SWEEP_SPEC
from nerplat.catalog import default_catalog
from nerplat.config.experiment import TUNE_SEED
from nerplat.metrics import evaluate_tags
from nerplat.plan.compiler import compile_plan
from nerplat.trial.batching import ids_to_tags
from nerplat.trial.device import autocast
from nerplat.trial.predict import decode_sentences, fp32_scores, head_outputs
from nerplat.trial.session import TrialSession


def forward(session: TrialSession, per_batch: bool) -> None:
    inference, tagger = session.inference, session.tagger
    tagger.eval()
    batches = session.data.dev.batches(inference.batch_size, seed=None, max_tokens=inference.max_tokens)
    with torch.inference_mode():
        if per_batch:
            for batch in batches:
                with autocast(inference.precision, inference.device):
                    tagger(batch)
        else:
            with autocast(inference.precision, inference.device):
                for batch in batches:
                    tagger(batch)


def bf16_copy(session: TrialSession) -> torch.nn.Module:
    return copy.deepcopy(session.tagger).to(torch.bfloat16).eval()


def int8_copy(session: TrialSession) -> torch.nn.Module:
    return torch.ao.quantization.quantize_dynamic(copy.deepcopy(session.tagger).eval(), {torch.nn.Linear}, dtype=torch.qint8)


def forward_plain(session: TrialSession, tagger: torch.nn.Module) -> list:
    inference = session.inference
    with torch.inference_mode():
        return [
            (batch.windows.tolist(), fp32_scores(tagger(batch)))
            for batch in session.data.dev.batches(inference.batch_size, seed=None, max_tokens=inference.max_tokens)
        ]


def words_differing(session: TrialSession, exact: list[list[int]], tagger: torch.nn.Module) -> int:
    labelled = decode_sentences(session.tagger.decode, session.data.dev, forward_plain(session, tagger))
    return sum(a != b for e, r in zip(exact, labelled) for a, b in zip(e, r))


def main(repeats: int) -> None:
    torch.set_num_threads(2)
    arm = compile_plan(SWEEP_SPEC, default_catalog(), overrides=["train.threads=2"]).arms[0]
    session = TrialSession(arm.trial_config({"train.lr": 1.96e-4}, seed=TUNE_SEED, eval_split=None), keep_weights=False)
    session.setup()
    for epoch in (1, 2):
        session.train_epoch(epoch)
    data = session.data
    gold = [list(s.tags) for s in data.dev_sentences]
    exact = decode_sentences(session.tagger.decode, data.dev, head_outputs(session.tagger, data.dev, session.inference))
    predicted = ids_to_tags(exact, data.labels)
    shadow, quantized = bf16_copy(session), int8_copy(session)
    differing = {name: words_differing(session, exact, tagger) for name, tagger in (("bf16", shadow), ("int8", quantized))}
    parts = {
        "evaluate": session.evaluate,
        "forward, one autocast": lambda: forward(session, per_batch=False),
        "forward, autocast per batch": lambda: forward(session, per_batch=True),
        "bf16 copy": lambda: bf16_copy(session),
        "forward, bf16 weights": lambda: forward_plain(session, shadow),
        "int8 copy": lambda: int8_copy(session),
        "forward, int8 weights": lambda: forward_plain(session, quantized),
        "metrics": lambda: evaluate_tags(gold, predicted),
    }
    seconds = {name: [] for name in parts}
    for _ in range(repeats):
        for name, part in parts.items():
            started = time.perf_counter()
            part()
            seconds[name].append(time.perf_counter() - started)
    whole = statistics.median(seconds["evaluate"])
    print(f"{len(data.dev_sentences)} dev sentences, precision {session.inference.precision}, {repeats} turns")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"{name:>28}: median {median:.4f} s ({min(times):.4f}-{max(times):.4f}), {median / whole:.3f} of evaluate")
    words = sum(len(sentence) for sentence in exact)
    for name, count in differing.items():
        print(f"{name} weights label {count} of {words} dev words differently from autocast")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
