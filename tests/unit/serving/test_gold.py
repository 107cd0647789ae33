"""`nerplat evaluate`'s gold files: read by the corpus formats' readers, the format guessed from the file."""

from __future__ import annotations

import json

import pytest

from nerplat.errors import UserInputError
from nerplat.serving.gold import read_gold


def test_conll_jsonl_tokens_and_jsonl_text_give_the_same_sentences(tmp_path):
    conll = tmp_path / "gold.conll"
    conll.write_text("Peter\tB-PER\nBlackburn\tI-PER\nwins\tO\n")
    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text(
        json.dumps({"tokens": ["Peter", "Blackburn", "wins"], "spans": [{"start": 0, "end": 2, "label": "PER"}]}) + "\n"
    )
    text = tmp_path / "text.jsonl"
    text.write_text(json.dumps({"text": "Peter Blackburn wins", "spans": [{"start": 0, "end": 15, "label": "PER"}]}) + "\n")
    read = [read_gold(path, None) for path in (conll, tokens, text)]
    assert read[0] == read[1] == read[2]
    assert read[0][0].tags == ("B-PER", "I-PER", "O")


def test_bad_gold_is_located(tmp_path):
    gold = tmp_path / "gold.conll"
    gold.write_text("Peter\tB-PER\nwins\tX-Y\n")
    with pytest.raises(UserInputError, match=r"illegal tag 'X-Y'.*gold.conll:2"):
        read_gold(gold, None)
    with pytest.raises(UserInputError, match="--format 'csv': choose one of"):
        read_gold(gold, "csv")
    with pytest.raises(UserInputError, match="no such file"):
        read_gold(tmp_path / "missing.conll", None)
