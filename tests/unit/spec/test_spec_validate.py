"""Whole specs: sections, datasets, tune and analysis rules, and every problem reported at once."""

from pathlib import Path

import pytest

from nerplat.config.trial import DatasetRef
from nerplat.errors import UserInputError
from nerplat.spec.validate import SpecSource, load_spec
from spec_testing import spec_problems

MINIMAL = "experiment: t\ndataset: conll2003\nmethods: {ce: {loss: ce}}\n"


def test_a_minimal_spec_takes_every_default(catalog, write_spec):
    validated = load_spec(write_spec(MINIMAL), catalog)
    assert validated.spec.experiment == "t"
    assert [d.label for d in validated.datasets] == ["conll2003"]
    assert validated.encoder.name == "minilm-l6"
    assert validated.tune is None
    assert validated.seeds == {"full": tuple(range(10))}
    assert validated.spec.replicate.split == "test"
    assert validated.spec.analysis.test == "paired_t"
    assert validated.resolved_data() == {"experiment": "t", "dataset": "conll2003", "methods": {"ce": {"loss": "ce"}}}


def test_interpolation_reaches_the_spec(catalog, write_spec):
    text = MINIMAL + "train:\n  epochs: ${EPOCHS:-3}\n  lr: ${LR:-1.0e-4}\ntracking: {uri: '${MLFLOW:-sqlite:///m.db}'}\n"
    validated = load_spec(SpecSource(write_spec(text), environ={"EPOCHS": "7"}), catalog)
    assert validated.methods[0].train["epochs"] == 7
    assert validated.methods[0].train["lr"] == 1.0e-4
    assert validated.spec.tracking.uri == "sqlite:///m.db"


def test_the_optuna_storage_must_be_a_database_url(catalog, write_spec):
    text = MINIMAL + "tracking:\n  optuna_storage: optuna.db\n"
    [(path, line, message)] = spec_problems(catalog, write_spec, text)
    assert (path, line) == ("tracking.optuna_storage", 5) and "should match pattern" in message
    ok = load_spec(write_spec(MINIMAL + "tracking: {optuna_storage: 'postgresql://optuna@db:5432/optuna'}\n"), catalog)
    assert ok.spec.tracking.optuna_storage == "postgresql://optuna@db:5432/optuna"


def test_quoted_references_in_flow_mappings_are_coerced_by_the_schema(catalog, write_spec):
    # `{epochs: ${EPOCHS}}` is not YAML (a plain scalar in a flow mapping cannot hold braces): quote it.
    text = MINIMAL + "train: {epochs: '${EPOCHS:-3}'}\n"
    assert load_spec(SpecSource(write_spec(text), environ={}), catalog).methods[0].train["epochs"] == 3


def test_x_keys_hold_anchors_and_are_not_sections(catalog, write_spec):
    text = "x-train: &train {epochs: 2}\nexperiment: t\ndataset: conll2003\ntrain: *train\nmethods: {ce: {loss: ce}}\n"
    validated = load_spec(write_spec(text), catalog)
    assert validated.methods[0].train["epochs"] == 2
    assert "x-train" not in validated.resolved_data()


def test_several_datasets_by_name_hub_id_and_path(catalog, write_spec, tmp_path):
    (tmp_path / "my_corpus").mkdir()
    text = (
        "experiment: t\ndatasets:\n  - conll2003\n  - {name: 'hf:org/corpus', iob1: refuse}\n"
        "  - {path: my_corpus, dev_from_train: 0.1}\nmethods: {ce: {loss: ce}}\n"
    )
    datasets = load_spec(write_spec(text), catalog).datasets
    assert [d.label for d in datasets] == ["conll2003", "hf:org--corpus", "my_corpus"]
    assert datasets[1].ref == DatasetRef(name="hf:org/corpus", iob1="refuse")
    assert datasets[2].ref == DatasetRef(path=str((tmp_path / "my_corpus").resolve()), dev_from_train=0.1)


