"""A file's date is the commit that brought its present text (uncommitted or edited text has none), and its
committed versions are read back oldest first."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone

import pytest

from nerplat import git_history
from nerplat.git_history import committed_at, committed_dates, committed_texts


def git(folder, *arguments, date="2026-12-07T05:00:00+00:00"):
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "-C", str(folder), *arguments], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    return tmp_path


def test_the_commit_that_added_the_file_dates_it(repo):
    path = repo / "registered" / "claim.yaml"
    path.parent.mkdir()
    path.write_text("a\n")
    assert committed_at(path) is None  # not committed yet
    git(repo, "add", "registered/claim.yaml")
    git(repo, "commit", "-q", "-m", "add", date="2026-12-07T05:10:00+00:00")
    (repo / "other").write_text("x")
    git(repo, "add", "other")
    git(repo, "commit", "-q", "-m", "later", date="2026-12-07T06:00:00+00:00")
    assert committed_at(path) == datetime(2026, 12, 7, 5, 10, tzinfo=timezone.utc)


def test_a_replaced_file_dates_from_its_present_text_and_an_edit_has_no_date(repo):
    path = repo / "claim.yaml"
    path.write_text("first\n")
    git(repo, "add", "claim.yaml")
    git(repo, "commit", "-q", "-m", "first", date="2026-12-07T05:00:00+00:00")
    path.write_text("second\n")
    git(repo, "commit", "-q", "-am", "second", date="2026-12-07T07:00:00+00:00")
    assert committed_at(path) == datetime(2026, 12, 7, 7, 0, tzinfo=timezone.utc)
    path.write_text("edited\n")
    assert committed_at(path) is None


def test_outside_a_repository_or_missing_there_is_no_date(tmp_path):
    path = tmp_path / "loose.yaml"
    path.write_text("x")
    assert committed_at(path) is None
    assert committed_at(tmp_path / "missing.yaml") is None


def test_the_committed_versions_of_a_file_oldest_first(repo):
    path = repo / "claim.yaml"
    assert committed_texts(path) == []
    for text in ("first\n", "second\n"):
        path.write_text(text)
        git(repo, "add", "claim.yaml")
        git(repo, "commit", "-q", "-m", text)
    path.write_text("not committed\n")
    assert committed_texts(path) == ["first\n", "second\n"]


def test_the_versions_of_a_file_are_read_with_two_git_processes_whatever_its_history(repo, monkeypatch: pytest.MonkeyPatch):
    path = repo / "claim.yaml"
    versions = [f"version {number} \u2013 \u00e9t\u00e9\n" * (number + 1) for number in range(5)]
    for text in versions[:3]:
        path.write_text(text, encoding="utf-8")
        git(repo, "add", "claim.yaml")
        git(repo, "commit", "-q", "-m", "x")
    git(repo, "rm", "-q", "claim.yaml")
    git(repo, "commit", "-q", "-m", "deleted")
    for text in versions[3:]:
        path.write_text(text, encoding="utf-8")
        git(repo, "add", "claim.yaml")
        git(repo, "commit", "-q", "-m", "x")
    runs = []
    real_run = git_history.subprocess.run
    monkeypatch.setattr(git_history.subprocess, "run", lambda *a, **k: runs.append(a) or real_run(*a, **k))
    assert committed_texts(path) == versions
    assert len(runs) == 2


def test_a_folder_is_dated_with_two_git_processes_whatever_its_size(repo, monkeypatch: pytest.MonkeyPatch):
    folder = repo / "registered"
    folder.mkdir()
    for number in range(6):
        (folder / f"claim_{number}.yaml").write_text(f"claim {number}\n")
    git(repo, "add", "registered")
    git(repo, "commit", "-q", "-m", "add", date="2026-12-07T05:10:00+00:00")
    (folder / "claim_1.yaml").write_text("replaced\n")
    (folder / "claim_2.yaml").unlink()
    git(repo, "commit", "-q", "-am", "replace one, drop one", date="2026-12-07T06:00:00+00:00")
    (folder / "claim_2.yaml").write_text("claim 2\n")  # back, uncommitted, as it was first committed
    (folder / "claim_3.yaml").write_text("edited\n")
    (folder / "new.yaml").write_text("never committed\n")
    paths = sorted(folder.iterdir())
    one_by_one = {path.resolve(): committed_at(path) for path in paths}
    runs = []
    real_run = git_history.subprocess.run
    monkeypatch.setattr(git_history.subprocess, "run", lambda *a, **k: runs.append(a) or real_run(*a, **k))
    assert committed_dates(paths) == one_by_one
    assert len(runs) == 2
    added, replaced = datetime(2026, 12, 7, 5, 10, tzinfo=timezone.utc), datetime(2026, 12, 7, 6, 0, tzinfo=timezone.utc)
    assert [one_by_one[path.resolve()] for path in paths] == [added, replaced, added, None, added, added, None]
