import numpy as np

from nerplat.models.length_cut import cheapest_cut


def test_the_cheapest_cut_splits_a_batch_only_where_the_padding_saved_outweighs_a_batchs_cost():
    order = np.arange(20)
    ten_long_ten_short = np.array([40] * 10 + [10] * 10)
    # One batch pads the short windows to 40 (800 sub-tokens); two cost 400 + 100 + a second batch.
    assert [len(b) for b in cheapest_cut(order, ten_long_ten_short, 128, 1024, batch_cost=64)] == [10, 10]
    assert [len(b) for b in cheapest_cut(order, ten_long_ten_short, 128, 1024, batch_cost=400)] == [20]
    nearly_equal = np.array([21] * 10 + [20] * 10)  # splitting saves 10 padded sub-tokens: not worth a batch
    assert [len(b) for b in cheapest_cut(order, nearly_equal, 128, 1024, batch_cost=64)] == [20]
    assert [len(b) for b in cheapest_cut(order, nearly_equal, 128, 1024, batch_cost=0)] == [10, 10]
