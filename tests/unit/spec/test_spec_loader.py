import pytest

from nerplat.errors import UserInputError
from nerplat.spec.loader import format_path, parse_document, read_document

TEXT = """\
experiment: demo
train:
  epochs: 3
samplers:
  - untyped
  - low_resource:
      size: [20, 50]
methods:
  mom: {loss: mom}
"""


def parse(text, environ=None):
    return parse_document(text, "x.yaml", environ or {})


def test_every_key_and_item_has_its_line():
    document, problems = parse(TEXT)
    assert problems == []
    lines = {format_path(path): location.line for path, location in document.locations.items()}
    assert lines["train.epochs"] == 3
    assert lines["samplers[0]"] == 5
    assert lines["samplers[1].low_resource.size"] == 7
    assert lines["samplers[1].low_resource.size[1]"] == 7
    assert lines["methods.mom.loss"] == 9


def test_missing_paths_locate_at_their_nearest_ancestor():
    document, _ = parse(TEXT)
    assert document.locate(("methods", "mom", "lambda")) == (9, ("methods", "mom", "lambda"))
    problem = document.problem("missing", ("methods", "mom", "lambda"))
    assert (problem.source, problem.line, problem.path) == ("x.yaml", 9, "methods.mom.lambda")


def test_duplicate_keys_are_reported_with_both_lines():
    document, problems = parse("train:\n  lr: 1.0e-5\n  epochs: 2\n  lr: 3.0e-5\n")
    assert [(p.message, p.line, p.path) for p in problems] == [("duplicate key 'lr' (first defined on line 2)", 4, "train.lr")]
    assert document.data["train"]["lr"] == 3.0e-5


def test_duplicate_top_level_sections_are_reported():
    _, problems = parse("methods: {}\nexperiment: a\nmethods: {}\n")
    assert [(p.line, p.path) for p in problems] == [(3, "methods")]


def test_merge_keys_are_overridden_by_own_keys_without_duplicate_complaints():
    document, problems = parse("x-base: &base {lr: 1, epochs: 2}\ntrain:\n  <<: *base\n  lr: 5\n")
    assert problems == []
    assert document.data["train"] == {"lr": 5, "epochs": 2}
    assert document.locate(("train", "lr"))[0] == 4


def test_interpolated_plain_scalars_take_their_yaml_type():
    document, problems = parse(
        'a: ${N:-3}\nb: "${N:-3}"\nc: ${F}\nd: ${MISSING:-}\ne: ${T}\nf: run-${N:-3}\n', {"F": "1.0e-4", "T": "true"}
    )
    assert problems == []
    assert document.data == {"a": 3, "b": "3", "c": 1.0e-4, "d": None, "e": True, "f": "run-3"}


def test_an_unset_variable_is_a_problem_at_its_line():
    _, problems = parse("experiment: x\ntracking:\n  uri: ${MLFLOW_URI}\n")
    assert [(p.line, p.path) for p in problems] == [(3, "tracking.uri")]
    assert "MLFLOW_URI is not set" in problems[0].message


def test_keys_are_their_source_text():
    document, _ = parse("on: 1\n3: x\nnull: y\n")
    assert document.data == {"on": 1, "3": "x", "null": "y"}


def test_yaml_syntax_errors_stop_with_their_line():
    with pytest.raises(UserInputError) as raised:
        parse("experiment: x\ntrain: {epochs: 3\nmodel: y\n")
    (problem,) = raised.value.problems
    assert problem.message.startswith("invalid YAML")
    assert problem.line == 3


def test_empty_and_unreadable_files_are_user_errors(tmp_path):
    with pytest.raises(UserInputError, match="the spec is empty"):
        parse("# only a comment\n")
    with pytest.raises(UserInputError, match="cannot read the spec"):
        read_document(tmp_path / "absent.yaml")


def test_recursive_aliases_are_refused():
    _, problems = parse("a: &x [1, *x]\n")
    assert any("alias" in p.message for p in problems)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("methods", "mom", "loss"), "methods.mom.loss"),
        (("samplers", 1, "low_resource", "size"), "samplers[1].low_resource.size"),
        (("resources", "custom", "a.b"), "resources.custom['a.b']"),
        ((), ""),
    ],
)
def test_format_path(path, text):
    assert format_path(path) == text
