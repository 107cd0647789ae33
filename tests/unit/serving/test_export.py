"""`export_model`: softmax heads as Hugging Face folders that the pipeline reads to nerplat's spans."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest

from nerplat.errors import UserInputError
from nerplat.serving.bundle import load_bundle
from nerplat.serving.export import export_model
from nerplat.serving.records import predict_records

TEXTS = [
    "EU rejects German call to boycott British lamb.",
    "Peter Blackburn met the Commission's chief spokesman Nikolaus van der Pas in Brussels on Thursday.",
    "Germany's representative to the European Union's veterinary committee, Werner Zwingmann, said so.",
]


def test_pipeline_on_the_exported_folder_gives_nerplats_lenient_spans(softmax_bundle, tmp_path):
    from transformers import pipeline

    assert export_model(softmax_bundle, None, tmp_path / "hf", "tiny-softmax") == "huggingface"
    tagger = pipeline("token-classification", model=str(tmp_path / "hf"), aggregation_strategy="first", device="cpu")
    ours = predict_records(softmax_bundle, [{"text": t} for t in TEXTS], span_rule="lenient")
    compared = 0
    for text, record in zip(TEXTS, ours):
        theirs = tagger(text)
        assert [(e["entity_group"], e["start"], e["end"]) for e in theirs] == [
            (s["type"], s["start_char"], s["end_char"]) for s in record["spans"]
        ]
        assert [float(e["score"]) for e in theirs] == pytest.approx([s["score"] for s in record["spans"]], abs=1e-4)
        compared += len(theirs)
    assert compared > 0, "the tiny tagger predicted no span: the comparison would prove nothing"
    readme = (tmp_path / "hf" / "README.md").read_text()
    assert "aggregation_strategy" in readme and "--spans lenient" in readme


def test_export_shows_no_progress_bar_of_transformers(softmax_bundle, tmp_path, capfd):
    export_model(softmax_bundle, None, tmp_path / "hf", "tiny-softmax")
    assert "Writing model shards" not in capfd.readouterr().err


def test_other_heads_export_an_mlflow_model_folder_with_its_instructions(crf_dir, tmp_path):
    bundle = load_bundle(crf_dir)
    assert export_model(bundle, None, tmp_path / "crf", "tiny-crf") == "mlflow"
    readme = (tmp_path / "crf" / "README.md").read_text()
    assert "CRF Viterbi" in readme and "mlflow.pyfunc.load_model" in readme
    loaded = mlflow.pyfunc.load_model(str(tmp_path / "crf"))
    rows = [{"text": t} for t in TEXTS]
    assert loaded.predict(pd.DataFrame(rows)) == predict_records(bundle, rows)


def test_a_non_empty_target_is_refused(softmax_bundle, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(UserInputError, match="not an empty folder"):
        export_model(softmax_bundle, None, tmp_path / "taken", "x")
