"""`replicate.models`: which replicates' taggers become registered MLflow models (default: best)."""

import pytest

from nerplat.errors import UserInputError
from nerplat.plan.compiler import compile_plan

SPEC = """\
experiment: models_option
dataset: conll2003
model: {encoder: tiny, max_length: 64}
methods:
  ce: {loss: ce}
replicate: {seeds: 2%s}
"""


@pytest.mark.parametrize("written, compiled", [("", "best"), (", models: all", "all"), (", models: none", "none")])
def test_the_rule_reaches_the_plan(catalog, write_spec, written, compiled):
    assert compile_plan(write_spec(SPEC % written), catalog).replicate_models == compiled


def test_an_unknown_rule_is_refused_with_its_path_and_line(catalog, write_spec):
    with pytest.raises(UserInputError) as error:
        compile_plan(write_spec(SPEC % ", models: latest"), catalog)
    [problem] = error.value.problems
    assert problem.path == "replicate.models" and problem.line == 6
    assert "'best', 'all' or 'none'" in problem.message
