import pytest

from nerplat.errors import UserInputError
from nerplat.track.local_postgres import check_postgres_bin, installed_postgres_bins


def test_a_folder_without_the_server_binaries_is_refused_naming_the_flag(tmp_path):
    (tmp_path / "initdb").touch()  # pg_ctl and createdb missing
    with pytest.raises(UserInputError) as refused:
        check_postgres_bin(tmp_path)
    problem = refused.value.problems[0]
    assert problem.path == "--postgres-bin" and str(tmp_path) in problem.message
    assert ("found them in" in problem.message) == bool(installed_postgres_bins())


def test_a_folder_with_the_server_binaries_is_taken_as_given(tmp_path):
    for name in ("initdb", "pg_ctl", "createdb"):
        (tmp_path / name).touch()
    assert check_postgres_bin(tmp_path) == tmp_path
