"""Hostile corpora (tests/fixtures/corpora/hostile) through the real CLI: `nerplat validate` reads
every split and `nerplat run` does so before Ray starts; both exit 2, name the file and line and
what to do, and write nothing."""

import json
import os
import shutil
from pathlib import Path

import pytest

from nerplat.cli import main

HOSTILE = Path(__file__).parents[2] / "fixtures" / "corpora" / "hostile"
TINY = HOSTILE.parent / "tiny"

# corpus folder -> (dataset options, text the message contains, file:line it names or None)
CASES = {
    "empty_train": ("", "empty CoNLL file: no sentences", "train.txt)"),
    "only_docstart": ("", "empty CoNLL file: no sentences", "train.txt)"),
    "illegal_tag": ("", "illegal tag 'B_LOC': expected O, B-TYPE or I-TYPE", "train.txt:9"),
    "lower_case_tag": ("", "illegal tag 'b-loc'", "train.txt:9"),
    "tag_without_type": ("", "illegal tag 'B-'", "train.txt:9"),
    "missing_tag_column": ("", "cannot read line 'Brussels': expected TOKEN<TAB>TAG", "train.txt:9"),
    "tag_without_token": ("", "cannot read line 'O': expected TOKEN<TAB>TAG", "train.txt:9"),
    "nul_in_tag": ("", "line holds control character #x0000: remove it", "train.txt:9"),
    "not_utf8": ("", "line is not UTF-8 text", "train.txt:9"),
    "binary_file": ("", "line is not UTF-8 text", "train.txt:1"),
    "no_train": ("", "lacks train.txt", None),
    "train_without_entities": ("", "has no entity: all 6 of its tokens are tagged O", "train.txt)"),
    "train_is_a_folder": ("", "train.txt is a folder, not a regular file: make it the file of its split", None),
    "broken_dev": ("", "illegal tag 'X-LOC'", "dev.txt:9"),
    "broken_test": ("", "illegal tag 'I'", "test.txt:1"),
    "dev_from_train_with_dev": (", dev_from_train: 0.2", "already has a dev split; remove dev_from_train", None),
    "dev_from_train_too_small": (", dev_from_train: 0.5", "dev_from_train on corpus", None),
    "iob1_refused": (", iob1: refuse", "which IOB2 forbids (IOB1 input); set iob1: convert", "train.txt:1"),
    "jsonl_label_is_a_tag": (
        ", format: jsonl_tokens", "labelled with the tag 'B-PER': a span's label is the entity type alone, 'PER'", "train.jsonl:2"
    ),
    "jsonl_label_is_o": (
        ", format: jsonl_tokens", "is labelled O, which marks words outside entities: leave the span out", "train.jsonl:3"
    ),
    "jsonl_offsets_true_false": (", format: jsonl_tokens", "needs whole-number token offsets for start and end", "train.jsonl:1"),
    "jsonl_text_span_splits_an_accent": (
        ", format: jsonl_text", "span [0, 4) 'Cafe' splits the character 'e\u0301' at offset 4", "train.jsonl:2"
    ),
}


def spec_for(folder: Path, options: str, where: Path) -> Path:
    spec = where / "spec.yaml"
    spec.write_text(
        f"experiment: hostile\ndataset: {{path: {json.dumps(str(folder))}{options}}}\nmethods: {{ce: {{loss: ce}}}}\n"
    )
    return spec