@pytest.mark.parametrize(
    ("datasets", "path", "line", "message"),
    [
        ("dataset: {name: conll2003, path: x}", "dataset", 2,
         "either a name (conll2003, hf:<hub id>) or a path, not both or neither"),
        ("dataset: {iob1: convert}", "dataset", 2, "either a name"),
        ("dataset: {name: conll2003, iob1: maybe}", "dataset.iob1", 2, "input should be 'convert' or 'refuse' (got 'maybe')"),
        ("dataset: {name: conll2003, dev_from_train: 1.5}", "dataset.dev_from_train", 2, "less than 1"),
        ("dataset: {path: nowhere}", "dataset.path", 2, "no corpus folder or file at"),
        ("dataset: 'hf:'", "dataset", 2, "write a hub dataset as hf:<owner>/<name>"),
        ("datasets: [conll2003, wnut17, conll2003]", "datasets[2]", 2,
         "dataset 'conll2003' is given twice (also at datasets[0])"),
        ("datasets: []", "datasets", 2, "list should have at least 1 item"),
        ("dataset: conll2003\ndatasets: [wnut17]", "datasets", 3, "give either dataset (one) or datasets (a list), not both"),
        ("description: no data", None, 1, "the spec needs a dataset"),
    ],
)
def test_bad_datasets(catalog, write_spec, datasets, path, line, message):
    found = spec_problems(catalog, write_spec, f"experiment: t\n{datasets}\nmethods: {{ce: {{loss: ce}}}}\n")
    assert len(found) == 1, found
    assert found[0][:2] == (path, line)
    assert message in found[0][2]


def test_the_data_layer_check_is_consulted(catalog, write_spec):
    seen = []

    def check(ref):
        seen.append(ref)
        return ["NERPLAT_DATA is not set"]

    found = spec_problems(catalog, write_spec, MINIMAL, dataset_check=check)
    assert found == [("dataset", 2, "NERPLAT_DATA is not set")]
    assert seen == [DatasetRef(name="conll2003")]


@pytest.mark.parametrize(
    ("encoder", "ok"),
    [("tiny", True), ("google-bert/bert-base-cased", True), ("minilm", False), ("bert-base-cased", False)],
)
def test_encoders_are_registered_names_hub_ids_or_folders(catalog, write_spec, encoder, ok):
    text = MINIMAL + f"model: {{encoder: {encoder}}}\n"
    if ok:
        assert load_spec(write_spec(text), catalog).encoder.name == encoder
    else:
        ((path, _, message),) = spec_problems(catalog, write_spec, text)
        assert path == "model.encoder" and "owner/name" in message


def test_a_model_folder_is_an_encoder_relative_to_the_spec(catalog, write_spec, tmp_path):
    (tmp_path / "models" / "mine").mkdir(parents=True)
    (tmp_path / "models" / "mine" / "config.json").write_text("{}")
    expected = str((tmp_path / "models" / "mine").resolve())
    assert load_spec(write_spec(MINIMAL + "model: {encoder: models/mine}\n"), catalog).encoder.name == expected
    assert load_spec(write_spec(MINIMAL + f"model: {{encoder: {expected}}}\n"), catalog).encoder.name == expected


@pytest.mark.parametrize(
    ("section", "path", "message"),
    [
        ("experiment: 'a/b'", "experiment", "'a/b' must start with a letter or digit"),
        ("methods: {}", "methods", "dictionary should have at least 1 item"),
        ("methods: {'ce/2': {loss: ce}}", "methods['ce/2']", "'ce/2' must start with a letter or digit"),
        ("methods: {ce: {head: softmax}}", "methods.ce.loss", "missing required key 'loss'"),
        ("methods: {ce: ce}", "methods.ce", "input should be a valid dictionary"),
        ("model: {max_length: 8}", "model.max_length", "greater than or equal to 16 (got 8)"),
        ("model: {heads: crf}", "model.heads", "unknown key 'heads' in model; did you mean 'head'?"),
        ("replicate: {seeds: [1, 1]}", "replicate.seeds", "seeds must not repeat"),
        ("replicate: {seeds: ten}", "replicate.seeds",
         "input should be a valid integer, unable to parse string as an integer or a valid list"),
        ("replicate: {split: train}", "replicate.split", "input should be 'test' or 'dev' (got 'train')"),
        ("analysis: {alpha: 1.5}", "analysis.alpha", "less than 1 (got 1.5)"),
        ("analysis: {test: t_test}", "analysis.test", "input should be 'paired_t' or 'wilcoxon'"),
        ("analysis: {comparisons: [[ce, ce]]}", "analysis.comparisons[0]", "comparing ce with itself tests nothing"),
        ("analysis: {against_best: [mmo]}", "analysis.against_best[0]", "unknown method 'mmo'"),
        ("analysis: {reference_sampler: original}", "analysis.reference_sampler",
         "unknown sampler setting 'original' (settings: full)"),
        ("analysis: {average: weighted}", "analysis.average", "input should be 'micro' or 'macro'"),
        ("resources: {cpus_per_worker: 0}", "resources.cpus_per_worker", "greater than 0"),
        ("resources: {gpus: 1}", "resources.gpus", "unknown key 'gpus' in resources; did you mean 'gpus_per_worker'?"),
    ],
)
def test_bad_sections(catalog, write_spec, section, path, message):
    base = {"experiment": "experiment: t", "methods": "methods: {ce: {loss: ce}}"}
    key = section.split(":")[0]
    text = "\n".join([section if k == key else v for k, v in base.items()] + ([section] if key not in base else []))
    found = spec_problems(catalog, write_spec, text + "\ndataset: conll2003\n")
    assert len(found) == 1, found
    assert found[0][0] == path
    assert message in found[0][2]


