"""BiLSTM-CRF head: a bidirectional LSTM over the word states, then linear emissions and a CRF."""

from __future__ import annotations

import torch
from pydantic import Field
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nerplat.models.heads.base import HeadConfig, HeadServing
from nerplat.models.heads.crf import CRFHead
from nerplat.models.heads.registry import HEADS


class BiLSTMConfig(HeadConfig):
    hidden_size: int = Field(256, ge=1, description="LSTM hidden units per direction.")
    layers: int = Field(1, ge=1, description="Stacked BiLSTM layers.")


class BiLSTM(nn.Module):
    """Runs over real words only (packed), so padding never leaks into the backward direction."""

    def __init__(self, input_size: int, hidden_size: int, layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=layers, batch_first=True, bidirectional=True)

    def forward(self, word_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).cpu()
        packed = pack_padded_sequence(word_states, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=word_states.shape[1])
        return out


@HEADS.register("bilstm_crf", config=BiLSTMConfig, traits=HeadServing(decoding="BiLSTM, then CRF Viterbi"))
def build(config: BiLSTMConfig, *, labels: list[str], hidden_size: int) -> CRFHead:
    """BiLSTM over word states, then linear emissions and a linear-chain CRF; Viterbi decoding."""
    return CRFHead(len(labels), 2 * config.hidden_size, BiLSTM(hidden_size, config.hidden_size, config.layers))
