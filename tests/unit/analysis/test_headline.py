"""The headline table's rows: one per arm, short labels, mean ± sd, n and convergence from the summary frame."""

from __future__ import annotations

import polars as pl

from nerplat.analysis.headline import Headline, headline_rows, report_headline
from nerplat.analysis.settings import AnalysisSettings


def summary_row(method: str, sampler: str = "untyped+low_resource-20", metric: str = "test_micro_f1", **fields) -> dict:
    row = {
        "dataset": "conll2003", "sampler_family": "low_resource", "sampler": f"{sampler}(...)", "sampler_label": sampler,
        "encoder": "minilm-l6", "head": "softmax", "objective": method, "method": method, "metric": metric, "size": 20,
        "n": 3, "mean": 0.5, "sd": 0.01, "se": 0.006, "ci_low": 0.49, "ci_high": 0.51, "converged": True,
    }
    return row | fields


def test_one_row_per_arm_baseline_first_with_short_labels_and_full_ids():
    summary = pl.DataFrame([
        summary_row("mom", mean=0.55, sd=0.02, converged=False),
        summary_row("ce", mean=0.568, sd=0.01),
        summary_row("ce", metric="test_micro_precision", mean=0.9),
        summary_row("mom", sampler="untyped+low_resource-100", n=2, converged=None),
    ])
    rows = headline_rows(summary, AnalysisSettings(baseline="ce"))
    assert [(r.label, r.arm) for r in rows] == [  # sizes in numeric order
        ("ce · low_resource-20", "conll2003/untyped+low_resource-20/ce"),
        ("mom · low_resource-20", "conll2003/untyped+low_resource-20/mom"),
        ("mom · low_resource-100", "conll2003/untyped+low_resource-100/mom"),
    ]
    assert [(r.mean, r.sd, r.n, r.converged) for r in rows] == [
        (0.568, 0.01, 3, True), (0.55, 0.02, 3, False), (0.5, 0.01, 2, None)
    ]
    assert {r.metric for r in rows} == {"test_micro_f1"}


def test_the_settings_choose_the_metric_and_a_method_run_with_two_heads_names_them():
    summary = pl.DataFrame([
        summary_row("ce", metric="dev_macro_f1", head="softmax"),
        summary_row("ce", metric="dev_macro_f1", head="crf"),
    ])
    rows = headline_rows(summary, AnalysisSettings(split="dev", average="macro"))
    assert [r.label for r in rows] == ["ce · minilm-l6 · crf", "ce · minilm-l6 · softmax"]
    assert headline_rows(summary, AnalysisSettings()) == []


def test_a_report_folder_gives_its_rows_decimals_and_metric(tmp_path):
    pl.DataFrame([summary_row("ce")]).write_parquet(tmp_path / "summary.parquet")
    (tmp_path / "settings.json").write_text(AnalysisSettings(decimals=3).model_dump_json())
    headline = report_headline(tmp_path)
    assert isinstance(headline, Headline) and headline.decimals == 3 and headline.metric_words() == "test micro F1"
    assert headline.as_json()[0]["arm"] == "conll2003/untyped+low_resource-20/ce"


def test_a_report_with_claims_gives_their_verdicts_and_the_cli_prints_them(tmp_path):
    from io import StringIO

    from rich.console import Console

    from nerplat.analysis.verdicts import SCHEMA
    from nerplat.cli.options import print_headline

    pl.DataFrame([summary_row("ce"), summary_row("mom")]).write_parquet(tmp_path / "summary.parquet")
    (tmp_path / "settings.json").write_text(AnalysisSettings().model_dump_json())
    assert report_headline(tmp_path).verdicts == []
    row = {name: None for name in SCHEMA} | {
        "claim": "mom_vs_ce", "method": "mom", "partner": "ce", "paper_effect": 0.0033, "delta": -0.0051, "ci_low": -0.015,
        "ci_high": 0.005, "n_pairs": 3, "converged": True, "verdict": "inconclusive", "arms": [],
    }
    pl.DataFrame([row], schema=SCHEMA).write_parquet(tmp_path / "verdicts.parquet")
    headline = report_headline(tmp_path)
    assert headline.verdicts[0]["claim"] == "mom_vs_ce" and headline.verdicts[0]["verdict"] == "inconclusive"
    out = StringIO()
    print_headline(headline, Console(file=out, width=80))
    text = out.getvalue()
    assert "mom_vs_ce: mom vs ce" in text and "-0.0051" in text and "inconclusive" in text
