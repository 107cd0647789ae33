"""Corpus registry: names in specs resolve to CoNLL folders under $NERPLAT_DATA or to the HF hub."""

from nerplat.registry import Registry

CORPORA: Registry = Registry("corpus")
