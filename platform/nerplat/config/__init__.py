"""Plain data the layers share: a trial's config, search-space distributions, experiment settings.

A leaf package: it imports pydantic and nothing of nerplat but itself, so `spec`, `plan`, `data`,
`models` and `trial` can all speak these types without importing each other.
"""
