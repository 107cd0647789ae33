"""Registrations: a claim and the design that will decide it, written down before any of its runs
evaluates on test data, so that its verdict is confirmatory rather than read after the fact.

`nerplat claims register SPEC -p PROFILE` writes one file per claim, `<spec folder>/registered/
<claim id>.yaml` (specs/registered/ for the repository's specs), from the compiled plan
(`analysis.registration_document`); this module is the file: its format, digest, reading and date.
The commit that adds it is its date (`registered_dates`, from `nerplat.git_history`). A run serves the
registrations whose design its own plan reproduces (`registration_document.served_registrations`,
recorded on its runs); the analysis gives a claim a confirmatory verdict only when the registration
its runs served is still the file's, and was committed before the first of those runs evaluated on
test (`analysis.evidence`).

Contract (other modules and the claims table rely on these names):

  file         specs/registered/<claim_id>.yaml, human-readable YAML, keys in this order:
               claim     the spec's claim as the paper states it (`config.experiment.Claim`, JSON form:
                         id, paper, source, kind, method, partner, metric, effect, direction, margin,
                         where, note, ...)
               spec      the spec file, as <its folder's name>/<file name> (specs/mom_conll.yaml)
               profile   the profile merged over it, or null
               setting   experiment, dataset, sampler (label and chain), encoder, split of the verdict
               design    arms: {method: ARM, partner: ARM}, ARM = {arm, fixed (the trial settings but
                         seed and partition), searched ({key: distribution}), trials (tune trials),
                         enqueued (starting points run first)}; tuning (searcher, scheduler, tune
                         metric and mode, seeds: the plan's tune section without max_concurrent);
                         early_stopping and epochs_cap (the method arm's; {method:, partner:} where
                         the arms differ); unit (seed | partition); units (the list the looks take,
                         in order: never one a registration of the same claim held before);
                         looks (units at each look); max_units (the last look); spending
                         (obrien_fleming | pocock, null for a fixed design of one look); alpha (the
                         claim's two-sided level: the spec's alpha over the plan's claim rows, as
                         `verdicts` sizes a sequential design); metric (the verdict's column, test_...);
                         selection_metric (the dev metric every run chooses its checkpoint and
                         stops on; absent from registrations written before it was recorded:
                         `registration_document.with_selection_metric`)
               digest    sha256 of the canonical JSON (`plan.model.canonical_json`) of all the above
  API          load_registrations(folder) -> {claim_id: Registration}; registered_dates(paths) ->
               {resolved path: datetime | None}; Registration is frozen: claim_id, digest, looks, max_units,
               spending, alpha, units, unit, metric, path (and intact: its text still hashes to
               its digest)
  runs         each replicate run carries the tag `nerplat.registrations` (`track.schema.REGISTRATIONS`):
               canonical JSON {claim_id: digest} of the registrations its run served
  verdicts     verdicts.parquet's `registration` (the digest the claim's runs served, or null),
               `evidence` ("confirmatory" | "exploratory"), `evidence_reason` (null when
               confirmatory, else why not: "no registration", "registration changed since the run
               (digest ...)", "registered <date>, after the first test evaluation <date>") and
               `first_test_at` (ISO time of the first test evaluation among the claim's runs)

More units later are more looks of the same design, never a fresh alpha: a run stopped for budget
after look k (`nerplat run --through-look k`) is continued by `nerplat run --resume`, which runs
look k + 1 on the next units of the list, and the analysis judges every look against the same
boundaries (`registered_design`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from nerplat.analysis.boundaries import SequentialDesign, boundaries
from nerplat.errors import Problem, UserInputError
from nerplat.git_history import committed_dates, committed_texts
from nerplat.plan.model import sha256_of

REGISTERED_FOLDER = "registered"  # beside the specs: specs/registered/<claim id>.yaml
DEFAULT_REGISTRATIONS = Path("specs") / REGISTERED_FOLDER  # what `nerplat analyze` reads, from the repository's root
KEYS = ("claim", "spec", "profile", "setting", "design", "digest")
DESIGN_KEYS = (
    "arms", "tuning", "early_stopping", "epochs_cap", "unit", "units", "looks", "max_units", "spending", "alpha", "metric",
)
HEADER = (
    "# A registered claim (nerplat claims register): the claim as its paper states it and the design\n"
    "# that will decide it. The commit that adds this file is its registration date; do not edit it\n"
    "# (its digest would no longer match and its runs' verdicts turn exploratory): register anew.\n"
)


@dataclass(frozen=True)
class Registration:
    """One registration file, read (`read_registration`): what the analysis and the runner need of it."""

    claim_id: str
    digest: str  # the file's recorded digest
    looks: tuple[int, ...]
    max_units: int
    spending: str | None  # None: a fixed design of one look
    alpha: float
    units: tuple[int, ...]
    unit: str  # "seed" or "partition"
    metric: str
    path: Path
    intact: bool  # the file's content still hashes to `digest`

    def design(self) -> SequentialDesign | None:
        """`registered_design` of this registration."""
        return registered_design(self)


def registration_folder(spec: Path) -> Path:
    """Where the registrations of a spec's claims live: `registered/` in the spec's folder."""
    return Path(spec).resolve().parent / REGISTERED_FOLDER


def registration_path(folder: Path, claim_id: str) -> Path:
    return Path(folder) / f"{claim_id}.yaml"


def registered_dates(paths: Iterable[Path]) -> dict[Path, datetime | None]:
    """The date of the commit that added each registration as it is now (None when uncommitted), by
    resolved path: a few git processes for a whole folder, not a few per file."""
    return committed_dates(paths)


def digest_of(document: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a registration without its digest."""
    return sha256_of({key: value for key, value in document.items() if key != "digest"})


