"""What arithmetic an experiment's trials ran, and the host calibration behind `auto`: the lines
docs/results/reproduce.sh writes into a report's RUN.md, run on the host that ran the experiment.

    python -m nerplat.estimate.precision_used --tracking-uri URI EXPERIMENT

The arithmetic is what each tuning trial and replicate recorded (`nerplat.precision`,
`nerplat.eval_precision`: `auto` resolved by its worker); the calibration is this host's cached one
(`trial.precision_calibration`) at the threads the runs' device tags name. Where runs trained or
evaluated in the arithmetic that calibration measured slower, a line says so: their wall time paid for it.
Exit code 0, 2 on bad input (no such experiment).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from nerplat.errors import UserInputError
from nerplat.track import schema
from nerplat.track.experiment_reader import find_experiment, open_client, search_all
from nerplat.trial.precision_calibration import HostCalibration, HostKey, cached_calibration

THREADS = re.compile(r" x(\d+) threads$")  # the end of a CPU device label (`trial.device.device_label`)
PHASES = (("train", "training", schema.PRECISION), ("evaluate", "evaluation", schema.EVAL_PRECISION))


def precision_lines(runs: Iterable[Any], calibration_of: Any = cached_calibration) -> list[str]:
    """Markdown bullets: the arithmetic the runs recorded, with their counts; each calibration of this host
    at the threads they ran with; and the runs whose arithmetic that calibration measured slower."""
    tags = [run.data.tags for run in runs]
    if not tags:
        return ["- precision used: no trial or replicate runs to read it from"]
    used = Counter((t.get(schema.PRECISION, "unrecorded"), t.get(schema.EVAL_PRECISION, "unrecorded")) for t in tags)
    lines = [
        "- precision used (the runs' tags nerplat.precision, nerplat.eval_precision): "
        + "; ".join(f"training {train}, evaluation {evaluate} in {count} runs" for (train, evaluate), count in used.items())
    ]
    threads = sorted({int(m.group(1)) for t in tags if (m := THREADS.search(t.get(schema.DEVICE, "")))})
    for count in threads:
        calibration: HostCalibration | None = calibration_of(HostKey.here(count))
        if calibration is None:
            lines.append(f"- no precision calibration of this host at {count} threads (auto read no measurement)")
            continue
        lines.append(f"- {calibration.line()}")
        lines += _slower_lines(calibration, [t for t in tags if t.get(schema.DEVICE, "").endswith(f" x{count} threads")])
    return lines


def _slower_lines(calibration: HostCalibration, tags: list[dict[str, str]]) -> list[str]:
    """A line per phase whose runs ran the arithmetic `calibration` measured slower than the other."""
    lines = []
    for phase, name, tag in PHASES:
        choice = calibration.choice(phase)
        slower = [t for t in tags if t.get(tag) in ("fp32", "bf16") and t[tag] != choice.precision]
        if slower:
            ran = slower[0][tag]
            lines.append(
                f"- {len(slower)} runs' {name} ran in {ran}, slower on this host than {choice.precision} "
                f"by the calibration above ({choice.reason})"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nerplat.estimate.precision_used", description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment")
    parser.add_argument("--tracking-uri", required=True)
    args = parser.parse_args(argv)
    try:
        client = open_client(args.tracking_uri)
        experiment_id = find_experiment(client, args.experiment).experiment_id
    except UserInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return UserInputError.exit_code
    runs = [run for kind in ("trial", "replicate") for run in search_all(client, experiment_id, kind)]
    print("\n".join(precision_lines(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
