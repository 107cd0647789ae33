import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from repo_paths import CLUSTER

from nerplat.cluster import kustomize
from nerplat.errors import UserInputError

OVERLAY = CLUSTER / "overlays" / "example"


def by_kind(manifests):
    return {(m.kind, m.name): m.body for m in manifests}


def test_overlay_sets_image_namespace_settings_and_gpu_count():
    base, overlay = by_kind(kustomize.build(CLUSTER / "base")), by_kind(kustomize.build(OVERLAY))
    assert base.keys() == overlay.keys()
    assert {body["metadata"]["namespace"] for body in overlay.values()} == {"nerplat"}
    settings = overlay[("ConfigMap", "nerplat-settings")]["data"]
    assert settings["NERPLAT_RAY_STORAGE"] == "s3://my-bucket/nerplat/ray"
    assert settings["MLFLOW_TRACKING_URI"] == base[("ConfigMap", "nerplat-settings")]["data"]["MLFLOW_TRACKING_URI"]
    worker = overlay[("RayCluster", "nerplat")]["spec"]["workerGroupSpecs"][0]
    container = worker["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example.com/nerplat:0.1.0"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    mlflow = overlay[("Deployment", "nerplat-mlflow")]["spec"]["template"]["spec"]["containers"][0]
    assert mlflow["image"] == "registry.example.com/nerplat:0.1.0"
    postgres = overlay[("StatefulSet", "nerplat-postgres")]["spec"]["template"]["spec"]["containers"][0]
    assert postgres["image"] == "postgres:16"  # other images are left alone


def write_kustomization(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(text)
    return folder


BASE_REF = f"resources:\n  - {CLUSTER / 'base'}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BASE_REF + "namePrefix: x-\n", "namePrefix are beyond nerplat's offline Kustomize renderer"),
        (
            BASE_REF + "patches:\n  - target: {kind: RayCluster, name: nerplat}\n    patch: '{spec: {suspend: true}}'\n",
            "only JSON 6902 patches",
        ),
        (
            BASE_REF + "patches:\n  - target: {kind: RayCluster, name: nope}\n    patch: '[{op: remove, path: /spec}]'\n",
            "matches no resource",
        ),
        (
            BASE_REF
            + "patches:\n  - target: {kind: RayCluster}\n    patch: '[{op: replace, path: /spec/nothere/x, value: 1}]'\n",
            "no such path",
        ),
        (BASE_REF + "patches:\n  - target: {kind: RayCluster}\n    patch: '[{op: move, from: /a, path: /b}]'\n", "op 'move'"),
        ("configMapGenerator:\n  - name: x\n    literals: [A=1]\n", "disableNameSuffixHash"),
        (BASE_REF + "configMapGenerator:\n  - name: other\n    behavior: merge\n    literals: [A=1]\n", "nothing to merge"),
    ],
)
def test_what_the_renderer_cannot_do_is_refused_not_guessed(tmp_path: Path, text: str, expected: str):
    with pytest.raises(UserInputError) as caught:
        kustomize.build(write_kustomization(tmp_path / "overlay", text))
    assert expected in str(caught.value)


def test_json_patch_add_remove_and_list_append(tmp_path: Path):
    folder = write_kustomization(
        tmp_path / "o",
        BASE_REF
        + """\
patches:
  - target: {kind: RayCluster, name: nerplat}
    patch: |-
      - {op: add, path: /spec/suspend, value: true}
      - {op: remove, path: /spec/autoscalerOptions}
      - {op: add, path: /spec/workerGroupSpecs/-, value: {groupName: extra}}
""",
    )
    spec = by_kind(kustomize.build(folder))[("RayCluster", "nerplat")]["spec"]
    assert spec["suspend"] is True and "autoscalerOptions" not in spec
    assert [group["groupName"] for group in spec["workerGroupSpecs"]] == ["gpu", "extra"]


def test_config_map_files_are_read_from_the_kustomizations_folder_only(tmp_path: Path):
    folder = tmp_path / "k"
    write_kustomization(folder, "generatorOptions: {disableNameSuffixHash: true}\nconfigMapGenerator:\n"
                        "  - {name: files, files: [a.json, renamed.txt=b.txt]}\n")
    (folder / "a.json").write_text('{"a": 1}\n')
    (folder / "b.txt").write_text("b\n")
    (config_map,) = kustomize.build(folder)
    assert config_map.body["data"] == {"a.json": '{"a": 1}\n', "renamed.txt": "b\n"}
    (tmp_path / "secret.txt").write_text("outside")
    for entry, refusal in (("../secret.txt", "outside"), ("nothere.json", "no such file")):
        write_kustomization(
            folder, f"generatorOptions: {{disableNameSuffixHash: true}}\nconfigMapGenerator:\n  - {{name: x, files: [{entry}]}}\n"
        )
        with pytest.raises(UserInputError, match=refusal):
            kustomize.build(folder)


def test_a_namespace_reaches_a_role_bindings_subjects_that_are_service_accounts_built_with_it(tmp_path: Path):
    """As `kubectl kustomize` (Kustomize 5.5) does."""
    folder = write_kustomization(tmp_path / "o", "namespace: lab\nresources: [binding.yaml]\n")
    (folder / "binding.yaml").write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\n"
        "subjects: [{kind: ServiceAccount, name: built}, {kind: ServiceAccount, name: elsewhere}]\n"
        "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: built}\n"
    )
    binding = by_kind(kustomize.build(folder))[("RoleBinding", "b")]
    assert [subject.get("namespace") for subject in binding["subjects"]] == ["lab", None]


@pytest.mark.parametrize(("image", "expected"), [("nerplat", "r/n:2"), ("nerplat:1", "r/n:2"), ("other:1", "other:1")])
def test_image_rules_match_name_with_or_without_tag(image: str, expected: str):
    assert kustomize._new_image(image, [{"name": "nerplat", "newName": "r/n", "newTag": 2}]) == expected


def test_renderer_agrees_with_kubectl_kustomize():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the offline renderer is compared with `kubectl kustomize` only where it is")
    for folder in (CLUSTER / "base", OVERLAY):
        printed = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=True).stdout
        theirs = {(b["kind"], b["metadata"]["name"]): b for b in yaml.safe_load_all(printed)}
        assert by_kind(kustomize.build(folder)) == theirs, folder
