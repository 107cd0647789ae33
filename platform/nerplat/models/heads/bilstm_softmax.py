"""BiLSTM-softmax head (Wang & Wang 2022's Bi-LSTM tagger with a softmax output): a bidirectional LSTM over
the word states, then a linear layer to K label logits per word, decoded by argmax."""

from __future__ import annotations

from nerplat.models.heads.bilstm_crf import BiLSTM, BiLSTMConfig
from nerplat.models.heads.registry import HEADS
from nerplat.models.heads.softmax import SoftmaxHead


@HEADS.register("bilstm_softmax", config=BiLSTMConfig)
def build(config: BiLSTMConfig, *, labels: list[str], hidden_size: int) -> SoftmaxHead:
    """BiLSTM over word states, then linear label logits; argmax decoding (trained by the token losses)."""
    return SoftmaxHead(2 * config.hidden_size, len(labels), BiLSTM(hidden_size, config.hidden_size, config.layers))
