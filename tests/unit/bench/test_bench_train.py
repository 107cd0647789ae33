import json

import pytest

from nerplat.bench.train import matmul_gflops, training_flops_per_token
from nerplat.cli import main


def test_matmul_throughput_is_positive_and_finite():
    assert 0 < matmul_gflops(size=128, seconds=0.1) < 1e5


def test_training_flops_follow_the_6n_rule_for_a_bert():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    dense = sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)
    assert training_flops_per_token(model, mean_length=10) == pytest.approx(6 * dense + 3 * 2 * 2 * 32 * 10 * 2)


@pytest.mark.slow
def test_bench_train_prints_the_promised_json(capsys):
    assert main(["bench", "train", "--encoder", "tiny", "--sentences", "48", "--batch-size", "16", "--threads", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert {"plain_tokens_per_s", "nerplat_tokens_per_s", "ratio", "mfu", "peak_rss_mb"} <= set(figures)
    assert figures["plain_tokens_per_s"] > 0 and figures["nerplat_tokens_per_s"] > 0
    assert figures["ratio"] == pytest.approx(figures["nerplat_tokens_per_s"] / figures["plain_tokens_per_s"])
