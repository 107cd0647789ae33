"""`nerplat run`'s resume hint and end-of-run summary."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from nerplat.cli.run_commands import print_summary, resume_command
from nerplat.run.runner import ArmOutcome, RunSummary


def test_the_resume_hint_repeats_every_option_that_locates_the_experiment():
    hint = resume_command(Path("specs/a b.yaml"), profile="cpu", workdir=Path("/w"), storage="s3://bucket/ray", address="ray://head:10001")
    assert hint == "nerplat run 'specs/a b.yaml' --profile cpu --workdir /w --storage s3://bucket/ray --address ray://head:10001 --resume"
    assert resume_command(Path("s.yaml"), profile=None, workdir=Path("."), storage=None, address=None) == "nerplat run s.yaml --resume"


def test_the_summary_prints_every_failure_in_full_and_every_unconverged_cell():
    buffer = io.StringIO()
    failure = "ray.exceptions.ActorDiedError: The actor died unexpectedly.\n\tpid: 12 [/x]"
    summary = RunSummary(
        "e", "sqlite:///m.db", "1",
        [ArmOutcome("d/s/ce", errors=[failure, "tuning incomplete: 1 of 2 trials finished"])],
        unconverged=("d/s/ce: dev micro F1 still rising at the last epoch",),
    )
    print_summary(summary, Console(file=buffer, width=300))
    text = buffer.getvalue()
    assert "The actor died unexpectedly." in text and "pid: 12 [/x]" in text  # every line, markup kept literal
    assert "tuning incomplete: 1 of 2" in text
    assert "warning: d/s/ce: dev micro F1 still rising" in text
    assert "no report was written" in text
