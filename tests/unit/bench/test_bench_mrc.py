import json

from nerplat.bench.mrc_cost import bench_mrc


def test_bench_mrc_times_both_frameworks_and_their_ratio():
    result = bench_mrc(encoder="tiny", sentences=24, batch_size=8, threads=1, repeats=5)
    figures = json.loads(json.dumps(result.as_dict()))  # what `nerplat bench mrc --json` prints
    sequence, mrc = figures["sequence_labelling"], figures["mrc"]
    assert figures["types"] == 4 and figures["sentences"] == 24
    assert figures["repeats"] == 5 and sequence["tokens_per_s"]["min"] > 0 and mrc["tokens_per_s"]["min"] > 0
    # the cost per sentence of each repeat, from that repeat's two epochs
    ratios = [a / b for a, b in zip(sequence["sentences_per_s"]["repeats"], mrc["sentences_per_s"]["repeats"])]
    assert figures["cost_per_sentence"]["repeats"] == ratios and len(ratios) == 5
    assert mrc["steps"] == 12  # 24 windows, 2 per batch (8 examples / 4 types)
    assert sequence["steps"] == 3  # 8 sentences per batch
