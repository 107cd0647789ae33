"""What a spec will cost before it runs: wall time and device-hours per arm, from earlier runs.

A trial of an arm is predicted as

    seconds = epochs x (training tokens of an epoch) x passes / (training tokens/s) + rest

- training tokens/s: the fast end (90th percentile), over earlier completed runs (tuning trials and
  replicates) of the same encoder on the same device in the same arithmetic, of
  `train_tokens / time_train_s`: the arm's own runs if it has any, else those of its objective
  (loss), else all of them. Other work on the machine only slows a run, so the fast end is the
  machine's own speed: the prediction is for the spec run alone (a store filled beside other work
  would otherwise predict that work too);
- training tokens of an epoch: from earlier runs of the same arm (`train_tokens / epochs`), else
  counted on the arm's training split (sampled, windowed by the encoder's tokenizer) by `work_of`;
- passes: 1 when the throughput comes from the arm's own runs or its objective's; from other
  objectives' runs, the forward and backward passes a batch of this arm's objective takes
  (`ObjectiveConfig.substeps`: 3 for OVA-AUC's B / I / O steps, k + 1 for COMAUC-2T), those runs
  taken as one pass a batch (most objectives; runs do not record their passes);
- rest: what a run spends outside training steps (start-up, dev and test evaluation, reports), the
  short end (10th percentile) of `wall - time_train_s` over earlier runs of the same arm (its dev
  set, its evaluation cadence), else over those of the same encoder and device.

An arm's trials are its tuning trials and replicates, every one counted at full length (a scheduler
that stops trials early makes the tune phase cheaper than predicted). Device-hours are trial seconds
x trials x the CPUs (or GPUs) a trial holds. An arm's own wall time is its trial seconds spread over
the trials this machine runs at once (its CPUs, or GPUs, over a trial's share, at most
`tune.max_concurrent`). The spec's wall time follows the runner's order: each arm's tuning in
rounds of that many trials, arm after arm; then the replicates look by look (`looks`: what each look
adds per arm), every arm's runs of a look in one queue that starts a run, in arm order, as soon as
its CPUs (GPUs) are free, so a look ends with its last run, whatever idles beside it. Ray's start
and the analysis are left out.

The device is what runs record in `nerplat.device` (`trial.device.device_label`: CPU model and
threads, or GPU name). Runs made before that tag existed match any device; a prediction from them
says so.
"""

from __future__ import annotations

import heapq
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from nerplat.plan.model import Arm, Plan
from nerplat.track import schema


@dataclass(frozen=True)
class MeasuredRun:
    """An earlier completed run, as far as its cost goes."""

    arm: str
    objective: str  # `nerplat.objective`: the loss it trained
    encoder: str
    device: str | None  # `nerplat.device`; None for runs made before the tag existed
    precision: str  # the arithmetic it ran (`nerplat.precision`, else its `train.precision` param)
    epochs: int
    train_tokens: float
    train_s: float
    wall_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.train_tokens / self.train_s

    @property
    def rest_s(self) -> float:
        return max(0.0, self.wall_s - self.train_s)


@dataclass(frozen=True)
class Machine:
    """What this machine offers trials: CPUs and GPUs, and the device label of a trial's share of them."""

    cpus: int
    gpus: int
    label_of: Callable[[Arm], str]  # the device label an arm's trials would record here
    precision_of: Callable[[Arm], str]  # the arithmetic an arm's trials would run here


@dataclass(frozen=True)
class EpochWork:
    """An epoch of an arm's trial before it runs: training sub-tokens, and passes a batch takes."""

    tokens: float
    passes: int


@dataclass(frozen=True)
class ArmCost:
    arm: str
    label: str
    trials: int  # tuning trials and replicates
    device: str
    precision: str
    runs: int  # earlier runs the throughput is read from (0: no prediction)
    basis: str  # where the figures come from, or why there are none
    trial_s: float | None = None
    at_once: int = 1
    wall_s: float | None = None  # its trials alone on this machine
    device_hours: float | None = None
    unit: str = "CPU"  # what device-hours count: CPU (cores) or GPU
    held: float = 1.0  # CPUs (GPUs) a trial holds


@dataclass(frozen=True)
class SpecCost:
    arms: list[ArmCost]
    wall_s: float | None  # None when some arm has no prediction
    device_hours: dict[str, float]  # by unit, over the arms that have a prediction
    looks: int = 1  # looks of replicates the wall time counts

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """One line per arm and a total, for `nerplat plan --cost`."""
        lines = []
        for cost in self.arms:
            if cost.trial_s is None:
                lines.append(f"cost {cost.label}: no prediction: {cost.basis}")
                continue
            lines.append(
                f"cost {cost.label}: {cost.trials} trials x {_duration(cost.trial_s)}, {cost.at_once} at a time: "
                f"wall {_duration(cost.wall_s)}, {cost.device_hours:.2f} {cost.unit}-hours ({cost.basis})"
            )
        hours = ", ".join(f"{value:.2f} {unit}-hours" for unit, value in self.device_hours.items()) or "no device-hours"
        wall = _duration(self.wall_s) if self.wall_s is not None else "unknown (an arm has no earlier runs to go by)"
        order = f"tuning arm by arm, then {self.looks} look{'s' if self.looks > 1 else ''} of replicates"
        lines.append(f"predicted wall time {wall} ({order}; Ray's start and the analysis left out); {hours}")
        return lines


