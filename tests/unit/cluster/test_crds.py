"""The KubeRay CRDs ship with the package: validation needs nothing outside it."""

import tomllib
from pathlib import Path

import nerplat
from nerplat.cluster import validate
from nerplat.cluster.validate import CRD_FILES, crd_schema, schemas_dir

PACKAGE = Path(nerplat.__file__).parent
PYPROJECT = Path(__file__).parents[3] / "pyproject.toml"


def test_without_the_setting_the_packaged_crds_are_used(monkeypatch):
    monkeypatch.delenv(validate.SCHEMAS_ENV, raising=False)
    crd_schema.cache_clear()
    try:
        assert schemas_dir() == PACKAGE / "cluster" / "crds"
        assert crd_schema("RayJob", "v1")["properties"]["spec"]["additionalProperties"] is False
    finally:
        crd_schema.cache_clear()


def test_the_crds_are_package_data():
    globs = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]["nerplat"]
    shipped = {path for pattern in globs for path in PACKAGE.glob(pattern)}
    assert {PACKAGE / "cluster" / "crds" / name for name in CRD_FILES.values()} <= shipped
