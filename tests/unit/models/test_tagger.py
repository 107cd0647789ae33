import pytest
import torch
import torch.nn.functional as F

from nerplat.config.trial import Component, EncoderSettings
from nerplat.data.corpus import Sentence
from nerplat.errors import UserInputError
from nerplat.models.encoders import load_encoder
from nerplat.models.heads.base import IGNORE
from nerplat.models.heads.softmax import SoftmaxHead
from nerplat.models.tagger import Tagger, build_tagger, length_pieces
from nerplat.models.word_embeddings import WordEmbeddings
from nerplat.trial.batching import collate
from nerplat.trial.features import featurize

LABELS = ["O", "B-ENT", "I-ENT"]
SENTENCES = [
    Sentence(("Johannesburg", "is", "big"), ("B-ENT", "O", "O")),
    Sentence(
        ("the", "Red", "Cross", "helps", "supercalifragilistic", "people"),
        ("O", "B-ENT", "I-ENT", "O", "O", "O"),
    ),
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """A 64-d model gains nothing from a second thread, and loses much when the cores are shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def encoder_and_batch(tmp_path_factory):
    encoder = load_encoder(EncoderSettings(name="tiny"))
    cache = tmp_path_factory.mktemp("cache")
    f = featurize(SENTENCES, encoder.tokenizer, EncoderSettings(name="tiny"), LABELS, cache_dir=cache)
    return encoder, collate(f, range(len(f)))


def fresh_tagger(head: str = "softmax", **params):
    torch.manual_seed(0)
    return build_tagger(load_encoder(EncoderSettings(name="tiny")), Component(name=head, params=params), LABELS)


def test_word_states_are_the_encoder_states_at_first_sub_tokens(encoder_and_batch):
    _, batch = encoder_and_batch
    tagger = fresh_tagger().eval()
    with torch.no_grad():
        states = tagger.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
        words = tagger.word_states(batch)
    assert words.shape == (2, 6, 64)
    row, word = 1, 4  # the first sub-token of "supercalifragilistic"
    assert torch.equal(words[row, word], states[row, batch.word_starts[row, word]])


def mixed_length_batch(encoder, cache):
    """Eight windows of 40 words and eight of 2, interleaved: one pass would pad the short ones to 40."""
    long_words, short_words = ("the",) * 40, ("a", "b")
    sentences = [Sentence(words, ("O",) * len(words)) for _ in range(8) for words in (long_words, short_words)]
    f = featurize(sentences, encoder.tokenizer, EncoderSettings(name="tiny", max_length=64), LABELS, cache_dir=cache)
    return collate(f, range(len(f)))


def test_training_encodes_a_mixed_batch_in_length_pieces_with_the_states_of_one_pass(tmp_path):
    encoder = load_encoder(EncoderSettings(name="tiny"))
    batch = mixed_length_batch(encoder, tmp_path)
    lengths = batch.attention_mask.sum(1)
    pieces = length_pieces(lengths)
    assert [len(rows) for rows in pieces] == [8, 8]
    assert all((lengths[rows] == lengths[rows[0]]).all() for rows in pieces) and lengths[pieces[0][0]] > lengths[pieces[1][0]]
    tagger = fresh_tagger()
    tagger.dropout.p = 0.0
    for module in tagger.encoder.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    passes = []
    tagger.encoder.register_forward_hook(
        lambda module, args, kwargs, out: passes.append(tuple(kwargs["attention_mask"].shape)), with_kwargs=True
    )
    in_pieces = tagger.train().word_states(batch)
    assert passes == [(8, int(lengths.max())), (8, int(lengths.min()))]
    with torch.no_grad():
        one_pass = tagger.eval().word_states(batch)
    assert passes[-1] == tuple(batch.input_ids.shape)
    torch.testing.assert_close(in_pieces.detach(), one_pass, atol=1e-5, rtol=1e-4)
    in_pieces[batch.word_mask].sum().backward()  # gradients reach the encoder through every piece
    assert tagger.encoder.embeddings.word_embeddings.weight.grad.abs().sum() > 0


def trained_step(tagger, batch, word_states):
    """Loss, gradients and AdamW's updated weights of one step from a fixed seed, dropout on."""
    torch.manual_seed(7)
    states = word_states(batch)
    scores = tagger.head(tagger.dropout(states), batch.word_mask).scores
    loss = F.cross_entropy(scores[batch.word_mask], batch.labels[batch.word_mask])
    optimizer = torch.optim.AdamW(tagger.parameters(), lr=1e-3)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in tagger.named_parameters() if p.grad is not None}
    optimizer.step()
    return loss.detach(), grads, {name: p.detach().clone() for name, p in tagger.named_parameters()}


def lookup_per_piece(tagger):
    """The pieces as encoded before one lookup served them all: each from its own sub-token ids."""

    def word_states(batch):
        lengths = batch.attention_mask.sum(1)
        pieces = length_pieces(lengths)
        parts = [tagger._encode(batch, rows, int(lengths[rows[0]])) for rows in pieces]
        return torch.cat(parts).index_select(0, torch.argsort(torch.cat(pieces)))

    return word_states


