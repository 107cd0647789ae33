import json

from nerplat.cli import main


def test_bench_mrc_prints_both_frameworks_and_their_ratio(capsys):
    assert main(["bench", "mrc", "--encoder", "tiny", "--sentences", "24", "--batch-size", "8", "--threads", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    sequence, mrc = figures["sequence_labelling"], figures["mrc"]
    assert figures["types"] == 4 and figures["sentences"] == 24
    assert sequence["tokens_per_s"] > 0 and mrc["tokens_per_s"] > 0
    assert figures["cost_per_sentence"] == sequence["sentences_per_s"] / mrc["sentences_per_s"]
    assert mrc["steps"] == 12  # 24 windows, 2 per batch (8 examples / 4 types)
    assert sequence["steps"] == 3  # 8 sentences per batch