def predict_cost(
    plan: Plan, runs: Iterable[MeasuredRun], machine: Machine, work_of: Callable[[Arm], EpochWork], looks: Sequence[Mapping[str, int]] | None = None
) -> SpecCost:
    """Each arm's predicted trial seconds, wall time and device-hours, and the spec's wall time over
    `looks` (default: one look of every replicate) (module docstring)."""
    runs = list(runs)
    looks = looks or [{arm.id: len(arm.replicates) for arm in plan.arms}]
    arms = [_arm_cost(plan, arm, runs, machine, work_of) for arm in plan.arms]
    predicted = [cost for cost in arms if cost.wall_s is not None]
    hours: dict[str, float] = {}
    for cost in predicted:
        hours[cost.unit] = hours.get(cost.unit, 0.0) + cost.device_hours
    wall = _spec_wall(plan, arms, machine, looks) if len(predicted) == len(arms) else None
    return SpecCost(arms=arms, wall_s=wall, device_hours=hours, looks=len(looks))


def _spec_wall(plan: Plan, costs: list[ArmCost], machine: Machine, looks: Sequence[Mapping[str, int]]) -> float:
    """Tuning arm by arm in rounds of `at_once` trials, then each look's replicates in one queue."""
    wall = sum(math.ceil(arm.tune_trials / cost.at_once) * cost.trial_s for arm, cost in zip(plan.arms, costs))
    for look in looks:
        queue = [cost for cost in costs for _ in range(look.get(cost.arm, 0))]
        if queue:
            wall += _makespan(queue, {"CPU": machine.cpus, "GPU": machine.gpus}, at_most=max(cost.at_once for cost in queue))
    return wall


def _makespan(queue: list[ArmCost], offered: dict[str, float], at_most: int) -> float:
    """When the last run of `queue` ends if each starts, in order, once its CPUs (GPUs) are free and
    fewer than `at_most` run (Ray Tune's FIFO placement of one Tuner's trials)."""
    free, running, now, last = dict(offered), [], 0.0, 0.0  # running: a heap of (end, unit, held)
    for cost in queue:
        while running and (len(running) >= at_most or free[cost.unit] < cost.held):
            now, unit, held = heapq.heappop(running)
            free[unit] += held
        free[cost.unit] -= cost.held
        heapq.heappush(running, (now + cost.trial_s, cost.unit, cost.held))
        last = max(last, now + cost.trial_s)
    return last


def _arm_cost(plan: Plan, arm: Arm, runs: list[MeasuredRun], machine: Machine, work_of: Callable[[Arm], EpochWork]) -> ArmCost:
    encoder = arm.fixed["encoder"]["name"]
    device, precision = machine.label_of(arm), machine.precision_of(arm)
    trials = arm.tune_trials + len(arm.replicates)
    same = dict(arm=arm.id, label=arm.label, trials=trials, device=device, precision=precision)
    alike = [run for run in runs if run.encoder == encoder and run.precision == precision and run.device == device]
    recorded = "on this device"
    if not alike:
        alike = [run for run in runs if run.encoder == encoder and run.precision == precision and run.device is None]
        recorded = "device not recorded"
    if not alike:
        return ArmCost(**same, runs=0, basis=f"no earlier completed runs of {encoder} in {precision} on {device}")
    own = [run for run in alike if run.arm == arm.id]
    of_objective = [run for run in alike if run.objective == arm.objective]
    measured = own or of_objective or alike
    tokens_per_s = _fast_end([run.tokens_per_s for run in measured], high=True)
    if own:
        epoch_tokens, passes = statistics.median(run.train_tokens / run.epochs for run in own), 1
        basis = f"{len(measured)} runs of {encoder} of this arm, {recorded}"
    else:
        work = work_of(arm)
        epoch_tokens, passes = work.tokens, 1 if of_objective else work.passes
        whose = f"with {arm.objective}" if of_objective else f"(none with {arm.objective})"
        basis = f"{len(measured)} runs of {encoder} {whose}, {recorded}; epoch tokens counted on its data"
        basis += f", {passes} passes a batch" if passes > 1 else ""
    rest = _fast_end([run.rest_s for run in own or alike], high=False)
    trial_s = arm.fixed["train"]["epochs"] * epoch_tokens * passes / tokens_per_s + rest
    resources = arm.resources
    unit, held, offered = ("GPU", resources.gpus_per_worker, machine.gpus) if resources.gpus_per_worker else ("CPU", resources.cpus_per_worker, machine.cpus)
    held *= resources.workers
    at_once = max(1, math.floor(offered / held)) if held else 1
    if plan.tune is not None and plan.tune.max_concurrent:
        at_once = min(at_once, plan.tune.max_concurrent)
    return ArmCost(
        **same, runs=len(measured), basis=basis, trial_s=trial_s, at_once=at_once,
        wall_s=trials * trial_s / min(at_once, max(1, trials)), device_hours=trials * trial_s * held / 3600, unit=unit, held=held,
    )  # fmt: skip


