"""Output files and folders handed to a user: nothing replaced that is not a file, nothing half-written, umask modes."""

from __future__ import annotations

import os
import stat

import pytest

from nerplat.errors import UserInputError
from nerplat.serving.files import check_output_folder, output_folder, write_output_file


def write_hello(stream) -> None:
    stream.write("hello\n")


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_new_file_gets_the_umask_mode_not_0600(tmp_path, umask_022):
    target = tmp_path / "sub" / "out.jsonl"
    write_output_file(target, write_hello)
    assert target.read_text() == "hello\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["out.jsonl"]  # no temporary left


def test_an_existing_file_keeps_its_mode(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    target.chmod(0o640)
    write_output_file(target, write_hello)
    assert target.read_text() == "hello\n" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path):
    target, link = tmp_path / "t.txt", tmp_path / "l"
    target.write_text("old\n")
    link.symlink_to(target.name)
    write_output_file(link, write_hello)
    assert link.is_symlink() and os.readlink(link) == "t.txt" and target.read_text() == "hello\n"


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so opening for writing does not block
    try:
        write_output_file(fifo, write_hello)
        assert os.read(reader, 100) == b"hello\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_character_device_is_written_in_place_not_replaced(tmp_path):
    null = tmp_path / "mynull"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    write_output_file(null, write_hello)
    assert stat.S_ISCHR(os.lstat(null).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["mynull"]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p.mkdir(), "is a folder: name a file in it"),
        (lambda p: p.symlink_to(p.parent / "missing"), "which does not exist"),
    ],
)
def test_a_folder_or_a_dangling_symlink_is_refused_before_anything_is_written(tmp_path, make, message):
    target = tmp_path / "out"
    make(target)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UserInputError, match=message) as refused:
        write_output_file(target, write_hello)
    assert f"-o {target}" in str(refused.value) and sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_output_folder_is_written_whole_with_umask_modes(tmp_path, umask_022):
    out = tmp_path / "export"
    with output_folder(out) as folder:
        (folder / "model.safetensors").write_bytes(b"x")
        os.chmod(folder / "model.safetensors", 0o600)
    assert stat.S_IMODE((out / "model.safetensors").stat().st_mode) == 0o644
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["export"]


def test_a_failed_export_leaves_nothing(tmp_path):
    out = tmp_path / "export"
    with pytest.raises(RuntimeError), output_folder(out) as folder:
        (folder / "half").write_bytes(b"x")
        raise RuntimeError("disk on fire")
    assert list(tmp_path.iterdir()) == []


def test_an_export_onto_a_dangling_symlink_is_refused(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserInputError, match="is a symlink to .*nowhere, which does not exist"):
        check_output_folder(link)


def test_an_export_through_a_symlink_to_an_empty_folder_fills_that_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    with output_folder(tmp_path / "link") as folder:
        (folder / "README.md").write_text("x")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / "README.md").read_text() == "x"
