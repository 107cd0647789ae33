"""The report folder: a report replaces only files it wrote itself (issue 11, items 1 and 16)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from nerplat.analysis.report_folder import MANIFEST, install, owned_files
from nerplat.errors import UserInputError


def _built(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_new_or_empty_folder_owns_nothing(tmp_path: Path):
    assert owned_files(tmp_path / "new") == []
    (tmp_path / "empty").mkdir()
    assert owned_files(tmp_path / "empty") == []


@pytest.mark.parametrize("foreign", ["paper.pdf", "mlflow.db", "mlartifacts/0/meta.yaml"])
def test_a_non_empty_folder_without_a_manifest_is_refused_and_left_alone(tmp_path: Path, foreign: str):
    out = tmp_path / "out"
    _built(out, {foreign: "the user's"})
    with pytest.raises(UserInputError) as error:
        owned_files(out)
    problem = error.value.problems[0]
    assert problem.path == "--out" and str(out) in problem.message and MANIFEST in problem.message
    assert "new or empty folder" in problem.message
    assert (out / foreign).read_text() == "the user's"


def test_a_file_given_as_the_folder_is_refused(tmp_path: Path):
    (tmp_path / "report").write_text("x")
    with pytest.raises(UserInputError, match="is a file"):
        owned_files(tmp_path / "report")


@pytest.mark.parametrize("entry", ["../paper.pdf", "/etc/passwd", "tables/../../x"])
def test_a_manifest_naming_files_outside_the_folder_is_refused(tmp_path: Path, entry: str):
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"files": [entry]}))
    with pytest.raises(UserInputError) as error:
        owned_files(out)
    assert error.value.problems[0].source == str(out / MANIFEST) and entry in error.value.problems[0].message


def test_an_unreadable_manifest_is_a_user_error(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(UserInputError, match="not a report manifest"):
        owned_files(out)


def test_install_replaces_its_own_files_and_keeps_the_users(tmp_path: Path):
    out = tmp_path / "out"
    first = install(_built(tmp_path / "b1", {"report.md": "1", "tables/a.tex": "1", "tables/a.md": "1"}), out, owned_files(out))
    assert sorted(p.relative_to(out).as_posix() for p in first) == ["report.md", "tables/a.md", "tables/a.tex"]
    (out / "notes.md").write_text("mine")  # a user's file added next to the report
    (out / "tables" / "mine.txt").write_text("mine too")

    second = install(_built(tmp_path / "b2", {"report.md": "2", "tables/a.md": "2", "plots/p.png": "2"}), out, owned_files(out))

    assert sorted(p.relative_to(out).as_posix() for p in second) == ["plots/p.png", "report.md", "tables/a.md"]
    assert (out / "report.md").read_text() == "2" and not (out / "tables" / "a.tex").exists()
    assert (out / "notes.md").read_text() == "mine" and (out / "tables" / "mine.txt").read_text() == "mine too"
    assert json.loads((out / MANIFEST).read_text())["files"] == ["plots/p.png", "report.md", "tables/a.md"]


def test_install_removes_folders_it_emptied(tmp_path: Path):
    out = tmp_path / "out"
    install(_built(tmp_path / "b1", {"report.md": "1", "plots/p.png": "1"}), out, [])
    install(_built(tmp_path / "b2", {"report.md": "2"}), out, owned_files(out))
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "report.md"]


def test_install_never_overwrites_a_file_it_did_not_write(tmp_path: Path):
    out = tmp_path / "out"
    install(_built(tmp_path / "b1", {"report.md": "1"}), out, [])
    (out / "report.html").write_text("the user's page")
    with pytest.raises(UserInputError) as error:
        install(_built(tmp_path / "b2", {"report.md": "2", "report.html": "2"}), out, owned_files(out))
    assert "report.html" in str(error.value)
    assert (out / "report.html").read_text() == "the user's page" and (out / "report.md").read_text() == "1"


def test_a_new_report_folder_follows_the_umask_not_0700(tmp_path: Path):
    previous = os.umask(0o022)
    try:
        install(_built(tmp_path / "b", {"report.md": "1", "tables/a.md": "1"}), tmp_path / "reports" / "exp", [])
    finally:
        os.umask(previous)
    for folder in (tmp_path / "reports" / "exp", tmp_path / "reports" / "exp" / "tables"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder


def test_install_never_writes_through_a_symlink_out_of_the_folder(tmp_path: Path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "tables").symlink_to(elsewhere)
    with pytest.raises(UserInputError, match="tables/a.md"):
        install(_built(tmp_path / "b", {"report.md": "1", "tables/a.md": "1"}), out, [])
    assert list(elsewhere.iterdir()) == [] and not (out / "report.md").exists()


def test_the_manifest_records_what_the_report_was_built_from_once_its_files_are_in_place(tmp_path: Path):
    from nerplat.analysis.report_folder import report_record

    out = tmp_path / "out"
    assert report_record(out) == {}
    install(_built(tmp_path / "a", {"report.md": "1"}), out, [], {"inputs_sha256": "abc", "warnings": ["w"]})
    assert report_record(out) == {"inputs_sha256": "abc", "warnings": ["w"]}
    assert owned_files(out) == ["report.md"]
    install(_built(tmp_path / "b", {"report.md": "2"}), out, owned_files(out))  # built without a record
    assert report_record(out) == {}
    (out / MANIFEST).write_text("not json")
    assert report_record(out) == {}
