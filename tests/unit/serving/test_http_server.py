"""The /invocations body: MLflow's input formats, strictly (a real server is tested in tests/integration/test_serve.py)."""

from __future__ import annotations

import pytest

from nerplat.serving.http_server import Refused, rows_of_payload


@pytest.mark.parametrize(
    "payload, rows",
    [
        ({"dataframe_records": [{"text": "EU rejects"}, {"tokens": ["Peter"]}]}, [{"text": "EU rejects"}, {"tokens": ["Peter"]}]),
        ({"dataframe_split": {"columns": ["text"], "data": [["EU rejects"]]}}, [{"text": "EU rejects"}]),
        ({"dataframe_split": {"columns": ["text", "tokens"], "data": [["a b", None], [None, ["c"]]]}}, [{"text": "a b", "tokens": None}, {"text": None, "tokens": ["c"]}]),
        ({"inputs": [{"text": "x"}]}, [{"text": "x"}]),
        ({"instances": {"text": ["x", "y"]}}, [{"text": "x"}, {"text": "y"}]),
    ],
)
def test_mlflow_input_formats_give_rows(payload, rows):
    assert rows_of_payload(payload) == rows


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"inputs": ["EU rejects"]}, "row 0: expected an object"),
        ({"inputs": []}, "holds no rows"),
        ({"dataframe_records": [{"txt": "EU"}]}, "row 0: unknown field 'txt'"),
        ({"dataframe_records": [{}]}, "no 'text' and no 'tokens'"),
        ({"dataframe_records": [{"text": "a", "tokens": ["a"]}]}, "both 'text' and 'tokens'"),
        ({"dataframe_records": [{"text": 3}]}, "'text' must be a string"),
        ({"dataframe_records": [{"tokens": "a b"}]}, "'tokens' must be a list of strings"),
        ({"dataframe_records": [{"text": "a"}], "params": {}}, "unknown field 'params'"),
        ({"data": [{"text": "a"}]}, "unknown field 'data'"),
        ({}, "found none of them"),
        ([{"text": "a"}], "the body is a JSON list"),
        ({"dataframe_split": {"columns": ["text"], "data": [["a", "b"]]}}, "list of 1 values"),
        ({"dataframe_records": [{"x": 1}] * 7}, "and 2 more rows"),
    ],
)
def test_bad_bodies_are_refused_with_400_naming_the_schema(payload, message):
    with pytest.raises(Refused, match=message) as refused:
        rows_of_payload(payload)
    assert refused.value.status == 400
    assert '{"text": "a sentence"}' in refused.value.message and "Traceback" not in refused.value.message
