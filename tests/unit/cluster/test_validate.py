from pathlib import Path

import pytest
from repo_paths import CLUSTER

from nerplat.cluster.manifests import parse_manifests
from nerplat.cluster.validate import crd_schema, manifest_problems, strict_schema, validate_tree
from nerplat.errors import UserInputError

RAYCLUSTER = (CLUSTER / "base" / "raycluster.yaml").read_text()
MLFLOW = (CLUSTER / "base" / "mlflow.yaml").read_text()


def problems_of(text: str) -> list[str]:
    return [str(problem) for manifest in parse_manifests(text, "m.yaml") for problem in manifest_problems(manifest)]


def test_every_manifest_and_kustomization_under_cluster_validates():
    checked = dict(validate_tree([CLUSTER]))
    assert {"base", "example"} <= {Path(label.split()[0]).name for label in checked}
    assert all(count > 0 for count in checked.values())


def test_strict_schema_forbids_unlisted_fields_but_respects_open_ones():
    schema = {
        "type": "object",
        "properties": {
            "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
            "open": {"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": True},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"b": {}}}},
            "either": {"anyOf": [{"type": "object", "properties": {"c": {}}}]},
        },
    }
    strict = strict_schema(schema)
    assert strict["additionalProperties"] is False
    assert strict["properties"]["closed"]["additionalProperties"] is False
    assert "additionalProperties" not in strict["properties"]["open"]
    assert strict["properties"]["map"]["additionalProperties"] == {"type": "string"}
    assert strict["properties"]["list"]["items"]["additionalProperties"] is False
    assert strict["properties"]["either"]["anyOf"][0]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the input is not modified


def test_kuberay_schema_is_strict_where_the_crd_is_not():
    schema = crd_schema("RayCluster", "v1")
    worker = schema["properties"]["spec"]["properties"]["workerGroupSpecs"]["items"]
    assert worker["additionalProperties"] is False
    assert worker["properties"]["rayStartParams"]["additionalProperties"] == {"type": "string"}


def test_misspelt_crd_field_is_named_with_path_line_and_suggestion():
    text = RAYCLUSTER.replace("minReplicas: 0", "minReplica: 0")
    problems = problems_of(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "minReplica: 0" in row)
    assert (
        f"RayCluster 'nerplat': unknown field 'minReplica'; did you mean 'minReplicas'? "
        f"at spec.workerGroupSpecs[0].minReplica (m.yaml:{line})"
    ) in problems
    assert any("missing required field 'minReplicas' at spec.workerGroupSpecs[0]" in p for p in problems)


def test_crd_type_and_enum_errors_say_what_was_expected():
    text = RAYCLUSTER.replace("maxReplicas: 4", "maxReplicas: four").replace("upscalingMode: Default", "upscalingMode: Fast")
    problems = problems_of(text)
    assert any('expected integer, got string "four" at spec.workerGroupSpecs[0].maxReplicas' in p for p in problems)
    assert any("must be one of Default or Aggressive or Conservative" in p for p in problems)


def test_crd_metadata_is_checked_as_object_meta():
    labels = "  labels:\n    app.kubernetes.io/name: nerplat-ray"
    text = RAYCLUSTER.replace(labels, labels.replace("labels", "lables"), 1)
    assert any("unknown field 'lables'; did you mean 'labels'? at metadata.lables" in p for p in problems_of(text))


def test_builtin_kind_misspelling_is_rejected():
    problems = problems_of(MLFLOW.replace("containerPort: 5000", "containerPrt: 5000"))
    assert len(problems) == 1
    assert problems[0].startswith("Deployment 'nerplat-mlflow': ")
    assert "spec.template.spec.containers[0].ports[0]" in problems[0]


def test_builtin_unknown_field_gets_a_suggestion():
    text = MLFLOW.replace("  replicas: 1", "  replica: 1")
    line = text.splitlines().index("  replica: 1") + 1
    assert problems_of(text) == [
        f"Deployment 'nerplat-mlflow': unknown field 'replica'; did you mean 'replicas'? at spec.replica (m.yaml:{line})"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x}\n", "unknown kind for apiVersion ray.io/v1"),
        ("apiVersion: ray.io/v9\nkind: RayJob\nmetadata: {name: x}\n", "not served by the KubeRay CRD"),
        ("apiVersion: v1\nkind: Widget\nmetadata: {name: x}\n", "unknown kind Widget"),
        ("kind: Service\nmetadata: {name: x}\n", "missing required field 'apiVersion'"),
        ("apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {}\n", "missing required field 'name' at metadata"),
    ],
)
def test_unknown_or_incomplete_objects_are_refused(text, expected):
    assert any(expected in problem for problem in problems_of(text))


def test_validate_tree_reports_every_broken_file(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(RAYCLUSTER.replace("groupName: gpu", "groupNme: gpu"))
    (tmp_path / "b.yaml").write_text(MLFLOW.replace("  replicas: 1", "  replica: 1"))
    (tmp_path / "ok.yaml").write_text(RAYCLUSTER)
    with pytest.raises(UserInputError) as caught:
        validate_tree([tmp_path])
    sources = {Path(problem.source).name for problem in caught.value.problems}
    assert sources == {"a.yaml", "b.yaml"}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [("resources: [a.yaml]\n bad: 1\n", 2, "not valid YAML"), ("- resources\n", None, "must be a mapping")],
)
def test_a_broken_kustomization_is_a_problem_naming_its_file(tmp_path: Path, text: str, line: int | None, message: str):
    """It was a YAMLError (or AttributeError) traceback out of the walk over a tree's kustomizations."""
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(text)
    (tmp_path / "ok.yaml").write_text(RAYCLUSTER)
    with pytest.raises(UserInputError) as caught:
        validate_tree([tmp_path])
    (problem,) = caught.value.problems
    assert (Path(problem.source).parts[-2:], problem.line) == (("overlay", "kustomization.yaml"), line)
    assert message in problem.message


def test_missing_schemas_folder_says_how_to_fix(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("NERPLAT_K8S_SCHEMAS", str(tmp_path))
    crd_schema.cache_clear()
    try:
        problems = problems_of(RAYCLUSTER)
    except UserInputError as error:
        problems = [str(p) for p in error.problems]
    finally:
        crd_schema.cache_clear()
    assert any("NERPLAT_K8S_SCHEMAS" in p and str(tmp_path) in p for p in problems)
