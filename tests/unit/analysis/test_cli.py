"""`nerplat analyze` and its benchmark through the real CLI entry point."""

from __future__ import annotations

from nerplat.cli import main


def test_a_missing_store_is_a_user_error(tmp_path, capsys):
    code = main(["analyze", "quick", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"])
    assert code == 2
    assert "no MLflow store at" in capsys.readouterr().err


def test_experiment_is_required(capsys):
    assert main(["analyze"]) == 2
    assert "Missing argument 'experiment'" in capsys.readouterr().err


def test_bad_flag_values_name_the_setting(store, capsys):
    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    code = main(["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--test", "ttest"])
    assert code == 2
    assert "analysis.test" in capsys.readouterr().err


def test_analyze_into_the_workdir_is_refused_and_deletes_nothing(store, tmp_path, capsys):
    """`--out .` in a workdir once deleted mlflow.db and the artifacts, and exited 0 (issue 11, item 1)."""
    store.replicate("ce", 0, {"test_micro_f1": 0.5})
    (tmp_path / "mlartifacts").mkdir()
    (tmp_path / "mlartifacts" / "kept").write_text("artifact")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    code = main(["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(tmp_path) in err and "not empty" in err and "--out" in err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert store.client.search_runs([store.experiment_id])  # the store still answers


def test_a_disk_that_fills_while_the_report_is_written_is_one_message_and_a_later_analyze_works(store, tmp_path):
    """Issue 11, item 9: a real failed write (the file-size limit, as a full disk fails a write), not a mock."""
    import resource
    import signal
    import subprocess
    import sys

    for method in ("ce", "mom"):
        for seed in range(2):
            store.replicate(method, seed, {"test_micro_f1": 0.5 + 0.01 * seed})
    out = tmp_path / "report"
    analyze = ["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--out", str(out), "--baseline", "ce",
               "--resamples", "100", "--registrations", str(tmp_path / "registered")]  # none: no git calls to date them

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as ENOSPC would
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    failed = subprocess.run(
        [sys.executable, "-m", "nerplat.cli", *analyze], preexec_fn=small_disk, capture_output=True, text=True, timeout=300
    )
    assert failed.returncode == 1, failed.stderr
    said = " ".join(failed.stderr.split())  # a terminal's width (COLUMNS) wraps the message between words
    assert f"the report of '{store.experiment}' could not be written to {out}" in said
    assert "File too large" in said and "Traceback" not in said
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    assert main(analyze) == 0  # in this process: the limit was the child's alone
    assert (out / "report.md").exists()


def test_quiet_analyze_prints_results_and_errors_only_as_quiet_run_does(store, tmp_path, capsys):
    """`-q` hid the warnings of `run` but not of `analyze` (issue 47); the headline table stays."""
    for seed in range(2):
        store.replicate("ce", seed, {"test_micro_f1": 0.5 + 0.01 * seed})
    store.replicate("ce", 2, {"test_micro_f1": 0.1}, status="failed")  # a warning: left out of the analysis
    command = ["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--resamples", "100",
               "--registrations", str(tmp_path / "registered")]  # none: no git calls to date the repository's
    assert main([*command, "--out", str(tmp_path / "loud")]) == 0
    assert "warning: 1 replicate runs failed" in capsys.readouterr().err
    assert main(["-q", *command, "--out", str(tmp_path / "quiet")]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "ce" in out  # the headline table is a result
