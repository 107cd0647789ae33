"""Corpus statistics as the papers tabulate them (Wang & Wang 2022, Table 1) and as ``manifest.json`` defines them.

Definitions (those of the corpora folder's ``manifest.json``, ``$NERPLAT_DATA/manifest.json``):
sentences are non-empty blocks, tokens are token lines, mentions are maximal ``B-X (I-X)*`` spans,
and ``pct_B/I/O`` are percentages of tokens rounded to two decimals. A type's share is the
percentage of all tokens (O included) that carry it, which is how Wang & Wang 2022, Table 1
reports the least and most frequent types.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from nerplat.data.corpus import Corpus, Sentence
from nerplat.data.tags import OUTSIDE, mentions


def token_count(sentences: Sequence[Sentence]) -> int:
    return sum(len(s) for s in sentences)


def entity_token_share(sentences: Sequence[Sentence]) -> float:
    """Fraction of tokens (0..1) whose tag is not ``O``."""
    tokens = token_count(sentences)
    entity = sum(1 for s in sentences for tag in s.tags if tag != OUTSIDE)
    return entity / tokens if tokens else 0.0


def size_factor(before: Sequence[Sentence], after: Sequence[Sentence]) -> float:
    """Training-set size after a sampler relative to before, counted in tokens.

    Tokens, not sentences: Wang & Wang 2022, Table 6 gives balanced undersampling, which keeps sentences but
    drops tokens from them, a factor of 0.32, so its "training corpus size" counts tokens.
    """
    tokens = token_count(before)
    return token_count(after) / tokens if tokens else 0.0


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def split_stats(sentences: Sequence[Sentence]) -> dict[str, Any]:
    """One split's row of Wang & Wang 2022, Table 1 plus the manifest's counts."""
    tokens = token_count(sentences)
    prefixes: Counter[str] = Counter()
    type_tokens: Counter[str] = Counter()
    type_mentions: Counter[str] = Counter()
    with_entities = 0
    for sentence in sentences:
        has_entity = False
        for tag in sentence.tags:
            prefixes[tag[0]] += 1
            if tag != OUTSIDE:
                type_tokens[tag[2:]] += 1
                has_entity = True
        with_entities += has_entity
        type_mentions.update(kind for kind, _, _ in mentions(sentence.tags))
    stats: dict[str, Any] = {
        "sentences": len(sentences),
        "tokens": tokens,
        "mentions_total": sum(type_mentions.values()),
        "mentions_per_type": dict(sorted(type_mentions.items())),
        "pct_B": _percent(prefixes["B"], tokens),
        "pct_I": _percent(prefixes["I"], tokens),
        "pct_O": _percent(prefixes["O"], tokens),
        "pct_entity_tokens": _percent(prefixes["B"] + prefixes["I"], tokens),
        "pct_sentences_with_entities": _percent(with_entities, len(sentences)),
        "n_types": len(type_tokens),
        "least_frequent_type": None,
        "most_frequent_type": None,
    }
    if type_tokens:
        by_share = sorted(type_tokens.items(), key=lambda item: (item[1], item[0]))
        for key, (kind, count) in (("least_frequent_type", by_share[0]), ("most_frequent_type", by_share[-1])):
            stats[key] = {"type": kind, "pct_tokens": _percent(count, tokens)}
    return stats


def unseen_labels(corpus: Corpus) -> dict[str, list[str]]:
    """Labels of dev/test that train never shows, per split (only splits that have some)."""
    seen = {tag for s in corpus.train for tag in s.tags}
    unseen = {}
    for name in ("dev", "test"):
        split = getattr(corpus, name)
        labels = sorted({tag for s in split or () for tag in s.tags} - seen)
        if labels:
            unseen[name] = labels
    return unseen


def unseen_labels_note(corpus: Corpus) -> str | None:
    """The note recorded on a corpus whose dev/test have labels train lacks (never an error)."""
    unseen = unseen_labels(corpus)
    if not unseen:
        return None
    listed = "; ".join(f"{split}: {shown_labels(labels)}" for split, labels in unseen.items())
    return f"labels absent from train (a model trained on it never predicts them): {listed}"


LABELS_SHOWN = 20


def shown_labels(labels: list[str]) -> str:
    """The first `LABELS_SHOWN` labels and how many more: 5,000 unseen types made a 244 KB line."""
    more = f", ... and {len(labels) - LABELS_SHOWN:,} more" if len(labels) > LABELS_SHOWN else ""
    return ", ".join(labels[:LABELS_SHOWN]) + more


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    """Stats of every split, the labels dev/test have that train lacks, and the corpus notes."""
    return {
        "corpus": corpus.name,
        "splits": {name: split_stats(sentences) for name, sentences in corpus.splits().items()},
        "unseen_labels": unseen_labels(corpus),
        "checksums": dict(corpus.checksums),
        "notes": list(corpus.notes),
    }
