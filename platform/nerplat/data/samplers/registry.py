from nerplat.registry import Registry

SAMPLERS: Registry = Registry("sampler")
