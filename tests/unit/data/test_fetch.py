"""`nerplat data fetch`: a corpus from a source (here local copies made from the reference corpora,
this machine has no internet) checked against the shipped reference statistics, written whole or not at all."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from nerplat.cli import main
from nerplat.data.conll import read_conll
from nerplat.data.corpora import CORPORA, data_root
from nerplat.data.fetch import reference_statistics

REFERENCE = data_root()
pytestmark = pytest.mark.skipif(
    REFERENCE is None or not (REFERENCE / "ncbi_disease").is_dir(), reason="needs the reference corpora"
)


def fetch(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["data", "fetch", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def source_folder(tmp_path: Path, corpus: str) -> Path:
    """The registered file names of `corpus` holding the reference splits (MTL-2016's train/devel/test.tsv)."""
    folder = tmp_path / "source"
    folder.mkdir()
    for split, name in CORPORA.get(corpus).factory.source.files.items():
        shutil.copyfile(REFERENCE / corpus / f"{split}.txt", folder / name)
    return folder


def test_a_corpus_from_a_file_url_is_written_in_the_reference_layout_and_verified(tmp_path, capsys):
    root = tmp_path / "data"
    code, out, err = fetch(
        capsys, "ncbi_disease", "--root", str(root), "--source", source_folder(tmp_path, "ncbi_disease").as_uri(), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["matches_reference"] is True and result["folder"] == str(root / "ncbi_disease")
    assert result["splits"]["train"]["sentences"] == 5424
    for split in ("train", "dev", "test"):
        assert (root / "ncbi_disease" / f"{split}.txt").read_bytes() == (REFERENCE / "ncbi_disease" / f"{split}.txt").read_bytes()
    assert sorted(p.name for p in (root / "ncbi_disease").iterdir()) == ["dev.txt", "test.txt", "train.txt"]
    assert "downloading file://" in " ".join(err.split())


def test_nerplat_data_is_where_the_corpus_goes_and_a_second_fetch_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NERPLAT_DATA", str(tmp_path / "data"))
    source = source_folder(tmp_path, "ncbi_disease").as_uri()
    code, out, _ = fetch(capsys, "ncbi_disease", "--source", source)
    assert code == 0 and "matches the reference copy" in out and (tmp_path / "data" / "ncbi_disease" / "train.txt").is_file()
    code, _, err = fetch(capsys, "ncbi_disease", "--source", source)
    assert code == 2 and "already exists" in err


def test_a_saved_hub_dataset_is_a_source_too(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    splits = {}
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        sentences = read_conll(REFERENCE / "wnut17" / f"{split}.txt").sentences
        splits[name] = datasets.Dataset.from_dict(
            {"tokens": [list(s.tokens) for s in sentences], "ner_tags": [list(s.tags) for s in sentences]}
        )
    datasets.DatasetDict(splits).save_to_disk(str(tmp_path / "saved"))
    code, out, err = fetch(capsys, "wnut17", "--root", str(tmp_path / "data"), "--source", f"hf:{tmp_path / 'saved'}", "--json")
    assert code == 0, err
    assert json.loads(out)["matches_reference"] is True
    assert (tmp_path / "data" / "wnut17" / "test.txt").read_bytes() == (REFERENCE / "wnut17" / "test.txt").read_bytes()


def test_gmb_comes_from_its_kaggle_csv_zip(tmp_path, capsys):
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["Sentence #", "Word", "POS", "Tag"])
    for number, sentence in enumerate(read_conll(REFERENCE / "gmb" / "all.txt").sentences, start=1):
        for position, (token, tag) in enumerate(zip(sentence.tokens, sentence.tags)):
            writer.writerow([f"Sentence: {number}" if position == 0 else "", token, "NN", tag])
    folder = tmp_path / "source"
    folder.mkdir()
    with zipfile.ZipFile(folder / "ner_dataset.csv.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ner_dataset.csv", rows.getvalue().encode("cp1252"))
    code, _, err = fetch(capsys, "gmb_subset", "--root", str(tmp_path / "data"), "--source", folder.as_uri())
    assert code == 0, err
    assert (tmp_path / "data" / "gmb" / "all.txt").read_bytes() == (REFERENCE / "gmb" / "all.txt").read_bytes()


def test_a_copy_that_differs_from_the_reference_is_refused_and_nothing_is_written(tmp_path, capsys):
    folder = source_folder(tmp_path, "ncbi_disease")
    text = (folder / "devel.tsv").read_text(encoding="utf-8")
    (folder / "devel.tsv").write_text(text.split("\n\n", 1)[1], encoding="utf-8")  # first sentence lost
    code, _, err = fetch(capsys, "ncbi_disease", "--root", str(tmp_path / "data"), "--source", folder.as_uri())
    assert code == 2 and "ncbi_disease dev: sentences 922 where the reference copy has 923" in err
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_a_bad_line_of_a_source_file_is_named_by_its_url(tmp_path, capsys):
    folder = source_folder(tmp_path, "ncbi_disease")
    (folder / "devel.tsv").write_text("Aspirin\tB_Chemical\n", encoding="utf-8")
    code, _, err = fetch(capsys, "ncbi_disease", "--root", str(tmp_path / "data"), "--source", folder.as_uri())
    assert code == 2 and f"illegal tag 'B_Chemical': expected O, B-TYPE or I-TYPE ({folder.as_uri()}/devel.tsv:1)" in err
    assert "nerplat-fetch-" not in err and not (tmp_path / "data").exists()


def test_a_root_that_is_a_file_is_refused_before_downloading(tmp_path, capsys):
    root = tmp_path / "data"
    root.write_text("mine", encoding="utf-8")
    code, _, err = fetch(
        capsys, "ncbi_disease", "--root", str(root), "--source", source_folder(tmp_path, "ncbi_disease").as_uri()
    )
    assert code == 2 and f"{root} is not a folder: give the folder corpora go in" in err and "--root" in err
    assert "downloading" not in err and "Traceback" not in err and root.read_text(encoding="utf-8") == "mine"


def test_offline_the_message_names_the_source_and_says_what_to_do(tmp_path, capsys):
    code, _, err = fetch(capsys, "conll2003", "--root", str(tmp_path), "--source", "http://127.0.0.1:9/conll2003")
    assert code == 2
    assert "cannot download http://127.0.0.1:9/conll2003/eng.train" in err and "--source" in err
    assert list(tmp_path.iterdir()) == []


def test_every_registered_public_corpus_has_a_source_or_says_why_not(tmp_path, capsys, monkeypatch):
    registered = [entry.factory for entry in CORPORA.entries()]
    assert {corpus.folder for corpus in registered} <= set(reference_statistics())
    assert all(corpus.source or corpus.no_source for corpus in registered)
    assert {corpus.name for corpus in registered if corpus.source is None} == {"s800"}
    code, _, err = fetch(capsys, "s800", "--root", str(tmp_path))
    assert code == 2 and "standoff2conll" in err and "--source" in err
    from nerplat.data import corpora

    monkeypatch.delenv("NERPLAT_DATA", raising=False)
    monkeypatch.setattr(corpora, "SHARED_DATA", tmp_path / "no-shared-data")  # an installed copy: no ../shared/data
    code, _, err = fetch(capsys, "wnut17")
    assert code == 2 and "set NERPLAT_DATA" in err


def test_a_local_source_may_hold_nerplats_own_layout_and_a_missing_file_is_named(tmp_path, capsys):
    own = tmp_path / "own"
    own.mkdir()
    for split in ("train", "dev"):
        shutil.copyfile(REFERENCE / "ncbi_disease" / f"{split}.txt", own / f"{split}.txt")
    code, _, err = fetch(capsys, "ncbi_disease", "--root", str(tmp_path / "data"), "--source", own.as_uri())
    assert code == 2 and f"the --source folder {own} lacks test.txt (or the upstream test.tsv)" in " ".join(err.split())
    assert "offline?" not in err and not (tmp_path / "data").exists()
    assert "writing" not in err and "downloading" not in err  # checked before anything is read or said
    shutil.copyfile(REFERENCE / "ncbi_disease" / "test.txt", own / "test.txt")
    code, out, err = fetch(capsys, "ncbi_disease", "--root", str(tmp_path / "data"), "--source", own.as_uri())
    assert code == 0, err
    assert f"downloading {own.as_uri()}/train.txt" in " ".join(err.split()) and "matches the reference copy" in out


def test_without_nerplat_data_the_corpus_goes_where_runs_read_corpora(tmp_path, capsys, monkeypatch):
    from nerplat.data import corpora

    monkeypatch.delenv("NERPLAT_DATA", raising=False)
    monkeypatch.setattr(corpora, "SHARED_DATA", tmp_path / "shared")
    (tmp_path / "shared").mkdir()
    code, _, err = fetch(capsys, "ncbi_disease", "--source", source_folder(tmp_path, "ncbi_disease").as_uri())
    assert code == 0, err
    assert f"writing ncbi_disease into {tmp_path / 'shared' / 'ncbi_disease'}" in " ".join(err.split())
    assert (tmp_path / "shared" / "ncbi_disease" / "train.txt").is_file()


def test_an_unknown_corpus_points_to_a_dataset_path(tmp_path, capsys):
    code, _, err = fetch(capsys, "my_corpus", "--root", str(tmp_path))
    assert code == 2 and "dataset: {path: FOLDER}" in " ".join(err.split())