TUNED = "experiment: t\ndataset: conll2003\nmethods:\n  ce: {loss: ce}\n  mom: {loss: mom, lambda: {uniform: [0, 1]}}\n"


def test_tune_defaults_and_components(catalog, write_spec):
    tune = load_spec(write_spec(TUNED + "tune: {}\n"), catalog).tune
    assert (tune.searcher.name, tune.searcher.params) == ("tpe", {"n_startup_trials": 5})
    assert (tune.scheduler.name, tune.metric, tune.mode, tune.num_samples, tune.max_concurrent) == (
        "fifo", "dev_micro_f1", "max", 20, None
    )
    tune = load_spec(
        write_spec(TUNED + "tune: {search: {tpe: {n_startup_trials: 2}}, scheduler: asha, metric: dev_type_PER_f1}\n"), catalog
    ).tune
    assert tune.searcher.params == {"n_startup_trials": 2}
    assert (tune.scheduler.name, tune.scheduler.params) == ("asha", {"grace_period": 1})
    assert tune.metric == "dev_type_PER_f1"


@pytest.mark.parametrize(
    ("tune", "path", "message"),
    [
        ("{search: bayes}", "tune.search", "unknown searcher 'bayes'"),
        ("{search: {tpe: {startup: 2}}}", "tune.search.tpe.startup", "unknown key 'startup' in searcher 'tpe'"),
        ("{search: {tpe: 2}}", "tune.search", "expected a name or {name: {options}}"),
        ("{scheduler: hyperband}", "tune.scheduler", "unknown scheduler 'hyperband'"),
        ("{metric: dev_f1}", "tune.metric", "unknown dev metric 'dev_f1'"),
        ("{metric: test_micro_f1}", "tune.metric", "did you mean 'dev_micro_f1'?"),
        ("{mode: min}", "tune.mode", "dev_micro_f1 is better when higher: use mode: max"),
        ("{max_concurrent: 0}", "tune.max_concurrent", "greater than or equal to 1"),
        ("{scheduler: asha, num_samples: 4}\ntrain: {epochs: {int: [2, 6]}}", "train.epochs",
         "train.epochs cannot be searched under ASHA"),
    ],
)
def test_bad_tune(catalog, write_spec, tune, path, message):
    found = spec_problems(catalog, write_spec, TUNED + f"tune: {tune}\n")
    assert len(found) == 1, found
    assert found[0][0] == path
    assert message in found[0][2]


FIXED = "experiment: t\ndataset: conll2003\nmethods:\n  ce: {loss: ce}\n  mom: {loss: mom, lambda: 0.5}\n"


def test_without_a_search_tune_keeps_the_metric_runs_choose_their_checkpoint_on(catalog, write_spec):
    plan_tune = load_spec(write_spec(FIXED + "tune: {metric: dev_token_macro_f1, max_concurrent: 2}\n"), catalog).tune
    assert (plan_tune.metric, plan_tune.max_concurrent) == ("dev_token_macro_f1", 2)


@pytest.mark.parametrize("key", ["search: tpe", "scheduler: asha", "num_samples: 8", "time_budget_s: 60", "seed: 3",
                                 "enqueue: {mom: [{lambda: 0.2}]}"])
def test_a_search_setting_without_a_search_space_is_refused_at_its_key(catalog, write_spec, key):
    found = spec_problems(catalog, write_spec, FIXED + f"tune: {{metric: dev_macro_f1, {key}}}\n")
    name = key.split(":")[0]
    assert found[0][0] == f"tune.{name}", found
    assert f"tune.{name} is set but no method has a search space" in found[0][2]


def test_a_profile_removes_the_search_settings_and_keeps_the_metric(catalog, write_spec):
    text = FIXED.replace("lambda: 0.5", "lambda: {uniform: [0, 1]}") + (
        "tune: {search: tpe, num_samples: 8, metric: dev_token_macro_f1}\n"
        "profiles:\n  fixed:\n    methods: {mom: {lambda: 0.5}}\n    tune: {search: null, num_samples: null}\n"
    )
    plan_tune = load_spec(SpecSource(write_spec(text), "fixed"), catalog).tune
    assert plan_tune.metric == "dev_token_macro_f1"


