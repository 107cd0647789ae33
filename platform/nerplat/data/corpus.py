"""Plain data for corpora: sentences of (token, IOB2 tag) pairs, grouped in splits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Sentence:
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.tags):
            raise ValueError(f"{len(self.tokens)} tokens but {len(self.tags)} tags")

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Corpus:
    """A named corpus. `dev` or `test` may be None (anem has no dev split).

    `checksums` maps split name to the sha256 of the file it was read from (or of its canonical
    CoNLL rendering when it did not come from a file); `notes` records what was done to it on the
    way (IOB1 conversion counts, dev carved from train, samplers applied) so runs can log it.
    """

    name: str
    train: tuple[Sentence, ...]
    dev: tuple[Sentence, ...] | None
    test: tuple[Sentence, ...] | None
    checksums: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def split(self, name: str) -> tuple[Sentence, ...]:
        sentences = getattr(self, name)
        if sentences is None:
            raise KeyError(f"corpus '{self.name}' has no {name} split")
        return sentences

    def splits(self) -> dict[str, tuple[Sentence, ...]]:
        return {n: s for n in ("train", "dev", "test") if (s := getattr(self, n)) is not None}

    def entity_types(self) -> list[str]:
        """Types seen in any split, sorted ("PER", not "B-PER")."""
        return sorted({t[2:] for s in self.splits().values() for x in s for t in x.tags if t != "O"})

    def labels(self) -> list[str]:
        """The BIO label set the models predict: O first, then B-/I- per type."""
        return ["O"] + [f"{p}-{t}" for t in self.entity_types() for p in ("B", "I")]

    def with_train(self, train: tuple[Sentence, ...], note: str) -> "Corpus":
        return replace(self, train=train, notes=self.notes + (note,))

    def with_every_split(self, change: Callable[[Sentence], Sentence], note: str) -> "Corpus":
        """A copy with ``change`` applied to every sentence of every split (label maps need this)."""
        changed = {n: tuple(change(x) for x in s) for n, s in self.splits().items()}
        return replace(self, **changed, notes=self.notes + (note,))

    def with_note(self, note: str) -> "Corpus":
        return replace(self, notes=self.notes + (note,))
