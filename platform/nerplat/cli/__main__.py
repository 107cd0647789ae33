"""`python -m nerplat.cli` (tests run the CLI this way, in the venv of the interpreter)."""

import sys

from nerplat.cli import main

sys.exit(main())
