from nerplat.registry import Registry

HEADS: Registry = Registry("head")