def test_every_problem_of_every_section_is_reported_together_in_file_order(catalog, write_spec):
    text = (
        "experiment: t\ndataset: conll2003\n"
        "train: {epochs: 0}\n"  # 3
        "samplers: [{fraction: {f: 2}}]\n"  # 4
        "methods:\n  a: {loss: nope}\n  b: {loss: focal, gamma: -1}\n"  # 6, 7
        "replicate: {seeds: 0}\n"  # 8
        "analysis: {baseline: zz}\n"  # 9
        "resources: {workers: 0}\n"  # 10
    )
    found = spec_problems(catalog, write_spec, text)
    assert [(path, line) for path, line, _ in found] == [
        ("train.epochs", 3),
        ("samplers[0].fraction.f", 4),
        ("methods.a.loss", 6),
        ("methods.b.gamma", 7),
        ("replicate.seeds", 8),
        ("analysis.baseline", 9),
        ("resources.workers", 10),
    ]


def test_the_source_is_the_spec_file(catalog, write_spec):
    path = write_spec("experiment: t\ndataset: conll2003\nmethods: {ce: {loss: cee}}\n")
    with pytest.raises(UserInputError) as raised:
        load_spec(path, catalog)
    assert str(raised.value) == (
        f"unknown loss 'cee'; did you mean 'ce'? (registered: auc_2t, ce, focal, mom, wce) at methods.ce.loss ({path}:3)"
    )
    assert Path(raised.value.problems[0].source) == path


def test_an_unset_variable_is_reported_once_not_again_by_the_schema(catalog, write_spec):
    text = MINIMAL + "train:\n  epochs: ${EPOCHS}\n  lr: fast\n"
    found = spec_problems(catalog, write_spec, text, environ={})
    assert [(path, line) for path, line, _ in found] == [("train.epochs", 5), ("train.lr", 6)]
    assert "EPOCHS is not set" in found[0][2]


def test_a_duplicated_key_keeps_its_last_value_and_that_value_is_checked(catalog, write_spec):
    text = "experiment: t\ndataset: conll2003\nmethods:\n  ce: {loss: ce}\n  ce: {loss: cee}\n"
    found = spec_problems(catalog, write_spec, text)
    assert [(path, line) for path, line, _ in found] == [("methods.ce", 5), ("methods.ce.loss", 5)]


def test_the_tune_section_is_checked_even_when_a_method_is_broken(catalog, write_spec):
    text = "experiment: t\ndataset: conll2003\nmethods:\n  a: {loss: nope}\ntune: {search: bayes}\n"
    found = spec_problems(catalog, write_spec, text)
    assert [(path, line) for path, line, _ in found] == [("methods.a.loss", 4), ("tune.search", 5)]


def test_precision_defaults_to_fp32_and_bf16_runs_without_a_gpu(catalog, write_spec):
    assert load_spec(write_spec(MINIMAL), catalog).methods[0].train["precision"] == "fp32"
    assert load_spec(write_spec(MINIMAL + "train: {precision: bf16}\n"), catalog).methods[0].train["precision"] == "bf16"


def test_fp16_with_a_share_of_a_gpu_is_accepted(catalog, write_spec):
    validated = load_spec(write_spec(MINIMAL + "train: {precision: fp16}\nresources: {gpus_per_worker: 0.5}\n"), catalog)
    assert validated.methods[0].train["precision"] == "fp16" and validated.spec.resources.gpus_per_worker == 0.5


@pytest.mark.parametrize(
    ("text", "path", "line", "message"),
    [
        (MINIMAL + "train: {precision: fp8}\n", "train.precision", 4,
         "input should be 'fp32', 'bf16', 'fp16' or 'auto' (got 'fp8')"),
        (MINIMAL + "train: {precision: fp16}\n", "train.precision", 4, "fp16 needs a GPU but method ce's trials get none"),
        (
            TUNED.replace("lambda: {uniform: [0, 1]}", "train: {precision: fp16}"),
            "methods.mom.train.precision",
            5,
            "fp16 needs a GPU but method mom's trials get none (resources.gpus_per_worker is 0): use bf16",
        ),
        (
            TUNED.replace("lambda: {uniform: [0, 1]}", "train: {precision: {choice: [bf16, fp16]}}") + "tune: {}\n",
            "methods.mom.train.precision",
            5,
            "fp16 needs a GPU but method mom's trials get none",
        ),
    ],
)
def test_bad_precisions_are_located(catalog, write_spec, text, path, line, message):
    found = spec_problems(catalog, write_spec, text)
    assert len(found) == 1, found
    assert found[0][:2] == (path, line)
    assert message in found[0][2]


