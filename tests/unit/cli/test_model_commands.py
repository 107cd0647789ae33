"""`nerplat models / export / predict` on a real SQLite MLflow store with a registered tiny tagger."""

from __future__ import annotations

import json
import re

import pytest
from registered_tagger import NAME

from nerplat.cli import main
from nerplat.serving.records import predict_records


def nerplat(store, *args: str) -> int:
    return main([*args, "--workdir", str(store.workdir)])


def test_models_lists_the_registered_version(store, capsys):
    assert nerplat(store, "models") == 0
    out = capsys.readouterr().out
    assert NAME in out and store.run_id[:8] in out and "0.25" in out


@pytest.mark.parametrize("reference", [NAME, f"{NAME}/1", f"models:/{NAME}/1", "RUN", "RUN8"])
def test_predict_text_resolves_every_kind_of_reference(store, capsys, reference):
    reference = {"RUN": store.run_id, "RUN8": store.run_id[:8]}.get(reference, reference)  # `models` prints 8 digits
    assert nerplat(store, "predict", reference, "--text", "Peter Blackburn visited Brussels.") == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record == predict_records(store.bundle, [{"text": "Peter Blackburn visited Brussels."}])[0]
    assert "tagged 1 sentence in" in captured.err and "sentences/s" in captured.err


def test_a_run_id_prefix_resolves_through_mlflow_too(store):
    from nerplat.serving.references import resolve_model

    uri = f"sqlite:///{store.workdir / 'mlflow.db'}"
    assert resolve_model(store.run_id[:8], uri).uri == resolve_model(store.run_id, uri).uri


