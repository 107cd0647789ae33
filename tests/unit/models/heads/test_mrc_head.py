"""The mrc head: shapes, the concatenation-free span classifier, and decoding of hand-made cases."""

import torch
import torch.nn.functional as F

from nerplat.models.heads.mrc import MRCHead, MRCOutput, SpanMatcher

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
B_LOC, I_LOC, B_PER, I_PER = 1, 2, 3, 4


def output(rows: int, words: int, lengths: list[int]) -> MRCOutput:
    """Everything 'no' (logit -5) for `rows` examples; set the yeses by hand."""
    return MRCOutput(
        start=torch.full((rows, words), -5.0),
        end=torch.full((rows, words), -5.0),
        match=torch.full((rows, words, words), -5.0),
        mask=torch.arange(words) < torch.tensor(lengths)[:, None],
    )


def say_span(out: MRCOutput, row: int, first: int, last: int, logit: float = 3.0) -> None:
    out.start[row, first] = out.end[row, last] = out.match[row, first, last] = logit


def test_span_matcher_equals_the_classifier_on_concatenated_pairs():
    torch.manual_seed(0)
    matcher = SpanMatcher(6, dropout=0.0)
    states = torch.randn(2, 5, 6)
    weight = torch.cat([matcher.first.weight, matcher.last.weight], dim=1)  # Linear(2H, 2H) on [h_i; h_j]
    pairs = torch.cat([states.unsqueeze(2).expand(-1, -1, 5, -1), states.unsqueeze(1).expand(-1, 5, -1, -1)], dim=-1)
    expected = matcher.out(F.gelu(F.linear(pairs, weight, matcher.first.bias))).squeeze(-1)
    torch.testing.assert_close(matcher(states), expected)


def test_forward_gives_start_end_per_word_and_match_per_pair():
    head = MRCHead(8, LABELS, dropout=0.1)
    out = head(torch.randn(4, 7, 8), torch.ones(4, 7, dtype=torch.bool))
    assert out.start.shape == out.end.shape == (4, 7) and out.match.shape == (4, 7, 7)


def test_decoding_types_and_windows():
    head = MRCHead(8, LABELS, dropout=0.0)
    out = output(rows=4, words=6, lengths=[6, 6, 3, 3])  # window 0: rows 0 (LOC), 1 (PER); window 1: rows 2, 3
    say_span(out, 0, 3, 4)
    say_span(out, 1, 0, 1)
    say_span(out, 3, 2, 2)
    assert head.decode(out) == [[B_PER, I_PER, 0, B_LOC, I_LOC, 0], [0, 0, B_PER]]


def test_a_span_needs_start_end_and_match_and_never_ends_before_it_starts():
    head = MRCHead(8, LABELS, dropout=0.0)
    out = output(rows=2, words=5, lengths=[5, 5])
    out.start[0, 1] = out.end[0, 2] = 3.0  # no match
    out.start[0, 3] = out.match[0, 3, 4] = 3.0  # no end
    out.start[1, 3] = out.end[1, 1] = out.match[1, 3, 1] = 3.0  # end before start
    assert head.decode(out) == [[0] * 5]


def test_overlaps_across_types_keep_the_most_probable_span():
    head = MRCHead(8, LABELS, dropout=0.0)
    out = output(rows=2, words=5, lengths=[5, 5])
    say_span(out, 0, 0, 2, logit=2.0)  # LOC 0-2
    say_span(out, 1, 1, 3, logit=4.0)  # PER 1-3 overlaps and is surer
    say_span(out, 1, 4, 4, logit=1.0)
    assert head.decode(out) == [[0, B_PER, I_PER, I_PER, B_PER]]


def test_nested_candidates_of_one_type_become_flat():
    head = MRCHead(8, LABELS, dropout=0.0)
    out = output(rows=2, words=4, lengths=[4, 4])
    say_span(out, 0, 0, 3, logit=4.0)  # LOC 0-3 ...
    out.end[0, 1] = out.match[0, 0, 1] = 1.0  # ... and the less probable nested LOC 0-1
    assert head.decode(out) == [[B_LOC, I_LOC, I_LOC, I_LOC]]


def test_padding_words_are_never_decoded():
    head = MRCHead(8, LABELS, dropout=0.0)
    out = output(rows=2, words=4, lengths=[2, 2])
    say_span(out, 0, 1, 3)  # ends on padding
    say_span(out, 1, 2, 2)  # on padding
    assert head.decode(out) == [[0, 0]]


def test_an_unreadable_queries_file_fails_spec_validation(tmp_path):
    import pytest
    from pydantic import ValidationError

    from nerplat.models.heads.mrc import MRCConfig

    with pytest.raises(ValidationError, match="cannot read MRC queries from"):
        MRCConfig.model_validate({"queries": str(tmp_path / "missing.json")})
    good = tmp_path / "q.json"
    good.write_text('{"LOC": "places"}')
    assert MRCConfig.model_validate({"queries": str(good)}).queries == str(good)
