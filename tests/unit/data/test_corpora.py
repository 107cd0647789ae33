import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from corpus_fakes import FIXTURES

from nerplat.config.trial import DatasetRef, FileSplit
from nerplat.data import corpora
from nerplat.data.corpora import CORPORA, CorpusFiles, dataset_problems, load_corpus
from nerplat.errors import UserInputError

real_find_spec = importlib.util.find_spec



def test_every_registered_corpus_has_a_summary_and_its_files_in_the_manifest(data_root):
    manifest = json.loads((data_root / "manifest.json").read_text())["corpora"]
    for entry in CORPORA.entries():
        source = entry.factory
        assert entry.summary and isinstance(source, CorpusFiles) and source.files, entry.name
        listed = {split["file"] for split in manifest[source.folder]["splits"].values()}
        assert {f"{source.folder}/{f}" for f in source.files} <= listed, entry.name
        assert all((data_root / source.folder / f).is_file() for f in source.files), entry.name
    assert set(manifest) == {entry.factory.folder for entry in CORPORA.entries()}  # every shared folder is registered


def test_registered_corpus_checksums_match_the_manifest(conll2003, data_root):
    manifest = json.loads((data_root / "manifest.json").read_text())["corpora"]["conll2003"]["splits"]
    assert conll2003.checksums == {split: manifest[split]["sha256"] for split in ("train", "dev", "test")}
    assert len(conll2003.train) == 14041 and conll2003.notes == ()


def test_corpus_without_dev_has_none_unless_asked(data_root):
    anem = load_corpus(DatasetRef(name="anem"))
    assert anem.dev is None and anem.test is not None


def test_folder_loads_and_unseen_test_labels_are_noted(tiny):
    assert (len(tiny.train), len(tiny.dev), len(tiny.test)) == (4, 2, 2)
    assert any("test: B-MISC, I-MISC" in note for note in tiny.notes)


def test_iob1_folder_is_converted_with_a_note_or_refused():
    folder = str(FIXTURES / "iob1_spaces")
    converted = load_corpus(DatasetRef(path=folder))
    assert any("IOB1 converted to IOB2, 5 tags changed" in n for n in converted.notes)
    assert any("2 -DOCSTART- lines skipped" in n for n in converted.notes)
    with pytest.raises(UserInputError, match="IOB1"):
        load_corpus(DatasetRef(path=folder, iob1="refuse"))


def test_problems_of_every_file_are_raised_together(tmp_path):
    (tmp_path / "train.txt").write_text("a\tX\n")
    (tmp_path / "test.txt").write_text("b\n")
    with pytest.raises(UserInputError) as caught:
        load_corpus(DatasetRef(path=str(tmp_path)))
    assert [(Path(p.source).name, p.line) for p in caught.value.problems] == [("train.txt", 1), ("test.txt", 1)]


def test_unknown_name_suggests_the_close_one():
    (problem,) = dataset_problems(DatasetRef(name="conl2003"))
    assert "did you mean 'conll2003'?" in problem
    with pytest.raises(UserInputError, match="did you mean 'conll2003'"):
        load_corpus(DatasetRef(name="conl2003"))


def test_data_root_defaults_to_shared_data_beside_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("NERPLAT_DATA")
    assert corpora.SHARED_DATA == Path(corpora.__file__).resolve().parents[3].parent / "shared" / "data"
    monkeypatch.setattr(corpora, "SHARED_DATA", tmp_path)
    assert corpora.data_root() == tmp_path
    monkeypatch.setenv("NERPLAT_DATA", str(tmp_path / "elsewhere"))
    assert corpora.data_root() == tmp_path / "elsewhere"


def test_missing_data_root_folder_and_files_are_reported(tmp_path, monkeypatch):
    monkeypatch.delenv("NERPLAT_DATA")
    monkeypatch.setattr(corpora, "SHARED_DATA", tmp_path / "no_shared_data")
    assert "NERPLAT_DATA is not set" in dataset_problems(DatasetRef(name="wnut17"))[0]
    monkeypatch.setenv("NERPLAT_DATA", str(tmp_path))
    assert "does not exist" in dataset_problems(DatasetRef(name="wnut17"))[0]
    (tmp_path / "wnut17").mkdir()
    (tmp_path / "wnut17" / "train.txt").write_text("a\tO\n")
    assert dataset_problems(DatasetRef(name="wnut17")) == [f"corpus folder {tmp_path / 'wnut17'} lacks dev.txt, test.txt"]
    assert "does not exist" in dataset_problems(DatasetRef(path=str(tmp_path / "nowhere")))[0]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (DatasetRef(), "exactly one"),
        (DatasetRef(name="wnut17", path="x"), "exactly one"),
        (DatasetRef(name="wnut17", dev_from_train=0.1), "already has a dev split"),
    ],
)
def test_bad_references_are_reported(ref, expected, data_root):
    assert any(expected in p for p in dataset_problems(ref))


