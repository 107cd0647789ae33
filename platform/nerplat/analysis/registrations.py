"""Registrations: a claim and the design that will decide it, written down before any of its runs
evaluates on test data, so that its verdict is confirmatory rather than read after the fact.

`nerplat claims register SPEC -p PROFILE` writes one file per claim, `<spec folder>/registered/
<claim id>.yaml` (specs/registered/ for the repository's specs), from the compiled plan
(`registration_document`); the commit that adds it is its date (`registered_at`, from
`nerplat.git_dates`). A run serves the registrations whose design its own plan reproduces
(`served_registrations`, recorded on its runs); the analysis gives a claim a confirmatory verdict
only when the registration its runs served is still the file's, and was committed before the first
of those runs evaluated on test (`analysis.evidence`).

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
                         `verdicts` sizes a sequential design); metric (the verdict's column, test_...)
               digest    sha256 of the canonical JSON (`plan.model.canonical_json`) of all the above
  API          load_registrations(folder) -> {claim_id: Registration}; registered_at(path) ->
               datetime | None; Registration is frozen: claim_id, digest, looks, max_units,
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

import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from nerplat.analysis.claim_design import claim_arms
from nerplat.analysis.sequential import SequentialDesign, boundaries, look_schedule
from nerplat.config.experiment import BEST_OTHER
from nerplat.errors import Problem, UserInputError
from nerplat.git_dates import committed_at
from nerplat.plan.model import Arm, Plan, sha256_of
from nerplat.plan.units import arm_units, partitioned
from nerplat.suggest import unknown_name

REGISTERED_FOLDER = "registered"  # beside the specs: specs/registered/<claim id>.yaml
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


def registered_at(path: Path) -> datetime | None:
    """The date of the commit that added the registration as it is now; None when uncommitted."""
    return committed_at(Path(path))


def digest_of(document: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a registration without its digest."""
    return sha256_of({key: value for key, value in document.items() if key != "digest"})


def registration_document(plan: Plan, claim_id: str, spec: Path) -> dict[str, Any]:
    """The registration of one of the plan's claims, digest included (module docstring).

    Refuses (UserInputError) a claim the plan lacks, a `best_other` partner (chosen from the
    results, so no design fixes it) and a claim that covers no setting or several: a confirmatory
    claim is one comparison; narrow it with `where:` or a profile.
    """
    claim = next((c for c in plan.claims if c.id == claim_id), None)
    if claim is None:
        raise UserInputError(unknown_name("claim", claim_id, [c.id for c in plan.claims], listed_as="claims"))
    problems = []
    pairs = claim_arms(plan.arms, claim)
    if claim.partner == BEST_OTHER:
        problems.append(f"claim {claim_id}: its partner is best_other, chosen from the results; "
                        "register a claim with a named partner")
    elif len(pairs) != 1 or len(pairs[0][1]) != 1:
        found = ", ".join(arm.id for arm, _ in pairs) or "none"
        problems.append(f"claim {claim_id} covers {len(pairs)} settings of this plan (its method's arms: {found}); "
                        "a registration decides one comparison: narrow the claim with where: or a profile")
    if problems:
        raise UserInputError([Problem(message, path=f"claims.{claim_id}") for message in problems])
    method, (partner,) = pairs[0]
    design = _design(plan, method, partner)
    document = {
        "claim": claim.model_dump(mode="json"),
        "spec": f"{Path(spec).resolve().parent.name}/{Path(spec).name}",
        "profile": plan.profile,
        "setting": {
            "experiment": plan.experiment, "dataset": method.dataset, "sampler": method.sampler,
            "sampler_chain": method.sampler_description, "encoder": method.fixed["encoder"]["name"],
            "split": plan.replicate_split,
        },
        "design": design | {"alpha": _claim_alpha(plan), "metric": f"{plan.replicate_split}_{claim.metric}"},
    }
    return document | {"digest": digest_of(document)}


def _design(plan: Plan, method: Arm, partner: Arm) -> dict[str, Any]:
    """The design's arms, tuning, stopping and units (module docstring), without alpha and metric."""
    units = arm_units(method)
    if arm_units(partner) != units:
        raise UserInputError(Problem(
            f"arms {method.id} and {partner.id} replicate over different units ({list(units)} and "
            f"{list(arm_units(partner))}): pair them on the same seeds and partitions", path="replicate"))
    if plan.sequential is not None:
        looks, spending = look_schedule(plan.sequential.max_seeds, plan.sequential.look_every), plan.sequential.spending
        units = units[: plan.sequential.max_seeds]
    else:
        looks, spending = (len(units),), None
    tuning = None if plan.tune is None else plan.tune.model_dump(mode="json", exclude={"max_concurrent", "enqueue"})
    return {
        "arms": {"method": _arm(plan, method), "partner": _arm(plan, partner)},
        "tuning": tuning,
        "early_stopping": _both(method, partner, lambda arm: arm.fixed["train"].get("early_stopping")),
        "epochs_cap": _both(method, partner, lambda arm: arm.fixed["train"].get("epochs")),
        "unit": "partition" if partitioned(method) or partitioned(partner) else "seed",
        "units": list(units),
        "looks": list(looks),
        "max_units": looks[-1],
        "spending": spending,
    }


