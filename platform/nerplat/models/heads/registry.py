from nerplat.models.heads.base import HeadServing
from nerplat.registry import Registry

HEADS: Registry = Registry("head")


def head_serving(name: str) -> HeadServing:
    """What serving reads of head `name` (its entry's traits); nothing said for a head without them or no entry."""
    return (HEADS.get(name).traits if name in HEADS else None) or HeadServing()