def test_a_training_step_in_pieces_is_the_step_of_a_lookup_per_piece(tmp_path):
    batch = mixed_length_batch(load_encoder(EncoderSettings(name="tiny")), tmp_path)
    batch.labels[:, 1] = 1  # some words of another label, so the head's gradient is not trivial
    ours = fresh_tagger().train()
    reference = fresh_tagger().train()
    loss, grads, weights = trained_step(ours, batch, ours.word_states)
    reference_loss, reference_grads, reference_weights = trained_step(reference, batch, lookup_per_piece(reference))
    assert torch.equal(loss, reference_loss)  # the same forward pass and dropout masks
    assert grads.keys() == reference_grads.keys()
    for name, grad in grads.items():  # sums of the same terms, the repeated sub-tokens' in another order
        torch.testing.assert_close(grad, reference_grads[name], rtol=1e-5, atol=1e-7, msg=name)
    for name, weight in weights.items():
        torch.testing.assert_close(weight, reference_weights[name], rtol=1e-6, atol=1e-7, msg=name)


def test_a_training_batch_looks_its_sub_token_embeddings_up_once_for_all_pieces(tmp_path):
    batch = mixed_length_batch(load_encoder(EncoderSettings(name="tiny")), tmp_path)
    tagger = fresh_tagger().train()
    lookups = []
    tagger.encoder.get_input_embeddings().register_forward_hook(lambda module, args, out: lookups.append(out.shape))
    tagger(batch)
    assert len(length_pieces(batch.attention_mask.sum(1))) == 2
    assert lookups == [(*batch.input_ids.shape, 64)]


def test_an_encoder_that_pads_for_free_is_encoded_in_one_pass(tmp_path):
    batch = mixed_length_batch(load_encoder(EncoderSettings(name="tiny")), tmp_path)
    table = WordEmbeddings(torch.randn(int(batch.input_ids.max()) + 1, 8), trainable=True)
    tagger = Tagger(table, SoftmaxHead(8, len(LABELS)), dropout=0.0).train()
    passes = []
    table.register_forward_hook(
        lambda module, args, kwargs, out: passes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True
    )
    tagger(batch)
    assert passes == [tuple(batch.input_ids.shape)]


def test_rows_of_one_length_are_one_piece():
    (rows,) = length_pieces(torch.full((16,), 30))
    assert sorted(rows.tolist()) == list(range(16))


@pytest.mark.parametrize("head,width", [("softmax", 3), ("crf", 3), ("bilstm_crf", 3), ("two_task", 2), ("ova", 3)])
def test_forward_and_decode_for_every_head(encoder_and_batch, head, width):
    _, batch = encoder_and_batch
    tagger = fresh_tagger(head).eval()
    with torch.no_grad():
        output = tagger(batch)
    assert output.scores.shape == (2, 6, width)
    assert [len(d) for d in tagger.decode(output)] == [3, 6]


def test_parameter_groups_split_encoder_from_head_and_both_get_gradients(encoder_and_batch):
    _, batch = encoder_and_batch
    tagger = fresh_tagger("crf")
    groups = tagger.parameter_groups()
    encoder_ids, head_ids = {id(p) for p in groups["encoder"]}, {id(p) for p in groups["head"]}
    assert not encoder_ids & head_ids
    assert encoder_ids | head_ids == {id(p) for p in tagger.parameters()}
    assert {id(p) for p in tagger.head.crf.parameters()} <= head_ids
    output = tagger(batch)
    output.crf.nll(output.scores, batch.labels, output.mask).mean().backward()
    for name, p in tagger.named_parameters():
        if name.startswith("encoder.embeddings.token_type") or "word_embeddings" in name:
            continue  # only the ids in the batch get gradients
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_a_softmax_tagger_learns_a_toy_batch(encoder_and_batch):
    _, batch = encoder_and_batch
    tagger = fresh_tagger("softmax", dropout=0.0)
    # the 30522-row embedding's dense update would dominate the time; the rest is enough to fit 2 sentences
    trained = [p for name, p in tagger.named_parameters() if "word_embeddings" not in name]
    optimiser = torch.optim.AdamW(trained, lr=3e-3)
    for _ in range(30):
        output = tagger(batch)
        loss = F.cross_entropy(output.scores.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert tagger.decode(tagger.eval()(batch)) == [[1, 0, 0], [0, 1, 2, 0, 0, 0]]


def test_dropout_comes_from_the_head_config():
    assert fresh_tagger("crf", dropout=0.3).dropout.p == 0.3


def test_bad_head_parameters_are_user_errors_with_their_path():
    with pytest.raises(UserInputError) as error:
        fresh_tagger("bilstm_crf", hidden_size=0, colour="red")
    paths = sorted(p.path for p in error.value.problems)
    assert paths == ["head.colour", "head.hidden_size"]
    with pytest.raises(UserInputError, match="did you mean 'crf'"):
        fresh_tagger("crff")
