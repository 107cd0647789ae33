from pathlib import Path

import pytest

from nerplat.atomic_files import write_atomically


def test_write_atomically_replaces_the_file_and_leaves_no_temp_files(tmp_path: Path):
    target = tmp_path / "out" / "job.yaml"
    write_atomically(target, "a: 1\n")
    write_atomically(target, "a: 2\n")
    assert target.read_text() == "a: 2\n"
    assert [p.name for p in target.parent.iterdir()] == ["job.yaml"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path):
    target = tmp_path / "job.yaml"
    write_atomically(target, "a: 1\n")
    with pytest.raises(TypeError):
        write_atomically(target, b"not text")  # type: ignore[arg-type]
    assert target.read_text() == "a: 1\n" and [p.name for p in tmp_path.iterdir()] == ["job.yaml"]
