"""`nerplat data stats` and `nerplat data sample` through the real entry point (exit codes, stdout)."""

import json
from pathlib import Path

import pytest

from nerplat.cli import main
from nerplat.data.conll import read_conll

TINY = str(Path(__file__).resolve().parents[2] / "fixtures" / "corpora" / "tiny")


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_stats_json_equals_the_manifest_for_conll2003(capsys, data_root):
    code, out, _ = run(capsys, "data", "stats", "conll2003", "--json")
    manifest = json.loads((data_root / "manifest.json").read_text())["corpora"]["conll2003"]["splits"]
    ours = json.loads(out)["splits"]
    assert code == 0 and set(ours) == set(manifest)
    for split, expected in manifest.items():
        for key in ("sentences", "tokens", "mentions_total", "mentions_per_type", "pct_B", "pct_I", "pct_O"):
            assert ours[split][key] == expected[key], (split, key)


def test_stats_table_warns_about_labels_unseen_in_train(capsys):
    code, out, _ = run(capsys, "data", "stats", TINY)
    assert code == 0
    assert "test has labels absent from train: B-MISC, I-MISC" in " ".join(out.split())


def test_stats_of_an_unknown_corpus_exits_2_with_a_suggestion(capsys):
    code, out, err = run(capsys, "data", "stats", "conll203", "--json")
    assert code == 2 and out == ""
    assert "did you mean 'conll2003'?" in err


def test_sample_json_summary_and_out_folder(capsys, tmp_path):
    code, out, _ = run(
        capsys, "data", "sample", TINY, "--sampler", "sc", "--param", "formula=reference_code", "--json", "--out", str(tmp_path)
    )
    summary = json.loads(out)
    assert code == 0
    # train sentences of 5, 3, 4, 6 tokens with 3, 0, 3, 1 entity tokens are repeated 4, 1, 4, 2 times
    assert summary["sentences"] == 4 + 1 + 4 + 2
    assert summary["tokens"] == 5 * 4 + 3 + 4 * 4 + 6 * 2
    assert summary["size_factor"] == round(51 / 18, 4)
    assert 0 < summary["entity_token_share"] < 1 and summary["note"].startswith("sc(formula=reference_code)")
    written = read_conll(tmp_path / "train.txt")
    assert len(written.sentences) == 11 and written.sha256 == summary["train_sha256"]
    assert (tmp_path / "test.txt").exists()


def test_sample_is_reproducible_by_seed_and_partition(capsys):
    def sha(*extra):
        return json.loads(run(capsys, "data", "sample", TINY, "--sampler", "fraction", "--param", "f=0.5", "--json", *extra)[1])[
            "train_sha256"
        ]

    assert sha("--seed", "1") == sha("--seed", "1")
    assert len({sha("--seed", str(s)) for s in range(6)}) > 1


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--sampler", "low_resource", "--param", "sise=3"], "--param sise"),
        (["--sampler", "low_resource", "--param", "size=three"], "--param size"),
        (["--sampler", "low_resource", "--param", "size"], "--param"),
        (["--sampler", "low_resourse"], "--sampler"),
    ],
)
def test_bad_sampler_flags_exit_2_naming_the_flag(capsys, argv, flag):
    code, out, err = run(capsys, "data", "sample", TINY, *argv)
    assert code == 2 and out == ""
    assert f"at {flag}" in err


def test_impossible_request_exits_2(capsys):
    code, _, err = run(capsys, "data", "sample", TINY, "--sampler", "low_resource", "--param", "size=10")
    assert code == 2 and "has only 4" in err


def test_stats_reads_a_folder_in_another_format(capsys, tmp_path):
    record = {"tokens": ["Ada", "Lovelace", "wrote"], "spans": [{"start": 0, "end": 2, "label": "PER"}]}
    (tmp_path / "train.jsonl").write_text(json.dumps(record) + "\n")
    code, out, _ = run(capsys, "data", "stats", str(tmp_path), "--format", "jsonl_tokens", "--json")
    assert code == 0 and json.loads(out)["splits"]["train"]["mentions_per_type"] == {"PER": 1}
    code, _, err = run(capsys, "data", "stats", str(tmp_path), "--format", "jsonl_token")
    assert code == 2 and "did you mean 'jsonl_tokens'" in err


def test_a_single_file_too_short_to_split_is_refused_naming_it(capsys, tmp_path):
    single = tmp_path / "mine.conll"
    single.write_text("EU\tB-ORG\n\n")
    assert main(["data", "stats", str(single)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown corpus" not in err
    assert f"split of {single}: cannot split fewer than two sentences" in err


def test_sample_out_onto_a_file_exits_2_before_anything_is_read(capsys, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    code, _, err = run(capsys, "data", "sample", TINY, "--sampler", "sc", "--out", str(taken))
    assert code == 2 and "is not a folder" in err and "Traceback" not in err
    assert taken.read_text() == "mine\n"


def test_stats_of_one_file_reads_it_with_the_default_split(capsys, tmp_path):
    lines = "\n\n".join(f"w{i}\tB-PER\nx{i}\tO" for i in range(20))
    (tmp_path / "all.conll").write_text(lines + "\n")
    code, out, err = run(capsys, "data", "stats", str(tmp_path / "all.conll"), "--json")
    assert code == 0, err
    assert {name: split["sentences"] for name, split in json.loads(out)["splits"].items()} == {"train": 16, "dev": 2, "test": 2}
