"""Creating a child run by key without duplicates, when several processes may create it at once.

MLflow has no unique run keys and no compare-and-set, and a lock inside one process cannot
serialise several processes (or machines). The one atomic, first-writer-wins operation a store
offers is logging a param: the key is a primary key, so a second, different value is refused
(SQL stores and the REST server alike). Child runs are therefore *claimed*: the creator makes a
run, then logs `nerplat.child.<generation>:<child key> = <its run id>` on the parent's bookkeeping
run. A process that loses the race deletes its own run and adopts the winner's, so racing
creators all end up with the same run. A child gets its `nerplat.kind` tag only once claimed, so
a creator killed between creating and claiming leaves a run that no nerplat search (analysis
searches by kind) ever returns. Lookups read the claims (one `get_run` of the bookkeeping run,
whose params grow by one per child). If a claimed run is deleted (a user removed it to re-run
it), the next creation claims the next generation.

`ExperimentTracker` (track/experiment_tracker.py) creates its child runs through a `ChildRunClaims`
on its client and experiment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nerplat.track import schema
from nerplat.track.params import param_key

MAX_CLAIM_GENERATIONS = 100
# How SQLite, MySQL and PostgreSQL word a unique-key violation in the errors MLflow passes on.
UNIQUE_KEY_ERRORS = ("UNIQUE constraint", "Duplicate entry", "duplicate key")


@dataclass(frozen=True)
class ChildRunClaims:
    """Claims of child runs in one MLflow experiment, through one client."""

    client: Any  # an MlflowClient (or the tracker's PatientClient around one)
    experiment_id: str

    def claim(
        self, bookkeeping: str, parent_run_id: str, key: str, name: str, tags: Mapping[str, str], params: Mapping[str, str]
    ):
        """(run, created): the claimed active child keyed `key`, or a new run called `name` that won the
        claim on the parent's bookkeeping run `bookkeeping`.

        Params are logged before the claim, so a claimed run always has all of them; the kind
        tag after it, so an unclaimed run never shows up in searches by kind.
        """
        from mlflow.exceptions import MlflowException

        for _ in range(MAX_CLAIM_GENERATIONS):
            claims = self._child_claims(bookkeeping, key)
            if claims and (current := self._active_run(claims[-1])) is not None:
                return current, False
            run = self._create_unclaimed_run(name, {k: v for k, v in tags.items() if k != schema.KIND}, params)
            if run is None:  # a racing creator that claimed first cleaned it up: adopt its run
                continue
            try:
                self.client.log_param(bookkeeping, child_claim_key(len(claims) + 1, key), run.info.run_id)
            except MlflowException:
                winner = self._child_claims(bookkeeping, key)[len(claims) : len(claims) + 1]
                if not winner:
                    raise  # not a lost race: the bookkeeping run is gone or deleted
                if winner[0] != run.info.run_id:  # else the claim landed and only its answer was lost
                    self.client.delete_run(run.info.run_id)
                    continue
            rewrite_on_race(self.client.set_tag, run.info.run_id, schema.KIND, tags[schema.KIND])
            self._delete_unclaimed(parent_run_id, key, run, claimed=[*claims, run.info.run_id])
            return run, True
        raise RuntimeError(f"run {key!r} was deleted and re-created {MAX_CLAIM_GENERATIONS} times")

    def _create_unclaimed_run(self, name: str, tags: Mapping[str, str], params: Mapping[str, str]):
        """A new child run before its claim, or None if a racing creator deleted it meanwhile.

        A creator that wins a claim deletes the older unclaimed runs of that key (`_delete_unclaimed`),
        which includes the run of a creator that made its run first but has not yet logged its params.
        """
        from mlflow.exceptions import MlflowException

        run = self.client.create_run(self.experiment_id, run_name=name, tags=dict(tags))
        try:
            log_params(self.client, run.info.run_id, params)
        except MlflowException:
            if self._active_run(run.info.run_id) is None:
                return None
            raise
        return run

    def _delete_unclaimed(self, parent_run_id: str, key: str, winner, claimed: list[str]) -> None:
        """Deletes older runs keyed `key` that no claim names: left by a creator killed before it claimed.

        Only runs no younger than the winner: a younger run belongs to a creator still racing, which
        loses its claim and deletes its run itself. An older one may too (created first, claiming
        later); that creator finds its run deleted and adopts the winner's (`_create_unclaimed_run`).
        """
        for run in self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{schema.RUN_KEY}` = '{key}' and tags.`{schema.PARENT_RUN}` = '{parent_run_id}'",
        ):
            if run.info.run_id not in claimed and run.info.start_time <= winner.info.start_time:
                self.client.delete_run(run.info.run_id)

    def _child_claims(self, bookkeeping_run_id: str, key: str) -> list[str]:
        """Run ids claimed for `key` on a bookkeeping run, oldest generation first."""
        params = self.client.get_run(bookkeeping_run_id).data.params
        claims = []
        while (claim := child_claim_key(len(claims) + 1, key)) in params:
            claims.append(params[claim])
        return claims

    def _active_run(self, run_id: str):
        from mlflow.exceptions import MlflowException

        try:
            run = self.client.get_run(run_id)
        except MlflowException as error:
            if error.error_code == "RESOURCE_DOES_NOT_EXIST":  # removed for good by `mlflow gc`
                return None
            raise
        return run if run.info.lifecycle_stage == "active" else None


def log_params(client: Any, run_id: str, params: Mapping[str, str]) -> None:
    """`params` on the run in one batch (none: no request)."""
    from mlflow.entities import Param

    if params:
        client.log_batch(run_id, params=[Param(key, value) for key, value in params.items()])


def rewrite_on_race(write: Callable[..., None], *args: Any, attempts: int = 3) -> None:
    """Runs an idempotent write again when a concurrent writer of the same key won the insert.

    MLflow's SQL store upserts a tag by reading then inserting, so two processes writing the same
    tag at once can get a unique-key error; the second attempt finds the row and updates it.
    """
    from mlflow.exceptions import MlflowException

    for attempt in range(attempts):
        try:
            return write(*args)
        except MlflowException as error:
            if attempt == attempts - 1 or not any(marker in str(error) for marker in UNIQUE_KEY_ERRORS):
                raise


def child_claim_key(generation: int, key: str) -> str:
    """The bookkeeping-run param that claims `key` for one child run (a digest if `key` cannot be a param key)."""
    claim = f"{schema.CHILD_CLAIM_PREFIX}{generation}:{key}"
    if param_key(claim) == claim:
        return claim
    return f"{schema.CHILD_CLAIM_PREFIX}{generation}:sha256-{hashlib.sha256(key.encode()).hexdigest()[:32]}"