def test_hub_name_without_datasets_package_names_the_extra(monkeypatch):
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args: None if name == "datasets" else real_find_spec(name, *args)
    )
    assert "pip install 'nerplat[hub]'" in dataset_problems(DatasetRef(name="hf:eriktks/conll2003"))[0]


@pytest.fixture
def no_dev(tmp_path) -> Path:
    shutil.copy(FIXTURES / "tiny" / "train.txt", tmp_path / "train.txt")
    shutil.copy(FIXTURES / "tiny" / "test.txt", tmp_path / "test.txt")
    return tmp_path


def test_dev_from_train_is_seeded_recorded_and_partitions_train(no_dev, tiny):
    ref = DatasetRef(path=str(no_dev), dev_from_train=0.25)
    first, again, other = (load_corpus(ref, seed=s) for s in (1, 1, 2))
    assert first.dev == again.dev and len(first.dev) == 1 and len(first.train) == 3
    assert sorted(first.train + first.dev, key=tiny.train.index) == list(tiny.train)
    assert any(n.startswith("dev split carved from train: 1 of 4 sentences") for n in first.notes)
    assert {first.checksums["dev"], first.checksums["train"]}.isdisjoint({tiny.checksums["train"]})
    seeds_differ = {load_corpus(ref, seed=s).dev for s in range(8)}
    assert len(seeds_differ) > 1 and other.dev in seeds_differ
    assert load_corpus(DatasetRef(path=str(no_dev))).dev is None


def test_one_file_is_a_corpus_whose_seeded_split_draws_dev_and_test(tmp_path):
    lines = "\n\n".join(f"w{i}\tB-PER\nx{i}\tO" for i in range(20))
    (tmp_path / "all.conll").write_text(lines + "\n")
    ref = DatasetRef(path=str(tmp_path / "all.conll"), split=FileSplit(dev=0.1, test=0.2, seed=5))
    first, again = load_corpus(ref), load_corpus(ref)
    assert (len(first.train), len(first.dev), len(first.test)) == (14, 2, 4)
    assert first.splits() == again.splits()  # the split's seed, not a trial's, draws them
    assert sorted(s.tokens for s in first.train + first.dev + first.test) == sorted((f"w{i}", f"x{i}") for i in range(20))
    other = load_corpus(ref.model_copy(update={"split": FileSplit(dev=0.1, test=0.2, seed=6)}))
    assert other.test != first.test
    assert set(first.checksums) == {"all", "train", "dev", "test"}
    assert any("one file split into train/dev/test (14/2/4 of 20 sentences: dev 0.1, test 0.2, seed 5)" in n for n in first.notes)
    assert dataset_problems(ref) == []


@pytest.mark.parametrize(
    "update, expected",
    [
        ({"split": None}, "split: {dev: 0.1, test: 0.1, seed: 0}"),
        ({"dev_from_train": 0.1}, "remove dev_from_train"),
    ],
)
def test_one_file_needs_its_split_and_nothing_else_drawing_dev(tmp_path, update, expected):
    (tmp_path / "all.conll").write_text("EU\tB-ORG\n")
    ref = DatasetRef(path=str(tmp_path / "all.conll"), split=FileSplit()).model_copy(update=update)
    [problem] = dataset_problems(ref)
    assert expected in problem


def test_a_split_on_a_folder_is_refused(no_dev):
    [problem] = dataset_problems(DatasetRef(path=str(no_dev), split=FileSplit()))
    assert "remove split" in problem


def test_a_registered_corpus_knows_its_folder_and_files():
    assert CORPORA.get("gmb_subset").factory.folder == "gmb"
    assert CORPORA.get("anem").factory.files == ("train.txt", "test.txt")