def test_a_single_corpus_file_without_its_split_is_refused_with_the_split_to_write(catalog, write_spec, tmp_path):
    (tmp_path / "mine.conll").write_text("EU B-ORG\n\n")
    for dataset, path in (("{path: mine.conll}", "dataset.path"), ("mine.conll", "dataset")):
        [(at, line, message)] = spec_problems(
            catalog, write_spec, f"experiment: t\ndataset: {dataset}\nmethods: {{ce: {{loss: ce}}}}\n"
        )
        assert (at, line) == (path, 2)
        assert f"`dataset: {{path: {tmp_path / 'mine.conll'}, split: {{dev: 0.1, test: 0.1, seed: 0}}}}`" in message


def test_a_single_corpus_file_with_its_split_is_a_corpus(catalog, write_spec, tmp_path):
    (tmp_path / "mine.conll").write_text("EU B-ORG\n\n")
    text = "experiment: t\ndataset: {path: mine.conll, split: {dev: 0.2, test: 0.1, seed: 3}}\nmethods: {ce: {loss: ce}}\n"
    [dataset] = load_spec(write_spec(text), catalog, dataset_check=lambda ref: []).datasets
    assert dataset.label == "mine" and dataset.ref.path == str(tmp_path / "mine.conll")
    assert dataset.ref.model_dump(mode="json")["split"] == {"dev": 0.2, "test": 0.1, "seed": 3}  # in the plan's arms
    assert "split" not in DatasetRef(name="conll2003").model_dump(mode="json")  # folder corpora's plans keep their hash


def test_a_file_split_leaves_sentences_to_train_on(catalog, write_spec, tmp_path):
    (tmp_path / "mine.conll").write_text("EU B-ORG\n\n")
    text = "experiment: t\ndataset: {path: mine.conll, split: {dev: 0.5, test: 0.5}}\nmethods: {ce: {loss: ce}}\n"
    [(at, _, message)] = spec_problems(catalog, write_spec, text)
    assert at == "dataset.split" and "leave no sentence to train on" in message


def test_a_corpus_without_test_is_refused_when_replicates_evaluate_on_test(catalog, write_spec, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "train.txt").write_text("EU B-ORG\n\n")
    text = "experiment: t\ndataset: {path: mine}\nmethods: {ce: {loss: ce}}\n"
    [(at, line, message)] = spec_problems(catalog, write_spec, text, dataset_check=lambda ref: [])
    assert (at, line) == ("dataset", 2)
    assert message.startswith(
        f"dataset 'mine' has no test split ({tmp_path / 'mine' / 'test.txt'} is missing) but replicate.split is test"
    )
    assert "replicate.split: dev" not in message  # there is no dev split either: the advice must not go in a circle
    assert spec_problems(catalog, write_spec, text + "replicate: {split: dev}\n", dataset_check=lambda ref: []) == [
        ("dataset", 2,
         f"dataset 'mine' has no dev split ({tmp_path / 'mine' / 'dev.txt'} is missing) but replicate.split is dev: add dev.txt,"
         " or set dev_from_train: 0.1 on the dataset to draw a seeded dev split from train")
    ]


def test_a_dev_split_drawn_from_train_counts_as_a_dev_split(catalog, write_spec, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "train.txt").write_text("EU B-ORG\n\n")
    text = "experiment: t\ndataset: {path: mine, dev_from_train: 0.1}\nmethods: {ce: {loss: ce}}\nreplicate: {split: dev}\n"
    assert load_spec(write_spec(text), catalog, dataset_check=lambda ref: [])
    on_test = text.replace("split: dev", "split: test")
    [(_, _, message)] = spec_problems(catalog, write_spec, on_test, dataset_check=lambda ref: [])
    assert message.endswith("add test.txt, or set replicate.split: dev")


def test_replicates_reported_on_the_split_tuning_selects_on_are_refused(catalog, write_spec):
    text = TUNED + "tune: {}\nreplicate: {seeds: 1}\n"
    assert load_spec(write_spec(text), catalog)
    [(at, _, message)] = spec_problems(catalog, write_spec, text, overrides=["replicate.split=dev"])
    assert at == "replicate.split" and "the split tuning selects on" in message
