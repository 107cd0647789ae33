"""What a spec will cost before it runs: wall time and device-hours per arm, from earlier runs of
this host, else from a short calibration run on it.

A trial of an arm is predicted as

    seconds = epochs x (training tokens of an epoch) x passes / (training tokens/s) + rest

- training tokens/s: the fast end (90th percentile), over earlier completed runs (tuning trials and
  replicates) of the same encoder on the same device in the same arithmetic, of
  `train_tokens / time_train_s`: the arm's own runs if it has any, else those of its objective
  (loss), else all of them. Other work on the machine only slows a run, so the fast end is the
  machine's own speed: the prediction is for the spec run alone (a store filled beside other work
  would otherwise predict that work too);
- training tokens of an epoch: from earlier runs of the same arm (`train_tokens / epochs`, the
  epochs a run trained: `estimate.store_runs`), else
  counted on the arm's training split (sampled, windowed by the encoder's tokenizer) by `work_of`;
- passes: 1 when the throughput comes from the arm's own runs or its objective's; from other
  objectives' runs, the forward and backward passes a batch of this arm's objective takes
  (`ObjectiveConfig.substeps`: 3 for OVA-AUC's B / I / O steps, k + 1 for COMAUC-2T), those runs
  taken as one pass a batch (most objectives; runs do not record their passes);
- rest: what a run spends outside training steps (start-up, dev and test evaluation, reports), the
  short end (10th percentile) of `wall - time_train_s` (wall: the trial's own seconds, not the time
  its MLflow run waited in a look's queue) over earlier runs of the same arm (its dev
  set, its evaluation cadence), else over those of the same encoder and device.

Where the store has no run of an arm's encoder on this device in its arithmetic, a `Calibration`
of that encoder and the arm's head at the arm's batch size and max_length (`estimate.calibration`)
gives the training tokens/s of one pass a batch (so the passes of the arm's objective multiply), and
the rest is its start-up plus the arm's dev evaluations (every `train.eval_every` epochs and after the
last, of its dev subset) and a replicate's test evaluation (spread over the arm's trials: tuning
trials score no test split) at the calibration's evaluation speed, in sub-tokens/s as `EpochWork`
counts them (an MRC head scores a sentence once per entity type). The head is part of what a
calibration stands for (`calibration_head`): on a static word-embedding encoder a BiLSTM(-CRF) head is
most of a step. Heads that choose thresholds on dev evaluate slower than the calibration, which
does not choose them.

Every trial is counted at its epoch cap (`train.epochs`): early stopping can only shorten it.

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
says so. The arithmetic is what `auto` resolves to here (`trial.precision_calibration`: measured
on this host, cached), and the lines begin with what it chose for each arm asking for it and why.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nerplat.plan.model import Arm, Plan


@dataclass(frozen=True)
class MeasuredRun:
    """An earlier completed run, as far as its cost goes."""

    arm: str
    objective: str  # `nerplat.objective`: the loss it trained
    encoder: str
    device: str | None  # `nerplat.device`; None for runs made before the tag existed
    precision: str  # the arithmetic it ran (`nerplat.precision`, else its `train.precision` param)
    epochs: int  # epochs it trained (its cap where it did not log where it stopped)
    train_tokens: float
    train_s: float
    wall_s: float  # the trial's own seconds
    head: str | None = None  # as `calibration_head` writes it, from the run's head params; None where it logged none

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
    # what `auto` resolves to for the arms asking for it, and why (`estimate.host.precision_lines`)
    precision_lines: Callable[[Sequence[Arm]], list[str]] = lambda arms: []


@dataclass(frozen=True)
class EpochWork:
    """An arm's trial before it runs: the sub-tokens its encoder reads in an epoch of training, the
    passes a batch takes, and the sub-tokens a dev evaluation and the test evaluation read (those two
    read only with a calibration). Sub-tokens are counted as runs count `train_tokens`: every row of a
    batch without its padding, so an MRC window counts once per query, with the query."""

    tokens: float
    passes: int
    dev_tokens: float = 0.0
    test_tokens: float = 0.0


CalibrationKey = tuple[str, str, str, int, int, str]  # encoder, device, arithmetic, batch size, max_length, head


@dataclass(frozen=True)
class Calibration:
    """This host's speed for an encoder and head at a batch size and max_length in an arithmetic,
    timed by a short training run where the store has no earlier runs to go by (`estimate.calibration`)."""

    encoder: str
    device: str
    precision: str
    batch_size: int
    max_length: int
    head: str  # the head it stands for, with the parameters that change a step's cost (`calibration_head`)
    trained: str  # what it trained: head and objective, e.g. "bilstm_crf(hidden_size=300, layers=1) by crf"
    steps: int  # training steps timed
    train_tokens_per_s: float  # one pass a batch: the measured speed times the passes of its objective
    eval_tokens_per_s: float  # sub-tokens a dev evaluation reads, as `EpochWork.dev_tokens` counts them
    setup_s: float  # from the start of the trial to its first optimiser step
    seconds: float  # what the calibration took, start to end

    @property
    def key(self) -> CalibrationKey:
        return (self.encoder, self.device, self.precision, self.batch_size, self.max_length, self.head)

    def line(self) -> str:
        return (
            f"calibration run here: {self.steps} training steps of {self.encoder} with {self.trained} at batch "
            f"{self.batch_size}, max_length {self.max_length} in {self.precision} on {self.device}: "
            f"{self.train_tokens_per_s:.0f} tokens/s a pass, dev {self.eval_tokens_per_s:.0f} tokens/s, "
            f"start-up {duration(self.setup_s)} (took {duration(self.seconds)})"
        )


def calibration_key(arm: Arm, machine: Machine) -> CalibrationKey:
    """What a calibration must share with an arm to stand for it: encoder, device, arithmetic, batch
    size, max_length and head (`calibration_head`)."""
    encoder = arm.fixed["encoder"]
    return (
        encoder["name"],
        machine.label_of(arm),
        machine.precision_of(arm),
        arm.fixed["train"]["batch_size"],
        encoder["max_length"],
        calibration_head(arm),
    )


def calibration_head(arm: Arm) -> str:
    """The arm's head as a step's cost sees it (`head_label`)."""
    head = arm.fixed["head"]
    return head_label(head["name"], head.get("params", {}))


def head_label(name: str, params: Mapping[str, Any]) -> str:
    """A head by its name and parameters but dropout (a mask, the same work at any rate), e.g.
    `bilstm_crf(hidden_size=300, layers=1)`: what an arm's calibration and a run's cost are keyed by."""
    sized = ", ".join(f"{key}={value}" for key, value in sorted(params.items()) if key != "dropout")
    return f"{name}({sized})" if sized else name


@dataclass(frozen=True)
class ArmCost:
    arm: str
    label: str
    trials: int  # tuning trials and replicates
    device: str
    precision: str
    runs: int  # earlier runs the throughput is read from (0: from a calibration, or no prediction)
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
    calibrations: list[Calibration] = field(default_factory=list)  # run here for arms without earlier runs
    precision: list[str] = field(default_factory=list)  # what `auto` resolves to here, and why

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """One line per arm and a total, for `nerplat plan --cost`."""
        lines = self.precision + [calibration.line() for calibration in self.calibrations]
        for cost in self.arms:
            if cost.trial_s is None:
                lines.append(f"cost {cost.label}: no prediction: {cost.basis}")
                continue
            lines.append(
                f"cost {cost.label}: {cost.trials} trials x {duration(cost.trial_s)}, {cost.at_once} at a time: "
                f"wall {duration(cost.wall_s)}, {cost.device_hours:.2f} {cost.unit}-hours ({cost.basis})"
            )
        hours = ", ".join(f"{value:.2f} {unit}-hours" for unit, value in self.device_hours.items()) or "no device-hours"
        wall = duration(self.wall_s) if self.wall_s is not None else "unknown (an arm has no earlier runs to go by)"
        order = f"tuning arm by arm, then {self.looks} look{'s' if self.looks > 1 else ''} of replicates"
        lines.append(
            f"predicted wall time {wall} ({order}; every run at its epoch cap: early stopping can only shorten it; "
            f"Ray's start and the analysis left out); {hours}"
        )
        return lines


def predict_cost(
    plan: Plan,
    runs: Iterable[MeasuredRun],
    machine: Machine,
    work_of: Callable[[Arm], EpochWork],
    looks: Sequence[Mapping[str, int]] | None = None,
    calibrations: Iterable[Calibration] = (),
) -> SpecCost:
    """Each arm's predicted trial seconds, wall time and device-hours, and the spec's wall time over
    `looks` (default: one look of every replicate) (module docstring)."""
    runs, calibrated = list(runs), {calibration.key: calibration for calibration in calibrations}
    looks = looks or [{arm.id: len(arm.replicates) for arm in plan.arms}]
    arms = [_arm_cost(plan, arm, runs, machine, work_of, calibrated) for arm in plan.arms]
    predicted = [cost for cost in arms if cost.wall_s is not None]
    hours: dict[str, float] = {}
    for cost in predicted:
        hours[cost.unit] = hours.get(cost.unit, 0.0) + cost.device_hours
    wall = _spec_wall(plan, arms, machine, looks) if len(predicted) == len(arms) else None
    used = {calibration_key(arm, machine) for arm in plan.arms}
    return SpecCost(
        arms=arms, wall_s=wall, device_hours=hours, looks=len(looks),
        calibrations=[c for k, c in calibrated.items() if k in used], precision=machine.precision_lines(plan.arms),
    )  # fmt: skip


def uncalibrated(plan: Plan, runs: Iterable[MeasuredRun], machine: Machine) -> list[Arm]:
    """Arms with no earlier run of their encoder on this device in their arithmetic: those a
    calibration stands for."""
    runs = list(runs)
    return [arm for arm in plan.arms if not _alike(arm, runs, machine)[0]]


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


def _alike(arm: Arm, runs: list[MeasuredRun], machine: Machine) -> tuple[list[MeasuredRun], str]:
    """Runs of the arm's encoder and head in its arithmetic on this device, else on an unrecorded one;
    and which. A run that logged no head counts for any (on a transformer the head costs little; on
    static word vectors a BiLSTM head is the step, so another head's runs never stand for it)."""
    encoder, device, precision = arm.fixed["encoder"]["name"], machine.label_of(arm), machine.precision_of(arm)
    head = calibration_head(arm)
    same = [run for run in runs if run.encoder == encoder and run.precision == precision and run.head in (head, None)]
    alike = [run for run in same if run.device == device]
    if alike:
        return alike, "on this device"
    return [run for run in same if run.device is None], "device not recorded"


def _arm_cost(
    plan: Plan,
    arm: Arm,
    runs: list[MeasuredRun],
    machine: Machine,
    work_of: Callable[[Arm], EpochWork],
    calibrated: Mapping[CalibrationKey, Calibration],
) -> ArmCost:
    encoder = arm.fixed["encoder"]["name"]
    device, precision = machine.label_of(arm), machine.precision_of(arm)
    trials = arm.tune_trials + len(arm.replicates)
    same = dict(arm=arm.id, label=arm.label, trials=trials, device=device, precision=precision)
    alike, recorded = _alike(arm, runs, machine)
    if alike:
        measured, basis, trial_s = _from_runs(arm, alike, recorded, work_of)
    elif (calibration := calibrated.get(calibration_key(arm, machine))) is not None:
        measured, basis, trial_s = 0, *_from_calibration(arm, calibration, work_of(arm))
    else:
        return ArmCost(**same, runs=0, basis=f"no earlier completed runs of {encoder} in {precision} on {device}")
    resources = arm.resources
    unit, held, offered = (
        ("GPU", resources.gpus_per_worker, machine.gpus)
        if resources.gpus_per_worker
        else ("CPU", resources.cpus_per_worker, machine.cpus)
    )
    held *= resources.workers
    at_once = max(1, math.floor(offered / held)) if held else 1
    if plan.tune is not None and plan.tune.max_concurrent:
        at_once = min(at_once, plan.tune.max_concurrent)
    return ArmCost(
        **same, runs=measured, basis=basis, trial_s=trial_s, at_once=at_once,
        wall_s=trials * trial_s / min(at_once, max(1, trials)), device_hours=trials * trial_s * held / 3600, unit=unit, held=held,
    )  # fmt: skip


def _from_runs(arm: Arm, alike: list[MeasuredRun], recorded: str, work_of: Callable[[Arm], EpochWork]) -> tuple[int, str, float]:
    """Runs read, basis and trial seconds from earlier runs of the arm's encoder (module docstring)."""
    encoder = arm.fixed["encoder"]["name"]
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
    return len(measured), basis, arm.fixed["train"]["epochs"] * epoch_tokens * passes / tokens_per_s + rest


def _from_calibration(arm: Arm, calibration: Calibration, work: EpochWork) -> tuple[str, float]:
    """Basis and trial seconds from this host's calibration (module docstring)."""
    train = arm.fixed["train"]
    epochs, every = train["epochs"], train.get("eval_every", 1)
    evaluations = epochs // every + (1 if epochs % every else 0)
    tests = len(arm.replicates) / max(1, arm.tune_trials + len(arm.replicates))  # tuning trials score no test split
    scored = evaluations * work.dev_tokens + tests * work.test_tokens
    rest = calibration.setup_s + scored / calibration.eval_tokens_per_s
    basis = f"calibrated here ({calibration.steps} steps of {calibration.encoder} with {calibration.trained})"
    basis += "; epoch tokens counted on its data"
    basis += f", {work.passes} passes a batch" if work.passes > 1 else ""
    return basis, epochs * work.tokens * work.passes / calibration.train_tokens_per_s + rest


def _fast_end(values: list[float], high: bool) -> float:
    """The 90th percentile of `values` (high) or the 10th (module docstring)."""
    if len(values) < 2:
        return values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[-1] if high else deciles[0]


def duration(seconds: float) -> str:
    """Seconds as people read a wall time: s, min or h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"