def test_predict_text_in_a_terminal_prints_a_table_with_rounded_scores(store, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert nerplat(store, "predict", NAME, "--text", "Peter Blackburn visited Brussels.") == 0
    out = capsys.readouterr().out
    assert not out.startswith("{") and "word" in out and "Blackburn" in out
    assert not any(len(number) > 4 for number in re.findall(r"\d\.(\d+)", out))
    assert nerplat(store, "predict", NAME, "--text", "Peter Blackburn visited Brussels.", "--json") == 0
    assert json.loads(capsys.readouterr().out)["words"][0] == "Peter"


def test_predict_text_that_is_not_utf8_exits_2_naming_the_byte(store, capsys):
    latin1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # what Python makes of such an argument
    assert nerplat(store, "predict", NAME, "--text", latin1) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 (byte 0xe9 at character 4)" in err and "Traceback" not in err


def test_predict_reads_a_conll_file_named_txt_as_conll(store, tmp_path, capsys):
    source = tmp_path / "test.txt"  # nerplat's own corpora are CoNLL files named .txt
    source.write_text("EU\tB-ORG\nrejects\tO\n\nPeter\tB-PER\nBlackburn\tI-PER\n")
    assert main(["predict", str(store.bundle_dir), str(source), "--output-format", "conll"]) == 0
    captured = capsys.readouterr()
    words = [line.split("\t")[0] for line in captured.out.splitlines() if line]
    assert words == ["EU", "rejects", "Peter", "Blackburn"] and "tagged 2 sentences" in captured.err


def test_predict_spans_are_strict_unless_lenient_is_asked_for(store, capsys, monkeypatch):
    from nerplat.serving import records
    from nerplat.serving.predictor import TaggedSentence, spans_of

    def o_then_i(bundle, sentences, batch_size, stop, span_rule):  # a tagger that opens a span with I-
        return [TaggedSentence(w, ["O", "I-PER"], None, spans_of(["O", "I-PER"], None, span_rule)) for w in sentences]

    monkeypatch.setattr(records, "tag_sentences", o_then_i)
    assert nerplat(store, "predict", NAME, "--text", "a b", "--words", "whitespace") == 0
    assert json.loads(capsys.readouterr().out)["spans"] == []
    assert nerplat(store, "predict", NAME, "--text", "a b", "--words", "whitespace", "--spans", "lenient") == 0
    assert [s["type"] for s in json.loads(capsys.readouterr().out)["spans"]] == ["PER"]


@pytest.mark.parametrize("text", ["", "  "])
def test_predict_an_empty_text_tags_no_words_as_serve_does(store, capsys, text):
    assert nerplat(store, "predict", NAME, "--text", text) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["words"] == record["tags"] == record["spans"] == []
    assert record == predict_records(store.bundle, [{"text": text}])[0]  # what serve answers for the row


def test_predict_a_conll_file_from_a_bundle_folder_writes_conll(store, tmp_path, capsys):
    source = tmp_path / "in.conll"
    source.write_text("EU\tB-ORG\nrejects\tO\n\nPeter\tB-PER\nBlackburn\tI-PER\n")
    out = tmp_path / "out.conll"
    code = main(["predict", str(store.bundle_dir), str(source), "--output", str(out), "--output-format", "conll"])
    assert code == 0, capsys.readouterr().err
    blocks = out.read_text().strip().split("\n\n")
    words = [[line.split("\t")[0] for line in block.splitlines()] for block in blocks]
    assert words == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert all(len(line.split("\t")) == 3 for block in blocks for line in block.splitlines())  # word, tag, score


def test_export_a_registered_model_to_a_huggingface_folder(store, tmp_path, capsys):
    out = tmp_path / "exported"
    assert nerplat(store, "export", NAME, "--out", str(out)) == 0
    assert "huggingface" in capsys.readouterr().out
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {p.name for p in out.iterdir()}
    config = json.loads((out / "config.json").read_text())
    assert list(config["id2label"].values()) == store.bundle.labels


@pytest.mark.parametrize(
    "args, message",
    [
        (["predict", "ce.exq", "--text", "x"], "did you mean 'ce.exp'"),
        (["predict", f"{NAME}/7", "--text", "x"], "does not have"),
        (["predict", "BARE", "--text", "x"], "run without a logged model"),
        (["predict", NAME], "either --text or an input file"),
        (["predict", NAME, "--text", "x", "--words", "spacy"], "--words"),
        (["predict", NAME, "--text", "x", "--spans", "loose"], "choose one of strict, lenient"),
        (["export", "nothing-here", "--out", "OUT"], "no registered model"),
    ],
)
def test_bad_input_exits_2_with_a_message(store, capsys, tmp_path, args, message):
    args = [str(tmp_path / "o") if a == "OUT" else store.bare_run_id if a == "BARE" else a for a in args]
    assert nerplat(store, *args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, message",
    [(b"", "empty input"), ("caf\u00e9 au lait\n".encode("latin-1"), "not UTF-8")],
)
def test_bad_files_exit_2_naming_the_file(store, capsys, tmp_path, content, message):
    source = tmp_path / "in.txt"
    source.write_bytes(content)
    assert main(["predict", str(store.bundle_dir), str(source)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(source) in err


def test_a_missing_store_is_named(tmp_path, capsys):
    assert main(["models", "--workdir", str(tmp_path)]) == 2
    assert "no MLflow store" in capsys.readouterr().err


def test_train_save_writes_a_weights_only_model_that_predict_reads(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "experiment: save_check\ndataset: conll2003\nmodel: {encoder: tiny, max_length: 48}\n"
        "train: {epochs: 1, batch_size: 8, lr: 1.0e-3, dev_subset: 20, threads: 1}\n"
        "samplers: [{low_resource: {size: 16, partitions: 1}}]\nmethods:\n  ce: {loss: ce}\nreplicate: {seeds: 1}\n"
    )
    saved = tmp_path / "model"
    assert main(["train", str(spec), "-m", "ce", "--split", "dev", "--save", str(saved), "--json"]) == 0
    assert {p.name for p in saved.iterdir()} == {"tagger.json", "encoder", "tokenizer", "weights.safetensors"}
    capsys.readouterr()
    assert main(["predict", str(saved), "--text", "EU rejects German call ."]) == 0
    assert json.loads(capsys.readouterr().out)["words"] == ["EU", "rejects", "German", "call", "."]


def test_models_json_has_the_full_name_and_numbers(store, capsys):
    assert nerplat(store, "models", "--json") == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["name"] == NAME and row["version"] == 1 and row["run_id"] == store.run_id
    assert row["uri"] == f"models:/{NAME}/1" and row["test_micro_f1"] == 0.25
    assert row["selected_epoch"] == 1  # the version's tag holds '1.0'


@pytest.mark.parametrize("columns", [200, 40])
def test_models_keeps_names_whole_at_any_width(store, capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert nerplat(store, "models") == 0
    lines = capsys.readouterr().out.splitlines()
    if columns == 200:  # a table row
        assert any(line.startswith(NAME) and "0.2500" in line and line.rstrip().endswith(" 1") for line in lines)
    else:  # the name alone on its line, the details under it
        assert NAME in lines
        assert any(line.strip().startswith("version 1") and "0.2500" in line and line.endswith("epoch 1") for line in lines)


def test_evaluate_scores_a_gold_file_with_the_reports_metrics(store, tmp_path, capsys):
    from nerplat.metrics import evaluate_tags

    gold = [(["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"]), (["Peter", "Blackburn"], ["B-PER", "I-PER"])]
    source = tmp_path / "gold.conll"
    source.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in zip(*s)) for s in gold) + "\n")
    assert nerplat(store, "evaluate", NAME, str(source), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    predicted = [r["tags"] for r in predict_records(store.bundle, [{"tokens": words} for words, _ in gold])]
    assert report["sentences"] == 2 and report["metrics"] == evaluate_tags([tags for _, tags in gold], predicted)
    assert nerplat(store, "evaluate", NAME, str(source)) == 0
    out = capsys.readouterr().out
    assert all(row in out for row in ("micro", "macro", "PER", "MISC", "ORG", "strict IOB2"))


def test_evaluate_names_a_bad_gold_line(store, tmp_path, capsys):
    source = tmp_path / "gold.conll"
    source.write_text("EU\tB-ORG\nrejects\n")
    assert nerplat(store, "evaluate", NAME, str(source)) == 2
    assert f"{source}:2" in capsys.readouterr().err


def test_evaluate_of_a_garbage_file_prints_ten_problems_and_a_count(store, tmp_path, capsys):
    """Random bytes once printed a megabyte of errors; a long unreadable line is quoted cut short."""
    source = tmp_path / "garbage.conll"
    source.write_bytes(b"x" * 100_000 + b"\n" + b"".join(bytes([65 + i % 26]) * (i % 7) + b" \n" for i in range(2_000)))
    assert nerplat(store, "evaluate", NAME, str(source)) == 2
    err = capsys.readouterr().err
    assert f"({source}:1)" in err and f"({source}:12)" in err and f"({source}:13)" not in err
    assert f"... and 1,705 more problems in this file ({source})" in err
    assert len(err) < 3_000 and "Traceback" not in err


def test_a_model_is_read_where_the_store_keeps_it_quietly(store, capsys):
    from nerplat.serving.references import model_folder, resolve_model

    uri = f"sqlite:///{store.workdir / 'mlflow.db'}"
    folder = model_folder(resolve_model(NAME, uri).uri, uri)
    assert folder.is_relative_to(store.workdir / "mlartifacts")  # in place: nothing downloaded
    assert nerplat(store, "predict", NAME, "--text", "EU rejects German call .") == 0
    err = capsys.readouterr().err
    assert "Downloading artifacts" not in err and "Warning" not in err


def test_a_model_of_a_remote_store_is_downloaded_once_into_the_cache(store, tmp_path):
    from nerplat.serving.references import cached_download, model_folder, resolve_model

    uri = f"sqlite:///{store.workdir / 'mlflow.db'}"
    location = model_folder(resolve_model(NAME, uri).uri, uri).as_uri()  # as a remote store would name it
    first = cached_download(location, tmp_path / "cache")
    assert (first / "MLmodel").is_file() and first.parent == tmp_path / "cache"
    assert cached_download(location, tmp_path / "cache") == first and len(list((tmp_path / "cache").iterdir())) == 1


def test_a_registered_model_or_a_runs_model_of_a_sqlite_store_is_found_without_mlflow(store):
    from nerplat.serving.references import folder_on_disk, model_folder, resolve_model

    uri = f"sqlite:///{store.workdir / 'mlflow.db'}"
    expected = model_folder(resolve_model(NAME, uri).uri, uri)
    assert folder_on_disk(NAME, uri) == expected == folder_on_disk(f"{NAME}/1", uri)
    assert folder_on_disk(store.run_id, uri) == model_folder(resolve_model(store.run_id, uri).uri, uri) == expected
    for unsure in (f"{NAME}/7", f"{NAME}@champion", "no.such.model", store.bare_run_id, "0" * 32, f"models:/{NAME}/1"):
        assert folder_on_disk(unsure, uri) is None  # MLflow resolves these, or names the problem


def test_train_with_a_loss_that_is_not_finite_exits_1_naming_the_objective_and_the_step(tmp_path, capsys):
    """Issue 31, H4, in-process: the trial's message and exit 1, no traceback."""
    (tmp_path / "nan_loss_plugin.py").write_text(
        "from nerplat.objectives import OBJECTIVES\nfrom nerplat.objectives.ce import CEConfig, CrossEntropy\n\n\n"
        "class NanLoss(CrossEntropy):\n    def word_losses(self, scores, labels):\n"
        "        return super().word_losses(scores, labels) * float('nan')\n\n\n"
        "@OBJECTIVES.register('cli_nan_loss', config=CEConfig)\ndef build(config, context):\n"
        "    \"\"\"Never finite.\"\"\"\n    return NanLoss(config)\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "experiment: nan_check\ndataset: conll2003\nmodel: {encoder: tiny, max_length: 48}\nplugins: [./nan_loss_plugin.py]\n"
        "train: {epochs: 2, batch_size: 8, lr: 1.0e-3, dev_subset: 20, threads: 1}\n"
        "samplers: [{low_resource: {size: 16, partitions: 1}}]\nmethods:\n  nan: {loss: cli_nan_loss}\nreplicate: {seeds: 1}\n"
    )
    assert main(["train", str(spec), "-m", "nan", "--split", "dev"]) == 1
    out = capsys.readouterr()
    assert "trial failed:" in out.out and "the loss of objective 'cli_nan_loss' is nan at epoch 1, step " in out.out
    assert "Traceback" not in out.out + out.err


def test_evaluate_on_gold_of_other_entity_types_warns_why_f1_is_zero(store, tmp_path, capsys):
    """An untyped (ENT) model on typed gold once printed F1 0.0000 with no hint (issue 47)."""
    source = tmp_path / "gold.conll"
    source.write_text("EU\tB-ENT\nrejects\tO\n\nPeter\tB-THING\nBlackburn\tI-THING\n")
    assert nerplat(store, "evaluate", NAME, str(source)) == 0
    err = capsys.readouterr().err
    assert "do not overlap" in err and "(ENT, THING)" in err and "F1 is 0" in err
    assert all(t in err for t in ("LOC", "MISC", "ORG", "PER"))  # the model's own types, named
    typed = tmp_path / "typed.conll"
    typed.write_text("EU\tB-ORG\nrejects\tO\n")
    assert nerplat(store, "evaluate", NAME, str(typed)) == 0
    assert "overlap" not in capsys.readouterr().err
