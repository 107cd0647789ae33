"""`tune.enqueue`: the points a method's search starts from, checked against its search space.

A paper's own hyper-parameter value (MoM's lambda 0.175, focal's gamma 2) is where a fair search
starts: the spec lists it per method, `{mom: [{lambda: 0.175}], focal: [{gamma: 2.0}]}`, and the
tune phase runs each point once, first, before the searcher draws (Optuna's `enqueue_trial`,
run/study.py). Keys are written as the method's search space names them: the hyper-parameter
(`lambda`), or its dotted path (`objective.lambda`) where two parts of the method search the same
name. A point may fix some searched keys only; the searcher draws the others. The plan records the
points with dotted keys.

Refused, each at its place in the spec: an unknown method or one that searches nothing, an unknown
or ambiguous key, a value outside its distribution, a point listed twice, more points than the
method has trials (`num_samples`), and any point under grid search, which runs every grid point
anyway.
"""

from __future__ import annotations

from typing import Any

from nerplat.config.search_space import Distribution
from nerplat.errors import Problem
from nerplat.spec.loader import Document, YamlPath
from nerplat.spec.methods import ResolvedMethod
from nerplat.suggest import unknown_name

FLOAT_KINDS = ("uniform", "loguniform")


def starting_points(
    document: Document, enqueue: dict[str, list[dict[str, Any]]], methods: list[ResolvedMethod], num_samples: int, searcher: str
) -> tuple[dict[str, tuple[dict[str, Any], ...]], list[Problem]]:
    """Each method's points with dotted keys, or the problems with them (all of them)."""
    at: YamlPath = ("tune", "enqueue")
    if enqueue and searcher == "grid":
        return {}, [
            document.problem("grid search runs every grid point: starting points are for tpe and random; remove tune.enqueue", at)
        ]
    by_name = {method.name: method for method in methods}
    resolved: dict[str, tuple[dict[str, Any], ...]] = {}
    problems: list[Problem] = []
    for name, points in enqueue.items():
        method = by_name.get(name)
        if method is None or not method.space:
            searching = [m.name for m in methods if m.space]
            message = unknown_name("method", name, searching, listed_as="methods that search") if method is None else (
                f"method {name} searches nothing, so it has no search to start: "
                "give a hyper-parameter a distribution or remove it here"
            )
            problems.append(document.problem(message, at + (name,)))
            continue
        if len(points) > num_samples:
            message = (
                f"{len(points)} starting points for method {name}, but it runs {num_samples} trials (tune.num_samples): "
                "list fewer"
            )
            problems.append(document.problem(message, at + (name,)))
        found: list[dict[str, Any]] = []
        for index, point in enumerate(points):
            checked, point_problems = _point(document, method, point, at + (name, index))
            problems += point_problems
            if checked is None:
                continue
            if checked in found:
                problems.append(
                    document.problem(f"this point is listed twice for method {name}: a search runs it once", at + (name, index))
                )
            found.append(checked)
        resolved[name] = tuple(found)
    return ({} if problems else resolved), problems


def _point(
    document: Document, method: ResolvedMethod, point: dict[str, Any], at: YamlPath
) -> tuple[dict[str, Any] | None, list[Problem]]:
    if not point:
        return None, [document.problem("a starting point names at least one searched key", at)]
    checked: dict[str, Any] = {}
    problems: list[Problem] = []
    for written, value in point.items():
        key, problem = searched_key(method, written)
        if problem is None and key in checked:
            problem = f"'{written}' names {key} a second time in this point"
        if problem is None and not method.space[key].contains(value):
            problem = f"{value!r} is outside {key}'s distribution {method.space[key].label()}"
        if problem is not None:
            problems.append(document.problem(problem, at + (written,)))
            continue
        checked[key] = _as_searched(method.space[key], value)
    return (None if problems else checked), problems


def searched_key(method: ResolvedMethod, written: str) -> tuple[str, str | None]:
    """The dotted search-space key `written` names (`lambda` -> `objective.lambda`), or why none."""
    if written in method.space:
        return written, None
    matches = [key for key in method.space if key.partition(".")[2] == written]
    if len(matches) == 1:
        return matches[0], None
    if matches:
        return written, f"'{written}' is searched in several parts of method {method.name}: write one of {', '.join(matches)}"
    short = [key.partition(".")[2] for key in method.space]
    return written, unknown_name("key", written, short, listed_as=f"method {method.name} searches")


def _as_searched(distribution: Distribution, value: Any) -> Any:
    """A float distribution's value as a float (`lambda: 1` is 1.0), as the searcher draws it."""
    return float(value) if distribution.kind in FLOAT_KINDS else value
