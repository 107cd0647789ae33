"""An example nerplat plugin: a loss, a sampler and a corpus format, registered on import.

A spec loads it with `plugins: [./nerplat_example]` (a folder relative to the spec); an installed
package declares it in the `nerplat.plugins` entry-point group instead (see ../pyproject.toml).
"""

from nerplat_example import losses, samplers, word_slash  # noqa: F401  (importing registers them)
