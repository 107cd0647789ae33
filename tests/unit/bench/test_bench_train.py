import pytest
import torch

from nerplat.bench.train import bench_device, bench_precision, matmul_gflops, op_breakdown, training_flops_per_token
from nerplat.trial.session import TrialSession
from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.errors import UserInputError


def test_matmul_throughput_is_positive_and_finite():
    assert 0 < matmul_gflops(sizes=(128,), seconds=0.1) < 1e5


def test_the_matmul_peak_is_measured_in_the_dtype_asked_for():
    assert 0 < matmul_gflops(sizes=(128,), seconds=0.1, dtype=torch.bfloat16) < 1e5


def test_the_matmul_peak_tries_no_size_whose_one_product_would_overrun_its_time(monkeypatch):
    """As where bf16 is emulated: products slow enough that a 256-square one alone takes 0.5 s.

    The clock is the test's own and moves only inside a product, so a loaded host cannot change
    which sizes are tried."""
    import nerplat.bench.train as bench_train

    now, tried = [0.0], []

    def slow_mm(a, b):
        tried.append(a.shape[0])
        now[0] += a.shape[0] ** 3 * 3e-8
        return a

    monkeypatch.setattr(torch, "mm", slow_mm)
    monkeypatch.setattr(bench_train.time, "perf_counter", lambda: now[0])
    assert matmul_gflops(sizes=(64, 128, 256), seconds=0.2) > 0
    assert 128 in tried and 256 not in tried and now[0] < 0.4


def test_training_flops_follow_the_6n_rule_for_a_bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    model = BertModel(config)
    dense = sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)
    assert training_flops_per_token(model, mean_length=10) == pytest.approx(6 * dense + 3 * 2 * 2 * 32 * 10 * 2)


def test_the_op_breakdown_profiles_a_warm_epoch_not_the_optimisers_first_step():
    config = TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="low_resource", params={"size": 32, "partitions": 1}),),
        encoder=EncoderSettings(name="tiny", max_length=64),
        train=TrainSettings(epochs=2, batch_size=16, warmup_ratio=0.0, threads=1),
        eval_split=None,
    )
    session = TrialSession(config, device=torch.device("cpu"))
    session.setup()
    session.train_epoch(1)
    _, ops = op_breakdown(session, 2, top=1000)
    calls = {op.op: op.calls for op in ops}
    # AdamW's first step makes two zero-filled moments per weight tensor (about 80 for the tiny
    # encoder and its head); a warm epoch makes none of those.
    assert calls["aten::_fused_adamw_"] > 0  # the profiled epoch did take optimiser steps
    assert calls.get("aten::zeros_like", 0) < 20  # 78 when the first epoch is profiled


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_bench_train_on_cuda_without_a_gpu_names_the_device_to_use():
    assert "sees no CUDA device here; use --device cpu" in str(_refusal("cuda"))


def test_bench_train_names_the_devices_it_knows():
    assert "--device must be one of cpu, cuda, got 'tpu'" in str(_refusal("tpu"))
    assert bench_device("cpu") == torch.device("cpu")


def test_bench_train_refuses_a_precision_it_cannot_run():
    with pytest.raises(UserInputError) as raised:
        bench_precision("fp16", torch.device("cpu"))
    assert "--precision fp16 needs --device cuda; on cpu use bf16 or fp32" in str(raised.value)
    with pytest.raises(UserInputError) as raised:
        bench_precision("int8", torch.device("cpu"))
    assert "--precision must be one of fp32, bf16, fp16, got 'int8'" in str(raised.value)
    assert raised.value.problems[0].path == "--precision"
    assert bench_precision("bf16", torch.device("cpu")) == "bf16"


def _refusal(name: str) -> UserInputError:
    with pytest.raises(UserInputError) as raised:
        bench_device(name)
    assert raised.value.problems[0].path == "--device"
    return raised.value

