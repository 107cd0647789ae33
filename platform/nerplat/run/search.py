"""Searchers and schedulers a spec may name; Ray and Optuna are imported only when one is built."""

from nerplat.registry import Registry

SEARCHERS: Registry = Registry("searcher")
SCHEDULERS: Registry = Registry("scheduler")
