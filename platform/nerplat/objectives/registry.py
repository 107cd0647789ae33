from nerplat.registry import Registry

OBJECTIVES: Registry = Registry("loss")
