"""The IOB2 tagging scheme as data: which tags are legal, where IOB1 differs, and the mentions.

A tag is ``O`` or ``P-TYPE`` with prefix ``P`` in ``B``/``I`` and a non-empty type. IOB2 requires
every mention to open with ``B-``; IOB1 (the original CoNLL-2003 files) opens a mention with ``I-``
and uses ``B-`` only between two adjacent mentions of one type. A tag sequence that is not valid
IOB2 is read as IOB1: converting it changes exactly the ``I-`` tags that open a mention.
BIOES (also written IOBES) adds ``S-`` for one-token mentions and ``E-`` for a mention's last token
(``L-``/``U-`` in the BILOU spelling); to IOB2, ``S-`` becomes ``B-`` and ``E-`` becomes ``I-``.
"""

from __future__ import annotations

from collections.abc import Sequence

from nerplat.errors import shown

OUTSIDE = "O"
MAX_TYPE_CHARS = 100  # a type is a name (PER, Disease); a longer one is a mistake that would fill every table


def is_legal_tag(tag: str) -> bool:
    """True for ``O``, ``B-TYPE`` and ``I-TYPE`` (TYPE non-empty)."""
    return tag == OUTSIDE or (len(tag) > 2 and tag[0] in "BI" and tag[1] == "-")


def long_type_problem(entity_type: str) -> str | None:
    """What to do about an entity type too long to be a name, or None when it is short enough."""
    if len(entity_type) <= MAX_TYPE_CHARS:
        return None
    return (
        f"entity type {shown(entity_type)} has {len(entity_type):,} characters, more than the {MAX_TYPE_CHARS} "
        "a type may have: name it in a word or two, e.g. PER"
    )


BIOES_TO_IOB2 = {"B": "B", "I": "I", "S": "B", "E": "I", "U": "B", "L": "I"}


def is_legal_bioes_tag(tag: str) -> bool:
    """True for ``O`` and ``P-TYPE`` with ``P`` one of B, I, E, S (or BILOU's L, U) and TYPE non-empty."""
    return tag == OUTSIDE or (len(tag) > 2 and tag[0] in BIOES_TO_IOB2 and tag[1] == "-")


def bioes_to_iob2(tags: Sequence[str]) -> tuple[str, ...]:
    """IOB2 tags for BIOES/IOBES (or BILOU) ``tags``: ``S-X`` -> ``B-X``, ``E-X`` -> ``I-X``.

    The result may still open a mention with ``I-`` where the input was malformed (``O E-X``); the
    readers then treat it like any IOB2 violation (IOB1 conversion or refusal, with its location).
    """
    return tuple(tag if tag == OUTSIDE else BIOES_TO_IOB2[tag[0]] + tag[1:] for tag in tags)


def entity_type(tag: str) -> str | None:
    """``'PER'`` for ``'B-PER'``/``'I-PER'``, None for ``'O'``."""
    return None if tag == OUTSIDE else tag[2:]


def opens_mention_illegally(previous: str, tag: str) -> bool:
    """True where ``tag`` is an ``I-`` tag that IOB2 forbids after ``previous`` (``'O'`` at sentence start)."""
    return tag[0] == "I" and (previous == OUTSIDE or previous[2:] != tag[2:])


def iob2_violations(tags: Sequence[str]) -> list[int]:
    """Positions of ``I-`` tags that open a mention, i.e. where ``tags`` is not IOB2."""
    previous = OUTSIDE
    found = []
    for position, tag in enumerate(tags):
        if opens_mention_illegally(previous, tag):
            found.append(position)
        previous = tag
    return found


def iob1_to_iob2(tags: Sequence[str]) -> tuple[str, ...]:
    """IOB2 tags for IOB1 ``tags`` (an ``I-`` tag that opens a mention becomes ``B-``)."""
    converted = list(tags)
    for position in iob2_violations(tags):
        converted[position] = "B" + converted[position][1:]
    return tuple(converted)


def mentions(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Maximal ``B-X (I-X)*`` spans of IOB2 tags as ``(type, start, end)``, end exclusive; on tags that
    are not IOB2, conlleval's lenient reading: an ``I-X`` that opens a mention opens a span."""
    spans: list[tuple[str, int, int]] = []
    start = None
    kind = None
    for position, tag in enumerate(tuple(tags) + (OUTSIDE,)):
        continues = tag[0] == "I" and kind == tag[2:]
        if start is not None and not continues:
            spans.append((kind, start, position))
            start = kind = None
        if tag != OUTSIDE and not continues:
            start, kind = position, tag[2:]
    return spans


def strict_mentions(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The ``B-X (I-X)*`` spans strict IOB2 scoring counts (seqeval's ``mode="strict"``, as
    `nerplat.metrics` scores): an ``I-X`` that opens a mention belongs to no span."""
    return [(kind, start, end) for kind, start, end in mentions(tags) if tags[start][0] == "B"]


SPAN_RULES = {"strict": strict_mentions, "lenient": mentions}  # how tags are read as spans, by name
