"""docs/precision-check.sh on a tiny spec: both runs, then one paired cell judged against its noise.

The spec is as small as the check allows: 2 seeds (an sd needs two replicates), 20 training and 20 dev
sentences."""

import re

import pytest
from docs_scripts import run_docs_script

pytestmark = pytest.mark.slow

TINY = """\
experiment: precision_check_tiny
dataset: conll2003
model: {encoder: tiny, max_length: 64}
train: {epochs: 1, batch_size: 16, lr: 1.0e-3, dev_subset: 20, threads: 1}
samplers: [{low_resource: {size: 20, partitions: 1}}]
methods:
  ce: {loss: ce}
replicate: {seeds: 2}
"""
SUMMARY = re.compile(
    r"^(?P<passed>\d+) of (?P<cells>\d+) cells within the replicate noise "
    r"\(\|auto - fp32\| <= sd of the fp32 replicates\) on test_micro_f1$"
)
RUNS = ["== fp32", "== fp32 done", "== auto", "== auto done"]


def test_the_check_runs_fp32_and_auto_and_judges_each_cell(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY)
    result = run_docs_script("precision-check.sh", str(spec), "", str(tmp_path / "work"), timeout=900)
    output = f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert result.returncode in (0, 1), output
    lines = result.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("== ")] == RUNS, output
    summary = SUMMARY.match(lines[-1])
    assert summary, output
    assert summary["cells"] == "1" and result.returncode == (0 if summary["passed"] == "1" else 1)
    assert "within_noise" in result.stdout and (tmp_path / "work" / "mlflow.db").is_file()
