"""NER as machine reading comprehension (Li et al. 2020, "A Unified MRC Framework for Named Entity
Recognition", ACL; reference [17] of Nemoto et al. 2024), the part that is plain data: queries and spans.

Each entity type gets one natural-language query; a model reads ``[CLS] query [SEP] context [SEP]``
and marks where spans of that type start and end in the context, and which (start, end) pairs match.

Queries, in order of precedence:
1. the JSON file a spec names (head parameter ``queries``): an object mapping every entity type of
   the corpus to its query; a missing type is an error naming the file;
2. the file bundled for the corpus, ``nerplat/data/mrc_queries/<corpus name>.json`` (CoNLL-2003:
   annotation-guideline notes, the query style Li et al. found best, worded after ShannonAI's
   ``queries/en_conll03.json``), for the types it names;
3. ``DEFAULT_TEMPLATE`` with the type filled in (Li et al.'s "rule-based template filling").

Decoding to flat spans (the rule the issue asks to document): every (start, end) candidate of every
type whose start, end and match probabilities all exceed 0.5 is scored by their product; candidates
are kept greedily from the highest score (ties: earlier start, then shorter span, then type order),
and a candidate that shares a word with a kept span is dropped. ShannonAI's ``remove_overlap`` is
the same greedy rule without the scores (list order).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nerplat.data.tags import OUTSIDE, mentions
from nerplat.errors import Problem, UserInputError

DEFAULT_TEMPLATE = "find all {type} entities in the text."
BUNDLED_QUERIES = Path(__file__).with_name("mrc_queries")

Span = tuple[str, int, int]  # (type, first word, last word): both ends inclusive, as MRC predicts them


def entity_types(labels: Sequence[str]) -> list[str]:
    """Entity types in the order of their B- labels (`Corpus.labels()`): the order of the queries."""
    return [label[2:] for label in labels if label.startswith("B-")]


def read_queries(path: Path, *, where: str = "head.queries") -> dict[str, str]:
    """A queries file: one JSON object, entity type -> non-empty query text."""
    try:
        queries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserInputError(Problem(f"cannot read MRC queries from {path}: {error}", path=where)) from None
    if not isinstance(queries, dict) or not all(isinstance(q, str) and q.strip() for q in queries.values()):
        raise UserInputError(
            Problem(f"{path} must hold one JSON object mapping each entity type to a non-empty query", path=where)
        )
    return queries


def queries_for(types: Sequence[str], corpus: str, path: str | None) -> list[str]:
    """The query of each type, in order (see the module docstring for where they come from)."""
    if path is not None:
        given = read_queries(Path(path))
        missing = [t for t in types if t not in given]
        if missing:
            raise UserInputError(
                Problem(f"{path} has no query for entity type(s) {', '.join(missing)}: add them", path="head.queries")
            )
        return [given[t] for t in types]
    bundled = BUNDLED_QUERIES / f"{corpus}.json"
    known = read_queries(bundled, where="dataset") if bundled.is_file() else {}
    return [known.get(t, DEFAULT_TEMPLATE.format(type=t)) for t in types]


def window_span_ends(tags: Sequence[str], first: int, end: int, types: Sequence[str]) -> list[list[int]]:
    """MRC targets of the window of words [first, end) of a sentence with IOB2 `tags`.

    Returns, for each word of the window and each type, the window position of the last word of the
    gold span of that type starting at the word, or -1 when none starts there. A span that crosses
    the window's edge is clipped to the window: the window that owns its words sees all of it when
    windows overlap (`encoder.window_stride`), so decoding still joins to the gold tags.
    """
    column = {t: k for k, t in enumerate(types)}
    ends = [[-1] * len(types) for _ in range(end - first)]
    for kind, start, stop in mentions(tags):
        clipped_start, clipped_last = max(start, first), min(stop, end) - 1
        if clipped_start <= clipped_last:
            ends[clipped_start - first][column[kind]] = clipped_last - first
    return ends


def resolve_overlaps(candidates: Sequence[tuple[float, int, int, int]]) -> list[tuple[int, int, int]]:
    """Flat spans from scored candidates ``(score, first, last, type index)`` by the greedy rule above.

    Returns the kept ``(first, last, type index)``, sorted by position.
    """
    order = sorted(candidates, key=lambda c: (-c[0], c[1], c[2] - c[1], c[3]))
    taken: set[int] = set()
    kept = []
    for _, first, last, kind in order:
        words = range(first, last + 1)
        if taken.isdisjoint(words):
            taken.update(words)
            kept.append((first, last, kind))
    return sorted(kept)


def spans_to_tags(spans: Sequence[Span], length: int) -> list[str]:
    """IOB2 tags of `length` words from non-overlapping spans (type, first, last)."""
    tags = [OUTSIDE] * length
    for kind, first, last in spans:
        tags[first] = f"B-{kind}"
        for word in range(first + 1, last + 1):
            tags[word] = f"I-{kind}"
    return tags
