"""What a report was built from, as one digest, so a report whose inputs are unchanged is kept.

`nerplat run --resume` on an experiment with nothing left to run reads the same runs as the report
it ended with; analysing them again (statistics, plots, the corpora re-read for their statistics)
would write the same report. The digest covers what the analysis reads and how it is asked: the
runs' frames, the plan, the settings, the formats, the summary run the report is logged to, the
claims' registrations the evidence read (digest, intact, git date) and the analysis code itself
(this package's sources), so a changed run, spec, flag, registration or nerplat analysis builds a
new report. It is kept in the report folder's manifest (`report_folder.install`) with the
report's warnings, which a kept report repeats. `nerplat analyze` always builds anew.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nerplat.analysis.report_folder import report_record
from nerplat.analysis.run_frames import ExperimentRuns
from nerplat.analysis.settings import AnalysisSettings

INPUTS_KEY = "inputs_sha256"  # manifest key of the digest


def inputs_digest(
    runs: ExperimentRuns, settings: AnalysisSettings, formats: Sequence[str], registrations: Mapping[str, Any] | None = None
) -> str:
    """sha256 of everything a report of `runs` depends on (see the module docstring); `registrations`
    what the verdicts' evidence read of the claims' registrations (a registration committed since
    turns a verdict confirmatory, so the report is built again)."""
    digest = hashlib.sha256()
    for frame in (runs.replicates, runs.trials, runs.epochs, runs.chosen):
        digest.update(frame.write_json().encode())
    asked = {
        "plan": runs.plan, "settings": settings.model_dump(mode="json"), "formats": list(formats),
        "summary_run": runs.summary_run_id, "ignored": list(runs.ignored), "registrations": dict(registrations or {}),
    }  # fmt: skip
    digest.update(json.dumps(asked, sort_keys=True, default=str).encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def unchanged_report(out_dir: Path, previous: Sequence[str], digest: str) -> dict[str, Any] | None:
    """The manifest record of the report in `out_dir` when it was built from `digest` and each of its
    files (`previous`, from `report_folder.owned_files`) is still there; else None."""
    record = report_record(out_dir)
    if record.get(INPUTS_KEY) != digest or not previous or not all((out_dir / name).is_file() for name in previous):
        return None
    return record
