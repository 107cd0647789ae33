"""Plain text -> words, with the character offsets spans are reported in.

`encoder` (the default) splits as the model's own tokenizer does before sub-word tokenisation (its
Hugging Face pre-tokenizer: whitespace and punctuation for BERT/MiniLM), so a sentence is cut into
the same words Hugging Face's token-classification pipeline groups sub-tokens into. `whitespace`
splits on whitespace only, as CoNLL files are usually tokenised.
"""

from __future__ import annotations

import re
from typing import Any

WORD_SPLITTERS = ("encoder", "whitespace")


def split_words(text: str, tokenizer: Any, splitter: str = "encoder") -> list[tuple[str, tuple[int, int]]]:
    """(word, (start, end)) character offsets into `text`, in order."""
    if splitter == "whitespace":
        return [(m.group(), (m.start(), m.end())) for m in re.finditer(r"\S+", text)]
    if splitter != "encoder":
        raise ValueError(f"unknown word splitter {splitter!r}: choose one of {', '.join(WORD_SPLITTERS)}")
    pre_tokenizer = tokenizer.backend_tokenizer.pre_tokenizer
    if pre_tokenizer is None:
        return split_words(text, tokenizer, "whitespace")
    return [(word, (start, end)) for word, (start, end) in pre_tokenizer.pre_tokenize_str(text)]