def _arm(plan: Plan, arm: Arm) -> dict[str, Any]:
    enqueued = plan.tune.enqueue.get(arm.method, ()) if plan.tune is not None else ()
    return {
        "arm": arm.id, "fixed": arm.fixed, "searched": {k: v.model_dump(mode="json") for k, v in arm.search_space.items()},
        "trials": arm.tune_trials, "enqueued": [dict(point) for point in enqueued],
    }


def _both(method: Arm, partner: Arm, read) -> Any:
    mine, theirs = read(method), read(partner)
    return mine if mine == theirs else {"method": mine, "partner": theirs}


def _claim_alpha(plan: Plan) -> float:
    """The claim's two-sided level: the spec's alpha over the plan's claim rows (one per setting a
    claim covers), as `verdicts.claim_design` and `claim_design.claim_power` size it."""
    rows = sum(len(claim_arms(plan.arms, claim)) for claim in plan.claims)
    return plan.analysis.alpha / max(1, rows)


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
    source = str(path)
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
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
            path=Path(path), intact=digest_of(document) == document["digest"],
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


def served_registrations(plan: Plan, spec: Path, folder: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """The registrations a run of `plan` serves, {claim id: digest}, and one line per registration
    of its claims that it does not serve and why: a run serves a registration only when its plan
    reproduces the registered document exactly (same claim, setting, arms, tuning and units)."""
    registrations = load_registrations(folder if folder is not None else registration_folder(spec))
    served, notes = {}, []
    for claim in plan.claims:
        registration = registrations.get(claim.id)
        if registration is None:
            continue
        try:
            digest = registration_document(plan, claim.id, spec)["digest"]
        except UserInputError as error:
            notes.append(f"claim {claim.id}: {registration.path} not served: {error}")
            continue
        if not registration.intact:
            notes.append(f"claim {claim.id}: {registration.path} was edited after it was written (its digest no longer "
                         "matches its text): not served; register the claim anew")
        elif digest != registration.digest:
            notes.append(f"claim {claim.id}: this plan's design differs from {registration.path} (digest "
                         f"{digest[:12]} against {registration.digest[:12]}): not served, its verdict will be exploratory")
        else:
            served[claim.id] = digest
    return served, notes


def overlapping_units(document: dict[str, Any], earlier: Iterable[Registration]) -> list[str]:
    """One line per earlier registration of the same claim that holds some of the document's units."""
    units = set(document["design"]["units"])
    lines = []
    for registration in earlier:
        held = sorted(units & set(registration.units))
        if registration.claim_id == document["claim"]["id"] and held:
            lines.append(f"{registration.path} already holds {registration.unit}s {held} of claim "
                         f"{registration.claim_id}: draw units no registration used (replicate.seeds, replicate.partitions)")
    return lines


@dataclass(frozen=True)
class Registered:
    """What `register_claims` did for one claim: `written` False when the same registration was there."""

    claim_id: str
    path: Path
    digest: str
    units: tuple[int, ...]
    unit: str
    written: bool


def register_claims(
    plan: Plan, spec: Path, claim_ids: Sequence[str] = (), folder: Path | None = None, replace: bool = False
) -> list[Registered]:
    """Registers the plan's claims (`claim_ids`, default every one): all or none.

    A claim already registered with the same digest is left as it is. One registered with another
    design is refused unless `replace` (its runs' verdicts then turn exploratory), and refused even
    then when the new design draws units the old one held. Every refusal is gathered first; nothing
    is written unless all claims can be registered.
    """
    folder = Path(folder) if folder is not None else registration_folder(spec)
    existing = load_registrations(folder)
    wanted = list(dict.fromkeys(claim_ids)) or [claim.id for claim in plan.claims]
    if not wanted:
        raise UserInputError(Problem("the plan has no claims to register: add them under claims: (docs/spec.md)",
                                     source=str(spec)))
    documents, problems = [], []
    for claim_id in wanted:
        try:
            document = registration_document(plan, claim_id, spec)
        except UserInputError as error:
            problems += error.problems
            continue
        earlier = existing.get(claim_id)
        if earlier is not None and earlier.intact and earlier.digest == document["digest"]:
            documents.append((document, False))
            continue
        if earlier is not None and not replace:
            problems.append(Problem(
                f"claim {claim_id} is already registered with another design (digest {earlier.digest[:12]}); "
                "give --replace to register a new study of it on units the old one did not hold", source=str(earlier.path)))
            continue
        problems += [Problem(line, path=f"claims.{claim_id}") for line in overlapping_units(document, existing.values())]
        documents.append((document, True))
    if problems:
        raise UserInputError(problems)
    registered = []
    for document, write in documents:
        path = registration_path(folder, document["claim"]["id"])
        if write:
            _write_atomically(path, registration_text(document))
        design = document["design"]
        registered.append(Registered(document["claim"]["id"], path, document["digest"], tuple(design["units"]),
                                     design["unit"], write))
    return registered


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
