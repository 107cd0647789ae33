"""Every committed registration (specs/registered) is still served by its spec and profile as they
stand: a change to nerplat or to a spec that alters a registered design would silently turn the
registered study's verdicts exploratory (`registration_document.served_registrations`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from repo_paths import REPO

from nerplat.analysis.registration_document import served_registrations
from nerplat.cli.options import compile_spec

REGISTERED = {path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
              for path in sorted((REPO / "specs" / "registered").glob("*.yaml"))}
DESIGNS = sorted({(document["spec"], document["profile"]) for document in REGISTERED.values()})


@pytest.mark.parametrize(("spec", "profile"), DESIGNS, ids=lambda value: str(value))
def test_the_spec_as_it_stands_serves_every_registration_of_its_profile(spec: str, profile: str, monkeypatch):
    monkeypatch.chdir(REPO)
    plan = compile_spec(Path(spec), profile)
    served, notes = served_registrations(plan, Path(spec))
    registered = {claim for claim, document in REGISTERED.items() if (document["spec"], document["profile"]) == (spec, profile)}
    assert registered and set(served) >= registered, "\n".join(notes)
