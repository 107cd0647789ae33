"""Fixtures shared by the spec and plan tests, from tests/fixtures/specs/fake_catalog.py."""

import importlib.util
import sys
from pathlib import Path

_path = Path(__file__).parents[2] / "fixtures" / "specs" / "fake_catalog.py"
_loader = importlib.util.spec_from_file_location("nerplat_fake_catalog", _path)
fake_catalog = sys.modules.setdefault(_loader.name, importlib.util.module_from_spec(_loader))
_loader.loader.exec_module(fake_catalog)

catalog = fake_catalog.catalog
write_spec = fake_catalog.write_spec
