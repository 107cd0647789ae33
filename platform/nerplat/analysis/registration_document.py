"""A registration from a compiled plan: the claim, its setting and the design that will decide it
(`registration_document`), the registrations a run of a plan serves (`served_registrations`), and
`nerplat claims register` (`register_claims`): all of a plan's claims or none, never on units an
earlier registration of the claim held. The file's format and contract are `analysis.registrations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nerplat.analysis.claim_design import claim_arms
from nerplat.analysis.registrations import (
    Registration,
    digest_of,
    earlier_registrations,
    load_registrations,
    registration_folder,
    registration_path,
    registration_text,
)
from nerplat.analysis.sequential import look_schedule
from nerplat.atomic_files import write_atomically
from nerplat.config.experiment import BEST_OTHER
from nerplat.errors import Problem, UserInputError
from nerplat.plan.model import Arm, Plan
from nerplat.plan.units import arm_units, partitioned
from nerplat.suggest import unknown_name


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
        "design": design | {
            "alpha": _claim_alpha(plan), "metric": f"{plan.replicate_split}_{claim.metric}",
            "selection_metric": f"dev_{plan.select_metric}",
        },
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
            document = registration_document(plan, claim.id, spec)
        except UserInputError as error:
            notes.append(f"claim {claim.id}: {registration.path} not served: {error}")
            continue
        if not registration.intact:
            notes.append(f"claim {claim.id}: {registration.path} was edited after it was written (its digest no longer "
                         "matches its text): not served; register the claim anew")
        elif document["digest"] != registration.digest and not reproduces(
            with_selection_metric(registered_document(registration)), document
        ):
            notes.append(f"claim {claim.id}: this plan's design differs from {registration.path} (digest "
                         f"{document['digest'][:12]} against {registration.digest[:12]}): not served, its verdict will be "
                         "exploratory")
        else:
            served[claim.id] = registration.digest
    return served, notes


def registered_document(registration: Registration) -> dict[str, Any]:
    """The registration's file as data (it was read and checked once already by `load_registrations`)."""
    return yaml.safe_load(Path(registration.path).read_text(encoding="utf-8"))


SELECTION_BEFORE_RECORDED = "dev_micro_f1"  # the default every untuned run selected on before designs recorded it


def with_selection_metric(registered: dict[str, Any]) -> dict[str, Any]:
    """A registration written before designs recorded `selection_metric` (the dev metric each run
    chooses its checkpoint and stops on), read with the one its runs used then: the tuning's metric,
    else the default of the time. A later change of that default then changes the registered design."""
    design = registered["design"]
    if "selection_metric" in design:
        return registered
    metric = (design.get("tuning") or {}).get("metric") or SELECTION_BEFORE_RECORDED
    return registered | {"design": design | {"selection_metric": metric}}


def reproduces(registered: Any, document: Any) -> bool:
    """Whether a plan's registration `document` reproduces a `registered` one: every registered value
    equal, and every key the registration lacks absent in effect (null, empty or false).

    A setting nerplat gained after the registration was written (a new config field) then leaves
    the design as registered: its default is absent, and the run serves the registration. A new or
    changed value of it does not. The digests are not compared here: they cover the new keys too.
    """
    if isinstance(registered, dict) and isinstance(document, dict):
        extra = document.keys() - registered.keys() - {"digest"}
        return all(key in document and reproduces(value, document[key])
                   for key, value in registered.items() if key != "digest") and all(
            document[key] in (None, False, "", {}, []) for key in extra)
    if isinstance(registered, list) and isinstance(document, list):
        return len(registered) == len(document) and all(map(reproduces, registered, document))
    if isinstance(registered, bool) or isinstance(document, bool):
        return registered is document
    return registered == document


def overlapping_units(document: dict[str, Any], earlier: Iterable[Registration]) -> list[str]:
    """A line naming the document's units that an earlier registration of the same claim held (the
    file as it is, or a version in git's history), if any."""
    claim, units = document["claim"]["id"], set(document["design"]["units"])
    held = [r for r in earlier if r.claim_id == claim and units & set(r.units)]
    if not held:
        return []
    taken = sorted(set().union(*(units & set(r.units) for r in held)))
    return [f"{held[0].path} (or its git history) already holds {held[0].unit}s {taken} of claim {claim}: "
            "draw units no registration of it used (replicate.seeds, replicate.partitions)"]


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
        held = [*existing.values(), *earlier_registrations(registration_path(folder, claim_id))]
        problems += [Problem(line, path=f"claims.{claim_id}") for line in overlapping_units(document, held)]
        documents.append((document, True))
    if problems:
        raise UserInputError(problems)
    registered = []
    for document, write in documents:
        path = registration_path(folder, document["claim"]["id"])
        if write:
            write_atomically(path, registration_text(document))
        design = document["design"]
        registered.append(Registered(document["claim"]["id"], path, document["digest"], tuple(design["units"]),
                                     design["unit"], write))
    return registered


