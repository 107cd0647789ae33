"""Hostile but realistic targets for `nerplat predict -o`, `nerplat export --out` and `nerplat train
--save` (issue: C1, L4, L7; issue 62, item 3).

Each: exit 2 with a message naming the flag and the path and nothing written, or the write a user
expects (a FIFO or device written in place, a symlink kept); a disk that refuses the write is one
line (exit 1) with nothing left; never a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import threading
from pathlib import Path

import pytest

from nerplat.cli import main


@pytest.fixture(scope="module")
def model(softmax_dir) -> str:
    return str(softmax_dir)


def predict_to(model: str, target) -> int:
    return main(["predict", model, "--text", "EU rejects German call .", "-o", str(target)])


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_folder_is_refused_and_nothing_is_left_in_it(model, tmp_path, capsys):
    assert predict_to(model, tmp_path) == 2
    err = capsys.readouterr().err
    assert f"-o {tmp_path} is a folder" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_symlink_is_refused(model, tmp_path, capsys):
    (tmp_path / "l").symlink_to("t.txt")
    assert predict_to(model, tmp_path / "l") == 2
    assert "which does not exist" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l"]


def test_a_symlink_to_a_file_stays_a_symlink(model, tmp_path, capsys):
    (tmp_path / "t.txt").write_text("")
    (tmp_path / "l").symlink_to("t.txt")
    assert predict_to(model, tmp_path / "l") == 0
    assert (tmp_path / "l").is_symlink() and json.loads((tmp_path / "t.txt").read_text())["words"][0] == "EU"


def test_a_fifo_is_written_in_place(model, tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    assert predict_to(model, fifo) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and json.loads(received[0])["words"][0] == "EU"


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_device_node_stays_a_device(model, tmp_path):
    null = tmp_path / "mynull"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    assert predict_to(model, null) == 0
    assert stat.S_ISCHR(os.lstat(null).st_mode) and [p.name for p in tmp_path.iterdir()] == ["mynull"]


def test_a_new_output_file_gets_the_umask_mode(model, tmp_path, umask_022):
    assert predict_to(model, tmp_path / "out.jsonl") == 0
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o644


def test_export_onto_a_dangling_symlink_exits_2_without_a_traceback(model, tmp_path, capsys):
    (tmp_path / "out").symlink_to(tmp_path / "nowhere")
    assert main(["export", model, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--out {tmp_path / 'out'} is a symlink" in err and "Traceback" not in err
    assert not (tmp_path / "nowhere").exists()


def test_export_writes_weights_with_normal_permissions(model, tmp_path, umask_022):
    out = tmp_path / "exported"
    assert main(["export", model, "--out", str(out)]) == 0
    assert stat.S_IMODE((out / "model.safetensors").stat().st_mode) == 0o644
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["exported"]  # no temporary sibling left


def test_export_beyond_the_file_size_limit_is_one_line_and_leaves_nothing(model, tmp_path, capsys):
    """Issue 62: under `ulimit -f 2000` export printed a 58-line SafetensorError stack."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000 * 1024, hard))  # Python ignores SIGXFSZ: writes fail with EFBIG
    try:
        code = main(["export", model, "--out", str(tmp_path / "out")])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.strip() == (
        f"error: writing {tmp_path / 'out'} failed: File too large; nothing was left behind: raise the file-size limit "
        "(`ulimit -f`) or write where it allows"
    )
    assert list(tmp_path.iterdir()) == []


SPEC = "experiment: hostile\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (Path("/proc/x"), "--save /proc/x cannot be written (/proc refused a new folder): No such file or directory"),
        (Path("/proc/version"), "--save /proc/version exists and is not a folder: name a folder"),
        (None, "holds files but no model (tagger.json): a model replaces the whole folder"),
    ],
    ids=["proc", "a_file", "a_folder_of_other_files"],
)
def test_train_save_where_no_model_can_go_is_refused_before_training(target, message, tmp_path, capsys, monkeypatch):
    """Issue 62: `train --save /proc/x` trained to the end, then died in save_bundle, losing the model."""
    import nerplat.trial.loop

    monkeypatch.setattr(nerplat.trial.loop, "run_trial", lambda *a, **k: pytest.fail("trained before --save was checked"))
    (tmp_path / "spec.yaml").write_text(SPEC)
    if target is None:
        target = tmp_path / "work"
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    assert main(["train", str(tmp_path / "spec.yaml"), "-m", "ce", "--save", str(target)]) == 2
    err = capsys.readouterr().err
    assert message in err and "at --save" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"] + (["work"] if target.parent == tmp_path else [])


@pytest.mark.parametrize(
    ("damaged", "content", "message"),
    [
        ("weights.safetensors", None, "cannot load the tagger's weights"),
        ("tagger.json", b'{"format": 1, "labels": ', "not readable as JSON"),
        ("tagger.json", b"[1, 2]", "expected a JSON object with format, labels, head and encoder"),
        ("tagger.json", b'{"format": 1, "labels": ["O"], "head": {"name": 3}, "encoder": {}}', "'head' or 'encoder' is invalid"),
    ],
)
def test_predict_with_a_damaged_model_folder_names_the_file(model, tmp_path, capsys, damaged, content, message):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model, folder)
    target = folder / damaged
    target.write_bytes(content if content is not None else target.read_bytes()[: target.stat().st_size // 2])
    assert main(["predict", str(folder), "--text", "EU rejects German call ."]) == 2
    err = capsys.readouterr().err
    assert message in err and f"({target})" in err and "write it again" in err and "Traceback" not in err
