"""The files an arm's runs read (its corpus files and every plugin file), and what changed since
the experiment's finished runs recorded them.

A resume that kept runs trained on other data or other plugin code, next to runs trained on the
new, would mix two experiments: tuned on 200 sentences, replicated on 100 relabelled ones. So every
tuning trial and replicate records the sha256 of the files it read (`track/dataset_inputs.py`), and
`--resume` compares them with the files now: an arm whose finished runs read other files is
changed, as if its spec had changed (`run/spec_change.py`). Plugins are imported by every worker
and may change anything, so a changed plugin file changes every arm whose runs read it.

The digests are the driver's (it checks the corpora before Ray starts); the workers of an embedded
cluster read the same files, and a cluster's nodes the files their `$NERPLAT_DATA` names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nerplat.config.trial import DatasetRef
from nerplat.data.corpora import CORPORA, HUB_PREFIX, SPLITS, data_root
from nerplat.data.formats import split_file
from nerplat.plan.model import Plan
from nerplat.track import schema
from nerplat.track.dataset_inputs import InputFile, recorded_files

FINISHED = ("completed", "early_stopped")  # the statuses of the runs a resume keeps
_digests: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> sha256, read once per process


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in blocks and remembered while its size and modification time stay."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _digests:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _digests[key] = digest.hexdigest()
    return _digests[key]


def corpus_files(dataset: Mapping[str, Any]) -> list[tuple[str, Path]]:
    """(name, path) of each file a dataset (an arm's `fixed["dataset"]`) loads. A hub id names no
    file nerplat reads (the hub's cache is the datasets library's), so it has none."""
    ref = DatasetRef.model_validate(dataset)
    if ref.name is not None and ref.name.startswith(HUB_PREFIX):
        folder = Path(ref.name[len(HUB_PREFIX) :])
        files = sorted(f for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else []
        return [(f"{ref.name}/{f.relative_to(folder)}", f) for f in files]
    if ref.name is not None:
        source, root = CORPORA.get(ref.name).factory, data_root()
        folder, names = getattr(source, "folder", None), getattr(source, "files", ())
        if root is None or folder is None:  # a plugin's corpus that is no folder of files
            return []
        return [(f"{ref.name}/{name}", root / folder / name) for name in names]
    folder = Path(ref.path)
    if folder.is_file():  # one file whose splits `ref.split` draws
        return [(ref.path, folder)]
    present = [split_file(folder, split, ref.format.name) for split in SPLITS]
    return [(f"{ref.path}/{path.name}", path) for path in present if path.is_file()]


def plugin_files(record: Iterable[Mapping[str, str]]) -> list[InputFile]:
    """The plugin files of `nerplat.plugins.files_record()`, named by module and path within it."""
    by_module: dict[str, list[Mapping[str, str]]] = {}
    for entry in record:
        by_module.setdefault(entry["module"], []).append(entry)
    found = []
    for module, entries in by_module.items():
        base = Path(entries[0]["file"]).parent
        for entry in entries:
            relative = Path(entry["file"]).relative_to(base) if base in Path(entry["file"]).parents else Path(entry["file"]).name
            found.append(InputFile(f"plugin {module}:{relative}", "plugin", entry["file"], entry["sha256"]))
    return found


def arm_inputs(plan: Plan, plugins: Iterable[Mapping[str, str]]) -> dict[str, tuple[InputFile, ...]]:
    """Every arm's input files now: its corpus files, then the plugin files (`plugins`: `files_record()`)."""
    shared = tuple(plugin_files(plugins))
    found = {}
    for arm in plan.arms:
        corpus = tuple(
            InputFile(name, "corpus", str(path), file_sha256(path)) for name, path in corpus_files(arm.fixed["dataset"])
        )
        found[arm.id] = corpus + shared
    return found


def input_changes(runs: Iterable[Any], current: Mapping[str, tuple[InputFile, ...]]) -> dict[str, tuple[str, ...]]:
    """Arm id -> what changed ('conll2003/train.txt changed', '... is new', '... is gone') between the
    files its finished runs recorded and `current`. Arms whose runs recorded nothing (written before
    runs recorded their inputs) are not judged; arms no longer in the plan are the spec's business."""
    recorded: dict[str, dict[str, set[str]]] = {}
    for run in runs:
        arm = run.data.tags.get(schema.ARM)
        if arm in current and run.data.tags.get(schema.STATUS) in FINISHED:
            for name, digests in recorded_files(run).items():
                recorded.setdefault(arm, {}).setdefault(name, set()).update(digests)
    changes = {}
    for arm, before in sorted(recorded.items()):
        now = {f.name: f.sha256 for f in current[arm]}
        found = [f"{name} changed" for name in sorted(before) if name in now and before[name] != {now[name]}]
        found += [f"{name} is gone" for name in sorted(before) if name not in now]
        found += [f"{name} is new" for name in sorted(now) if name not in before]
        if found:
            changes[arm] = tuple(found)
    return changes
