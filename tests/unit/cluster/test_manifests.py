import pytest

from nerplat.cluster import manifests
from nerplat.cluster.manifests import format_path, parse_manifests, parse_yaml
from nerplat.errors import UserInputError

TWO_DOCS = """\
apiVersion: v1
kind: Service
metadata:
  name: a
spec:
  ports:
    - name: http
      port: 80
---
# an empty document is skipped
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
"""


def test_documents_keep_their_source_and_lines():
    service, config_map = parse_manifests(TWO_DOCS, "x.yaml")
    assert (service.label, config_map.label) == ("Service 'a'", "ConfigMap 'b'")
    assert service.line_of(["spec", "ports", 0, "port"]) == 8
    assert service.line_of(["spec", "ports", 0, "port"], key=True) == 8
    assert service.line_of(["spec", "nothere", 3]) == 5  # nearest existing ancestor
    assert config_map.line_of(["metadata", "name"]) == 14


def test_problem_names_object_path_and_line():
    (service, _) = parse_manifests(TWO_DOCS, "x.yaml")
    text = str(service.problem("bad port", ["spec", "ports", 0, "port"]))
    assert text == "Service 'a': bad port at spec.ports[0].port (x.yaml:8)"


def test_format_path():
    assert format_path(["spec", "workerGroupSpecs", 0, "maxReplicas"]) == "spec.workerGroupSpecs[0].maxReplicas"
    assert format_path([]) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a: [1, 2\n", "not valid YAML"), ("- 1\n- 2\n", "must be a mapping")],
)
def test_bad_yaml_is_a_user_error_with_a_line(text, expected):
    with pytest.raises(UserInputError) as caught:
        parse_manifests(text, "bad.yaml")
    (problem,) = caught.value.problems
    assert expected in problem.message and problem.source == "bad.yaml" and problem.line is not None



def test_bad_yaml_keeps_pyyamls_own_message_and_line():
    with pytest.raises(UserInputError) as caught:
        parse_manifests("kind: Service\nmetadata: name: a\n", "bad.yaml")
    (problem,) = caught.value.problems
    assert (problem.message, problem.line) == ("not valid YAML: mapping values are not allowed here", 2)


def test_a_text_is_parsed_once_and_every_caller_gets_its_own_copy(monkeypatch: pytest.MonkeyPatch):
    composed = []
    real = manifests._compose_manifests
    monkeypatch.setattr(manifests, "_compose_manifests", lambda *args: composed.append(args) or real(*args))
    text = TWO_DOCS + "# parsed by this test only\n"
    first, _ = parse_manifests(text, "x.yaml")
    first.body["spec"]["ports"].clear()
    second, _ = parse_manifests(text, "x.yaml")
    assert len(composed) == 1
    assert second.body["spec"]["ports"] == [{"name": "http", "port": 80}] and second.line_of(["spec"]) == 5


def test_plain_yaml_is_a_fresh_copy_each_time():
    first = parse_yaml("ops: [{op: add, value: {a: 1}}]\n", "patch.yaml")
    first["ops"][0]["value"]["a"] = 2
    assert parse_yaml("ops: [{op: add, value: {a: 1}}]\n", "patch.yaml") == {"ops": [{"op": "add", "value": {"a": 1}}]}


def test_bad_plain_yaml_names_its_file_and_line():
    with pytest.raises(UserInputError) as caught:
        parse_yaml("- op: add\n  path: /a\n value: 1\n", "overlay/patch.yaml")
    (problem,) = caught.value.problems
    assert (problem.source, problem.line) == ("overlay/patch.yaml", 3)
    assert problem.message.startswith("not valid YAML: ")
