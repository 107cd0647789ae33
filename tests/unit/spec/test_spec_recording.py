"""`${VAR}` values reach resolved_spec.yaml and plan.json as their references unless the spec lists
the variable in tracking.record_env; credentials in URLs never do."""

import json

from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource

SECRETS = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG", "MLPW": "hunter22", "EPOCHS": "2"}


def spec_text(record_env: str = "[]") -> str:
    return (
        "experiment: secrets\n"
        "description: 'key ${AWS_SECRET_ACCESS_KEY}'\n"
        "dataset: {path: '${CORPORA}/tiny'}\n"
        "train: {epochs: '${EPOCHS:-3}'}\n"
        "methods: {ce: {loss: ce}}\n"
        f"tracking: {{uri: 'http://bob:${{MLPW}}@127.0.0.1:5000', record_env: {record_env}}}\n"
        "profiles:\n"
        "  cpu: {description: 'from ${AWS_SECRET_ACCESS_KEY}'}\n"
    )


def compiled(catalog, write_spec, tmp_path, record_env="[]", profile=None):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "train.txt").write_text("EU\tB-ORG\n")
    environ = {**SECRETS, "CORPORA": str(tmp_path)}
    return compile_plan(SpecSource(write_spec(spec_text(record_env)), profile, environ=environ), catalog)


def test_interpolated_values_are_recorded_as_their_references(catalog, write_spec, tmp_path):
    plan = compiled(catalog, write_spec, tmp_path)
    assert plan.resolved_spec["description"] == "key ${AWS_SECRET_ACCESS_KEY}"
    assert plan.resolved_spec["train"] == {"epochs": "${EPOCHS:-3}"}
    assert plan.resolved_spec["tracking"]["uri"] == "http://127.0.0.1:5000"  # URL credentials: never recorded
    recorded = plan.model_dump_json()
    assert SECRETS["AWS_SECRET_ACCESS_KEY"] not in recorded and "hunter22" not in recorded
    assert str(tmp_path) not in recorded  # the corpus folder came from ${CORPORA}
    assert json.loads(recorded)["tracking_uri"] == "http://127.0.0.1:5000"
    assert plan.arms[0].fixed["dataset"]["path"] == str((tmp_path / "tiny").resolve())  # runs get the value
    assert plan.tracking_uri == "http://bob:hunter22@127.0.0.1:5000"


def test_variables_listed_in_record_env_are_recorded_in_clear(catalog, write_spec, tmp_path):
    plan = compiled(catalog, write_spec, tmp_path, record_env="[EPOCHS, CORPORA]")
    assert plan.resolved_spec["train"] == {"epochs": "2"}
    assert plan.resolved_spec["dataset"] == {"path": f"{tmp_path}/tiny"}
    assert plan.resolved_spec["description"] == "key ${AWS_SECRET_ACCESS_KEY}"


def test_a_value_a_profile_interpolates_is_recorded_as_its_reference(catalog, write_spec, tmp_path):
    plan = compiled(catalog, write_spec, tmp_path, profile="cpu")
    assert plan.resolved_spec["description"] == "from ${AWS_SECRET_ACCESS_KEY}"
    assert plan.description == f"from {SECRETS['AWS_SECRET_ACCESS_KEY']}"
    assert SECRETS["AWS_SECRET_ACCESS_KEY"] not in plan.model_dump_json()
