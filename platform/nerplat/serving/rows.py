"""What one input row of `nerplat predict` and `nerplat serve` may be, checked before any tagger loads.

A row is `{"text": "a sentence"}` or `{"tokens": ["its", "words"]}` (`ROW_SCHEMA`). Reading an input
file (`serving.documents`) and a served request (`serving.http_server`) refuse a bad row with
`row_problem`'s message; tagging it is `serving.records`.
"""

from __future__ import annotations

import re
from typing import Any

ROW_SCHEMA = '{"text": "a sentence"} or {"tokens": ["a", "list", "of", "words"]}'
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\ud800" decodes to one; no UTF-8 can carry it


def row_problem(row: Any) -> str | None:
    """What is wrong with one input row (None when it is one of `ROW_SCHEMA`); keys set to null count as absent."""
    if not isinstance(row, dict):
        return f"expected an object {ROW_SCHEMA}, not {type(row).__name__}"
    given = {key for key, value in row.items() if value is not None}
    unknown = sorted(given - {"text", "tokens"})
    if unknown:
        return f"unknown field {', '.join(repr(k) for k in unknown)}: a row is {ROW_SCHEMA}"
    if given == {"text", "tokens"}:
        return f"both 'text' and 'tokens': a row is {ROW_SCHEMA}"
    if not given:
        return f"no 'text' and no 'tokens': a row is {ROW_SCHEMA}"
    if "text" in given and not isinstance(row["text"], str):
        return f"'text' must be a string, not {type(row['text']).__name__}"
    tokens = row.get("tokens")
    if "tokens" in given and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        return "'tokens' must be a list of strings"
    for field, strings in (("text", [row.get("text") or ""]), ("tokens", tokens or [])):
        for string in strings:
            if (found := _LONE_SURROGATE.search(string)) is not None:
                return (
                    f"'{field}' holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), "
                    "which is not text: escape a character beyond U+FFFF as a surrogate pair, or send it as UTF-8"
                )
    return None