class _RegistrationDumper(yaml.SafeDumper):
    """YAML for people: no anchors for repeated values, lists of numbers and words on one line."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flat = all(isinstance(item, (int, float, str, bool)) or item is None for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_RegistrationDumper.add_representer(list, _list)


def registration_text(document: dict[str, Any]) -> str:
    """The file's text: a header saying what it is, then the YAML (keys in contract order)."""
    ordered = {key: document[key] for key in KEYS}
    return HEADER + yaml.dump(ordered, Dumper=_RegistrationDumper, sort_keys=False, allow_unicode=True, width=110)


def read_registration(path: Path) -> Registration:
    """One registration file as a `Registration`; UserInputError naming the file and the field when
    it is not one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserInputError(Problem(f"cannot read a registration: {error}", source=str(path))) from None
    return parse_registration(text, Path(path), str(path))


def earlier_registrations(path: Path) -> list[Registration]:
    """The registrations git's history holds at `path`, oldest first: those a replacement replaced too
    (a version that is no registration is left out: it held no units)."""
    found = []
    for number, text in enumerate(committed_texts(path), 1):
        try:
            found.append(parse_registration(text, Path(path), f"{path}, committed version {number}"))
        except UserInputError:
            continue
    return found


def parse_registration(text: str, path: Path, source: str) -> Registration:
    """A registration's text as a `Registration` of the file at `path`; UserInputError naming `source`."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UserInputError(Problem(f"cannot read a registration: {error}", source=source)) from None
    if not isinstance(document, dict) or set(document) != set(KEYS):
        found = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise UserInputError(Problem(
            f"not a registration: expected the keys {', '.join(KEYS)}, found {found}; write it with nerplat claims register",
            source=source))
    design = document["design"]
    missing = [key for key in DESIGN_KEYS if not isinstance(design, dict) or key not in design]
    claim_id = (document["claim"] or {}).get("id") if isinstance(document["claim"], dict) else None
    if missing or not isinstance(claim_id, str) or not isinstance(document["digest"], str):
        what = f"design.{', design.'.join(missing)}" if missing else "claim.id or digest"
        raise UserInputError(Problem(f"registration lacks {what}; register the claim anew", source=source))
    try:
        return Registration(
            claim_id=claim_id, digest=document["digest"], looks=tuple(int(n) for n in design["looks"]),
            max_units=int(design["max_units"]), spending=design["spending"], alpha=float(design["alpha"]),
            units=tuple(int(u) for u in design["units"]), unit=str(design["unit"]), metric=str(design["metric"]),
            path=path, intact=digest_of(document) == document["digest"],
        )
    except (TypeError, ValueError) as error:
        raise UserInputError(Problem(f"registration's design is malformed ({error}); register the claim anew",
                                     source=source)) from None


def load_registrations(folder: Path) -> dict[str, Registration]:
    """Every registration in `folder` by claim id ({} when the folder does not exist); a file whose
    name is not its claim's id is refused, so one claim has one file."""
    found: dict[str, Registration] = {}
    folder = Path(folder)
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        registration = read_registration(path)
        if path.stem != registration.claim_id:
            raise UserInputError(Problem(
                f"registers claim {registration.claim_id!r} but is named {path.name}: name it {registration.claim_id}.yaml",
                source=str(path)))
        found[registration.claim_id] = registration
    return found


def registered_design(registration: Registration) -> SequentialDesign | None:
    """The boundaries every look of the registration is judged by, whichever run took it: its looks
    out of its max_units at its alpha and spending (None for a fixed design)."""
    if registration.spending is None:
        return None
    return boundaries(registration.looks, registration.max_units, registration.alpha, registration.spending)