def test_there_are_fifteen_and_more_hostile_corpora():
    assert len(CASES) >= 15 and sorted(CASES) == sorted(os.listdir(HOSTILE))


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_reads_a_hostile_corpus_and_names_file_and_line(name, capsys, tmp_path, monkeypatch):
    options, text, location = CASES[name]
    spec = spec_for(HOSTILE / name, options, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert text in err and f"at dataset ({spec}:2)" in err, err
    assert location is None or f"{HOSTILE / name}/{location}" in err, err
    assert os.listdir(tmp_path) == ["spec.yaml"]


@pytest.mark.parametrize("name", ["illegal_tag", "broken_test", "iob1_refused"])
def test_run_reads_the_corpus_before_ray_starts_and_writes_nothing(name, capsys, tmp_path):
    import ray

    options, text, _ = CASES[name]
    spec = spec_for(HOSTILE / name, options, tmp_path)
    assert main(["run", str(spec), "--workdir", str(tmp_path / "work")]) == 2
    assert text in capsys.readouterr().err
    assert not ray.is_initialized() and not (tmp_path / "work").exists()


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (os.mkfifo, "a FIFO"),
        (lambda path: path.symlink_to("/dev/zero"), "a character device"),
        (lambda path: path.symlink_to("nowhere.txt"), "a symlink to nowhere.txt, which does not exist"),
    ],
    ids=["fifo", "symlink_to_dev_zero", "dangling_symlink"],
)
def test_a_train_txt_that_is_no_regular_file_is_refused_as_such_without_blocking(make, kind, capsys, tmp_path):
    """Issue 62: a FIFO or a symlink to /dev/zero as train.txt was called missing."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    make(folder / "train.txt")
    spec = spec_for(folder, "", tmp_path)
    assert main(["validate", str(spec)]) == 2
    assert f"{folder / 'train.txt'} is {kind}, not a regular file: make it the file of its split" in capsys.readouterr().err


def test_a_corpus_fixed_after_a_failed_validate_is_read_again(capsys, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "train.txt").write_text("EU\tB_ORG\n")
    (folder / "test.txt").write_text("EU\tB-ORG\n")  # replicates evaluate on test
    spec = spec_for(folder, "", tmp_path)
    assert main(["validate", str(spec)]) == 2
    (folder / "train.txt").write_text("EU\tB-ORG\nrejects\tO\n")
    capsys.readouterr()
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("folder_name", "label"),
    [("o'brien", "o%27brien"), ('say "hi"', "say %22hi%22"), ("back\\slash", "back%5Cslash"), (" padded ", "%20padded%20")],
)
def test_a_folder_name_a_run_key_cannot_hold_is_written_as_percent_escapes(folder_name, label, capsys, tmp_path):
    """Run keys go into MLflow filters between quotes: `run` once died on such a folder after Ray started."""
    from nerplat.catalog import default_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.run_keys import arm_run_key, replicate_run_key

    folder = tmp_path / folder_name
    shutil.copytree(TINY, folder)
    spec = spec_for(folder, "", tmp_path)
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err
    plan = compile_plan(spec, default_catalog())
    [arm] = plan.arms
    assert arm.dataset == label and arm.id == f"{label}/full/ce"
    assert arm_run_key(arm.id, "tune") and replicate_run_key(arm.id, 1, 0)


def test_jsonl_lines_are_bounded_and_so_is_what_is_printed(capsys, tmp_path, monkeypatch):
    """Thirty bad 1 MB lines once took gigabytes to read and printed 52 MB: a line too long to be a
    record is refused unparsed, values quoted in messages are cut short, and a file prints its
    first 10 problems and how many more it has."""
    folder = tmp_path / "long_lines"
    folder.mkdir()
    too_long = '{"tokens": ["' + "x" * 1_100_000 + '"], "spans": []}\n'
    bad_label = json.dumps({"tokens": ["Ada"], "spans": [{"start": 0, "end": 1, "label": "P" * 900_000 + " x"}]}) + "\n"
    (folder / "train.jsonl").write_text(bad_label * 5 + too_long * 25)
    spec = spec_for(folder, ", format: jsonl_tokens", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{folder}/train.jsonl:1)" in err and "needs a label without spaces" in err
    assert f"{folder}/train.jsonl:6)" in err and "the line is 1,100,029 bytes, more than the 1,000,000 a record may have" in err
    assert f"... and 20 more bad records in this file ({folder}/train.jsonl)" in err
    assert len(err) < 10_000 and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["long_lines", "spec.yaml"]


@pytest.mark.parametrize(
    "file_name, options, text",
    [
        (
            "train.jsonl", ", format: jsonl_tokens",
            json.dumps({"tokens": ["Ada"], "spans": [{"start": 0, "end": 1, "label": "P" * 999_000}]}),
        ),
        ("train.jsonl", ", format: jsonl_tokens", json.dumps({"tokens": ["Ada"], "tags": ["B-" + "P" * 999_000]})),
        ("train.txt", "", "Ada\tB-" + "P" * 999_000),
    ],
)
def test_an_entity_type_of_a_million_characters_is_refused(file_name, options, text, capsys, tmp_path, monkeypatch):
    """A 999,000-character label was read as a type, and `data stats` printed it: 3 MB."""
    folder = tmp_path / "long_label"
    folder.mkdir()
    (folder / file_name).write_text(text + "\n")
    spec = spec_for(folder, options, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "has 999,000 characters, more than the 100 a type may have: name it in a word or two, e.g. PER" in err
    assert f"({folder}/{file_name}:1)" in err and len(err) < 2_000 and "Traceback" not in err
