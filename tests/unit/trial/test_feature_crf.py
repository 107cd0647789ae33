"""Trials of the crfsuite head (fitted outside the torch loop) and of word-embedding models, through
`run_trial`, on real CoNLL-2003 sentences."""

import pytest

from nerplat.errors import UserInputError
from nerplat.config.trial import Component, DatasetRef, EncoderSettings, TrainSettings, TrialConfig
from nerplat.trial.feature_crf import MODEL_FILE
from nerplat.trial.loop import run_trial


def config(head: Component, encoder: str = "word2vec-50", **train) -> TrialConfig:
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="low_resource", params={"size": 60, "partitions": 1}),),
        encoder=EncoderSettings(name=encoder, max_length=48),
        head=head,
        objective=Component(name="crf" if "crf" in head.name else "ce"),
        train=TrainSettings(**{"epochs": 2, "batch_size": 8, "lr": 1e-3, "dev_subset": 40, "threads": 1, **train}),
        eval_split="dev",
    )


@pytest.fixture(scope="module")
def crfsuite_fit(tmp_path_factory):
    """A fit cut at 30 iterations and the folder its report saved it to (tests only read them)."""
    saved = tmp_path_factory.mktemp("crfsuite") / "fit"
    return run_trial(config(Component(name="crfsuite", params={"max_iterations": 30})), report=lambda e, save: save(saved)), saved


@pytest.fixture(scope="module")
def crfsuite_result(crfsuite_fit):
    return crfsuite_fit[0]


def test_the_crfsuite_fit_is_one_reported_epoch(crfsuite_result):
    (evaluation,) = crfsuite_result.evaluations
    assert (evaluation.epoch, evaluation.epochs, crfsuite_result.selected_epoch) == (1, 1, 1)
    assert evaluation.dev["micro_f1"] == evaluation.dev_best["micro_f1"] > 0
    assert evaluation.train_loss > 0
    assert crfsuite_result.metrics["dev_micro_f1"] > 0 and crfsuite_result.train_sentences == 60
    assert all(len(gold.tags) == len(predicted) for gold, predicted in crfsuite_result.predictions)


def test_the_fit_says_whether_lbfgs_met_its_stopping_test(crfsuite_result):
    assert crfsuite_result.fit_converged is False  # 30 iterations cut it
    assert run_trial(config(Component(name="crfsuite"))).fit_converged is True


def test_a_checkpointed_crfsuite_model_is_resumed_without_fitting(crfsuite_fit):
    crfsuite_result, saved = crfsuite_fit
    assert (saved / MODEL_FILE).is_file()
    resumed = run_trial(config(Component(name="crfsuite", params={"max_iterations": 30})), resume_from=saved)
    assert resumed.metrics == crfsuite_result.metrics and resumed.timings.train_tokens == 0
    assert resumed.fit_converged is crfsuite_result.fit_converged is False
    assert resumed.evaluations[0].train_loss == crfsuite_result.evaluations[0].train_loss


def test_crfsuite_embeddings_need_a_word_embedding_encoder():
    with pytest.raises(UserInputError, match="needs a word-embedding encoder"):
        run_trial(config(Component(name="crfsuite"), encoder="tiny"))
    lexical = run_trial(config(Component(name="crfsuite", params={"embeddings": False, "max_iterations": 30}), encoder="tiny"))
    assert lexical.metrics["dev_micro_f1"] > 0


@pytest.mark.parametrize("head", ["softmax", "bilstm_softmax", "bilstm_crf"])
def test_word_embedding_taggers_train_in_the_loop(head):
    result = run_trial(config(Component(name=head), epochs=2, lr=1e-2))
    assert [e.epoch for e in result.evaluations] == [1, 2]
    assert set(result.metrics) >= {"dev_micro_f1", "dev_macro_f1"}
    assert result.evaluations[-1].train_loss > 0
    assert result.fit_converged is None  # judged by its dev curve instead
