"""`nerplat analyze` writing a whole report, and `nerplat bench analysis`, through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from nerplat.cli import main


@pytest.mark.slow
def test_analyze_writes_the_report_and_says_where(store, tmp_path, capsys):
    for method, shift in (("ce", 0.0), ("mom", 0.05)):
        for seed in range(3):
            store.replicate(method, seed, {"test_micro_f1": 0.5 + shift + 0.01 * seed, "test_micro_precision": 0.6,
                                           "test_micro_recall": 0.4 + shift})
    out = tmp_path / "report"
    code = main(["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--out", str(out),
                 "--format", "md,csv", "--baseline", "ce", "--resamples", "100"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    words = " ".join(captured.out.split())  # wrapped between words at the console's width
    assert f"to {out}/" in words and "under analysis/" in words
    assert (out / "tables" / "comparison-low_resource-size-20.csv").exists()
    assert json.loads((out / "settings.json").read_text())["bootstrap_resamples"] == 100
    # the headline table, from the report's summary.parquet: per arm mean ± sd, n, converged; --json the same numbers
    assert "test micro F1, mean ± sd over replicates" in captured.out
    assert any(line.startswith("│ mom") and "0.5600 ± 0.0100 │ 3 │" in line for line in captured.out.splitlines()), captured.out
    code = main(["analyze", store.experiment, "--tracking-uri", store.client.tracking_uri, "--out", str(out),
                 "--format", "md", "--baseline", "ce", "--resamples", "100", "--json", "-q"])
    results = json.loads(capsys.readouterr().out)["results"]
    assert code == 0 and [(r["label"], r["mean"], r["sd"], r["n"]) for r in results] == [
        ("ce", pytest.approx(0.51), pytest.approx(0.01), 3), ("mom", pytest.approx(0.56), pytest.approx(0.01), 3)
    ]
    assert [r["arm"].rsplit("/", 1)[-1] for r in results] == ["ce", "mom"] and results[0]["arm"].startswith("toy/")


@pytest.mark.slow
def test_bench_prints_json_timings(capsys):
    code = main(["bench", "analysis", "--json", "--runs", "1000", "--fetch", "0"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["notes"]["metrics"] == 10 and result["notes"]["frame_shape"][0] == 1000
    assert result["seconds"]["analyse_total"] > 0
