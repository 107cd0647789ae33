"""Analysis runs without torch or Ray: it reads MLflow and computes with Polars, SciPy, matplotlib."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from nerplat.analysis import report
from nerplat.bench import analysis_scale
from nerplat.analysis.report import dataset_statistics
from nerplat.cli import analyze_commands
dataset_statistics(["conll2003"])
heavy = sorted(m for m in ("torch", "ray", "transformers") if m in sys.modules)
print(",".join(heavy) or "none")
"""


@pytest.mark.slow
def test_analysis_never_imports_torch_or_ray():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "none"
