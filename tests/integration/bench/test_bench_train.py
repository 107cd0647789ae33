"""`nerplat bench train` for real: both loops trained five times each, figures as JSON (minutes here)."""

import json

import pytest

from nerplat.cli import main


@pytest.mark.slow
def test_bench_train_prints_medians_with_their_spread_as_json(capsys):
    flags = ["--encoder", "tiny", "--sentences", "48", "--batch-size", "16", "--threads", "1", "--json"]
    assert main(["bench", "train", *flags]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert {"plain_tokens_per_s", "nerplat_tokens_per_s", "ratio", "mfu", "peak_rss_mb"} <= set(figures)
    assert figures["device"] == "cpu"
    assert figures["repeats"] == 5
    for name in ("plain_tokens_per_s", "nerplat_tokens_per_s", "ratio", "matmul_gflops", "mfu", "plain_mfu"):
        spread = figures[name]
        assert len(spread["repeats"]) == 5 and spread["min"] <= spread["median"] <= spread["max"], name
        assert spread["median"] == pytest.approx(sorted(spread["repeats"])[2]) and spread["min"] > 0
    # Each repeat's ratio is taken within the repeat, from the two loops' interleaved epochs.
    plain, ours = figures["plain_tokens_per_s"]["repeats"], figures["nerplat_tokens_per_s"]["repeats"]
    assert figures["ratio"]["repeats"] == pytest.approx([a / b for a, b in zip(ours, plain)])
    # The profiled epoch: the biggest ops first, matrix products a real share of a transformer's step.
    shares = [op["share"] for op in figures["ops"]]
    assert len(shares) == 10 and shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1
    assert 0 < figures["matmul_share"] < 1
    assert {"aten::mm", "aten::addmm"} & {op["op"] for op in figures["ops"]}


@pytest.mark.slow
def test_bench_train_in_bf16_trains_both_loops_and_says_its_precision(capsys):
    """Seconds even where bf16 is emulated: two tiny-encoder batches per epoch, and a matmul peak that
    stops growing its matrices once one product would overrun its time (`bench.train.matmul_gflops`)."""
    args = ["bench", "train", "--encoder", "tiny", "--sentences", "32", "--batch-size", "16", "--threads", "1"]
    assert main([*args, "--precision", "bf16", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["precision"] == "bf16"
    assert all(figures[name]["min"] > 0 for name in ("plain_tokens_per_s", "nerplat_tokens_per_s", "mfu"))
    assert any(op["op"] in ("aten::mm", "aten::addmm") for op in figures["ops"])
