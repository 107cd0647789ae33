"""What a run read, as MLflow records it: each corpus and plugin file with its sha256, a dataset input.

MLflow's dataset tracking (`MlflowClient.log_inputs`) is where a run's inputs belong: the run's
page lists them under "Datasets used", and `search_runs` returns them with the run. One dataset per
file, named for the file ("conll2003/train.txt", "plugin my_loss:my_loss.py"), its context tag
(`mlflow.data.context`) saying `corpus` or `plugin`. MLflow's digest column holds 36 characters,
so it keeps the first 32 hex digits of the sha256 and the dataset's profile the whole of it. A
dataset is stored once per experiment and digest, so thousands of trials reading the same files
add one input row each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

CONTEXT_TAG = "mlflow.data.context"  # MLflow's input tag for the role a dataset played in the run
KINDS = ("corpus", "plugin")


@dataclass(frozen=True)
class InputFile:
    """One file a run read."""

    name: str  # how messages and MLflow name it: "conll2003/train.txt", "plugin my_loss:my_loss.py"
    kind: str  # corpus | plugin
    path: str  # where this driver read it
    sha256: str


def dataset_inputs(files: Iterable[InputFile]) -> list[Any]:
    """`files` as MLflow `DatasetInput`s, for `MlflowClient.log_inputs`."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    return [
        DatasetInput(
            Dataset(
                name=f.name,
                digest=f.sha256[:32],
                source_type="local",
                source=json.dumps({"uri": f.path}),
                profile=json.dumps({"sha256": f.sha256}),
            ),
            tags=[InputTag(CONTEXT_TAG, f.kind)],
        )
        for f in files
    ]


def recorded_files(run: Any) -> dict[str, set[str]]:
    """The sha256 of every corpus and plugin file an MLflow run recorded reading, by file name (a run
    resumed after a file changed may hold two)."""
    found: dict[str, set[str]] = {}
    inputs = getattr(run, "inputs", None)
    for item in getattr(inputs, "dataset_inputs", None) or ():
        if not any(tag.key == CONTEXT_TAG and tag.value in KINDS for tag in item.tags):
            continue
        try:
            sha = json.loads(item.dataset.profile or "{}").get("sha256") or item.dataset.digest
        except json.JSONDecodeError:
            sha = item.dataset.digest
        found.setdefault(item.dataset.name, set()).add(sha)
    return found