def spec_cost(plan: Plan, tracking_uri: str | None, looks: Sequence[Mapping[str, int]] | None = None) -> SpecCost:
    """`predict_cost` from the runs of the MLflow store at `tracking_uri` (else the one `nerplat run`
    would use here), on this machine; a store that does not exist has no runs."""
    from pathlib import Path

    from nerplat.track.experiment_reader import open_client
    from nerplat.track.store import resolve_tracking_uri, sqlite_path

    uri = tracking_uri or resolve_tracking_uri(plan.tracking_uri, Path("."))
    database = sqlite_path(uri)
    runs = []
    if database is None or database.exists():
        runs = measured_runs(open_client(uri), (arm.fixed["encoder"]["name"] for arm in plan.arms))
    return predict_cost(plan, runs, this_machine(), epoch_work_on_data, looks)


def measured_runs(client: Any, encoders: Iterable[str]) -> list[MeasuredRun]:
    """Completed tuning trials and replicates of `encoders` in every experiment of the MLflow store."""
    from nerplat.track.experiment_reader import completed_runs_of_encoders

    return [measured for run in completed_runs_of_encoders(client, encoders) if (measured := measured_run(run)) is not None]


def measured_run(run: Any) -> MeasuredRun | None:
    """An MLflow run's cost figures; None when it is not a completed trial or replicate that timed its training."""
    tags, metrics, params = run.data.tags, run.data.metrics, run.data.params
    if tags.get(schema.KIND) not in ("trial", "replicate") or run.info.end_time is None:
        return None
    if not metrics.get("time_train_s") or not metrics.get("train_tokens") or "train.epochs" not in params:
        return None
    precision = tags.get(schema.PRECISION) or params.get("train.precision", "fp32")
    if precision == "auto":  # resolved on a device the run did not record
        return None
    return MeasuredRun(
        arm=tags.get(schema.ARM, ""),
        objective=tags.get(schema.OBJECTIVE, ""),
        encoder=tags[schema.ENCODER],
        device=tags.get(schema.DEVICE),
        precision=precision,
        epochs=int(params["train.epochs"]),
        train_tokens=metrics["train_tokens"],
        train_s=metrics["time_train_s"],
        wall_s=(run.info.end_time - run.info.start_time) / 1000,
    )


def this_machine() -> Machine:
    """This machine's CPUs and GPUs, and the device and arithmetic an arm's trials would get here."""
    import torch

    from nerplat.trial.device import device_label, resolve_precision

    def device_of(arm: Arm) -> torch.device:
        return torch.device("cuda", 0) if arm.resources.gpus_per_worker and torch.cuda.is_available() else torch.device("cpu")

    def label_of(arm: Arm) -> str:
        if arm.resources.gpus_per_worker and not torch.cuda.is_available():
            return "cuda (no GPU on this machine)"
        return device_label(device_of(arm), arm.fixed["train"].get("threads") or max(1, int(arm.resources.cpus_per_worker)))

    def precision_of(arm: Arm) -> str:
        return resolve_precision(arm.fixed["train"].get("precision", "fp32"), device_of(arm))

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return Machine(cpus=os.cpu_count() or 1, gpus=gpus, label_of=label_of, precision_of=precision_of)


def epoch_work_on_data(arm: Arm) -> EpochWork:
    """Training sub-tokens of one epoch of the arm's first replicate (its sampled split, windowed as
    trials window it), and the passes a batch of its objective takes on the split's labels."""
    from nerplat.config.trial import Component, DatasetRef, EncoderSettings
    from nerplat.models.encoders import load_encoder
    from nerplat.objectives.registry import OBJECTIVES
    from nerplat.trial.data import prepare_corpus
    from nerplat.trial.variant_registry import featurize_for_head

    fixed = arm.fixed
    replicate = arm.replicates[0] if arm.replicates else None
    seed, partition = (replicate.seed, replicate.partition) if replicate else (0, arm.partitions[0])
    samplers = tuple(Component.model_validate(sampler) for sampler in fixed["samplers"])
    corpus = prepare_corpus(DatasetRef.model_validate(fixed["dataset"]), samplers, seed=seed, partition=partition).corpus
    settings = EncoderSettings.model_validate(fixed["encoder"])
    tokenizer = load_encoder(settings, train=corpus.train, seed=seed).tokenizer
    features = featurize_for_head(Component.model_validate(fixed["head"]), corpus.name, corpus.train, tokenizer, settings, corpus.labels())
    objective = Component.model_validate(fixed["objective"])
    passes = OBJECTIVES.get(objective.name).config.model_validate(objective.params).substeps(corpus.labels())
    return EpochWork(tokens=float(features.token_counts().sum()), passes=passes)


def _fast_end(values: list[float], high: bool) -> float:
    """The 90th percentile of `values` (high) or the 10th (module docstring)."""
    if len(values) < 2:
        return values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[-1] if high else deciles[0]


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"
