"""Corpus formats by name: folders in JSONL or BIOES CoNLL, hf: folders saved to disk, and the spec's `format:`."""

import json

import pytest

from nerplat.catalog import default_catalog
from nerplat.config.trial import Component, DatasetRef
from nerplat.data.corpora import dataset_problems, load_corpus
from nerplat.data.formats import FORMATS, split_file
from nerplat.data.tags import bioes_to_iob2, is_legal_bioes_tag
from nerplat.errors import UserInputError
from nerplat.spec.validate import load_spec

RECORDS = [
    {"tokens": ["Ada", "Lovelace", "wrote"], "spans": [{"start": 0, "end": 2, "label": "PER"}]},
    {"tokens": ["Paris", "is", "big"], "spans": [{"start": 0, "end": 1, "label": "LOC"}]},
]


def jsonl_folder(folder, splits=("train", "dev", "test")):
    folder.mkdir(parents=True, exist_ok=True)
    for split in splits:
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    return folder


def test_built_in_formats_and_their_split_files(tmp_path):
    assert {"conll", "jsonl_tokens", "jsonl_text"} <= set(FORMATS.names())
    assert split_file(tmp_path, "dev", "conll") == tmp_path / "dev.txt"
    assert split_file(tmp_path, "dev", "jsonl_text") == tmp_path / "dev.jsonl"


def test_bioes_to_iob2():
    assert bioes_to_iob2(["S-PER", "O", "B-ORG", "I-ORG", "E-ORG", "U-LOC", "B-X", "L-X"]) == (
        "B-PER", "O", "B-ORG", "I-ORG", "I-ORG", "B-LOC", "B-X", "I-X"
    )
    assert is_legal_bioes_tag("E-PER") and not is_legal_bioes_tag("X-PER") and not is_legal_bioes_tag("S-")


def test_a_jsonl_folder_loads_as_a_corpus(tmp_path):
    folder = jsonl_folder(tmp_path / "mine")
    ref = DatasetRef(path=str(folder), format=Component(name="jsonl_tokens"))
    assert dataset_problems(ref) == []
    corpus = load_corpus(ref)
    assert corpus.train[0].tags == ("B-PER", "I-PER", "O") and len(corpus.test) == 2
    assert set(corpus.checksums) == {"train", "dev", "test"}


def test_a_folder_without_the_formats_train_file_is_reported(tmp_path):
    (tmp_path / "train.txt").write_text("a\tO\n")
    ref = DatasetRef(path=str(tmp_path), format=Component(name="jsonl_text"))
    assert dataset_problems(ref) == [f"corpus folder {tmp_path} lacks train.jsonl"]


def test_conll_in_bioes_is_read_as_iob2(tmp_path):
    (tmp_path / "train.txt").write_text("Ada\tB-PER\nLovelace\tE-PER\nin\tO\nParis\tS-LOC\n")
    corpus = load_corpus(DatasetRef(path=str(tmp_path), format=Component(name="conll", params={"scheme": "bioes"})))
    assert corpus.train[0].tags == ("B-PER", "I-PER", "O", "B-LOC")
    with pytest.raises(UserInputError, match=r"illegal tag 'E-PER'.*train.txt:2"):
        load_corpus(DatasetRef(path=str(tmp_path)))


def test_hf_folder_saved_to_disk(tmp_path):
    import datasets  # the hub extra, installed by the test extra

    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-PER", "I-PER"])),
        }
    )
    rows = {"tokens": [["Ada", "Lovelace"], ["hi"]], "ner_tags": [[1, 2], [0]]}
    saved = datasets.DatasetDict(
        {s: datasets.Dataset.from_dict(rows, features=features) for s in ("train", "validation", "test")}
    )
    saved.save_to_disk(str(tmp_path / "saved"))
    corpus = load_corpus(DatasetRef(name=f"hf:{tmp_path / 'saved'}"))
    assert corpus.train[0].tags == ("B-PER", "I-PER") and len(corpus.dev) == 2
    with pytest.raises(UserInputError, match="cannot load .* from the folder"):
        load_corpus(DatasetRef(name=f"hf:{tmp_path / 'missing'}"))


SPEC = """experiment: formats
dataset: {{path: mine, format: {format}}}
methods: {{ce: {{loss: ce}}}}
replicate: {{seeds: 1}}
"""


def test_the_spec_names_a_format_with_options(tmp_path):
    jsonl_folder(tmp_path / "mine")
    (tmp_path / "spec.yaml").write_text(SPEC.format(format="{jsonl_tokens: {scheme: bioes}}"))
    validated = load_spec(tmp_path / "spec.yaml", default_catalog())
    assert validated.datasets[0].ref.format == Component(name="jsonl_tokens", params={"scheme": "bioes"})


@pytest.mark.parametrize(
    ("written", "message", "path"),
    [
        ("jsonl_token", "unknown corpus format 'jsonl_token'; did you mean 'jsonl_tokens'?", "dataset.format"),
        ("{jsonl_text: {tokeniser: words}}", "tokeniser", "dataset.format.jsonl_text.tokeniser"),
    ],
)
def test_a_bad_format_is_located_in_the_spec(tmp_path, written, message, path):
    jsonl_folder(tmp_path / "mine")
    (tmp_path / "spec.yaml").write_text(SPEC.format(format=written))
    with pytest.raises(UserInputError) as caught:
        load_spec(tmp_path / "spec.yaml", default_catalog())
    (problem,) = caught.value.problems
    assert message in problem.message and problem.path == path and problem.line == 2
