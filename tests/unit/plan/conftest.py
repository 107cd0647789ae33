"""Fixtures shared by the spec and plan tests, from tests/fixtures/specs/spec_testing.py."""

import importlib.util
import sys
from pathlib import Path

_path = Path(__file__).parents[2] / "fixtures" / "specs" / "spec_testing.py"
_loader = importlib.util.spec_from_file_location("nerplat_spec_testing", _path)
spec_testing = sys.modules.setdefault(_loader.name, importlib.util.module_from_spec(_loader))
_loader.loader.exec_module(spec_testing)

catalog = spec_testing.catalog
write_spec = spec_testing.write_spec
match_snapshot = spec_testing.match_snapshot
