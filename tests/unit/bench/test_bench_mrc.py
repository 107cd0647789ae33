import json

from nerplat.cli import main


def test_bench_mrc_prints_both_frameworks_and_their_ratio(capsys):
    assert main(["bench", "mrc", "--encoder", "tiny", "--sentences", "24", "--batch-size", "8", "--threads", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    sequence, mrc = figures["sequence_labelling"], figures["mrc"]
    assert figures["types"] == 4 and figures["sentences"] == 24
    assert figures["repeats"] == 5 and sequence["tokens_per_s"]["min"] > 0 and mrc["tokens_per_s"]["min"] > 0
    # the cost per sentence of each repeat, from that repeat's two epochs
    ratios = [a / b for a, b in zip(sequence["sentences_per_s"]["repeats"], mrc["sentences_per_s"]["repeats"])]
    assert figures["cost_per_sentence"]["repeats"] == ratios and len(ratios) == 5
    assert mrc["steps"] == 12  # 24 windows, 2 per batch (8 examples / 4 types)
    assert sequence["steps"] == 3  # 8 sentences per batch
