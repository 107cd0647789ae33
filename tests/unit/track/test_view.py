import json

import pytest

from nerplat.track.view import (
    ASSISTANT_OPENED_ONCE,
    REGISTRY_PROMOTION_DISMISSED,
    RUNS_VIEW_TAG,
    WORKFLOW_TYPE,
    browser_script,
    browser_settings,
    experiment_view_key,
    runs_table_url,
    runs_view_tag,
    with_browser_script,
)

MLFLOW_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"/><script defer="defer" src="main.js"></script></head>'
    "<body></body></html>"
)


def test_the_runs_table_url_asks_for_the_model_training_view_oldest_run_first_and_no_shared_view():
    url = runs_table_url("http://127.0.0.1:5000/", "7")
    assert url == (
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true"
    )
    assert "viewStateShareKey" not in url  # MLflow would show its "You're viewing a shared view" banner


def test_the_view_puts_the_metrics_first_each_column_wide_enough_for_its_name():
    key, value = runs_view_tag(params=["objective.lambda"], metrics=["test_micro_f1_mean"], tags=["nerplat.status"])
    view = json.loads(value)
    assert key == "mlflow.sharedViewState.nerplat" == RUNS_VIEW_TAG
    assert view["selectedColumns"] == ["metrics.`test_micro_f1_mean`", "params.`objective.lambda`", "tags.`nerplat.status`"]
    assert view["columnWidths"]["metrics.`test_micro_f1_mean`"] >= 7 * len("test_micro_f1_mean")
    assert (view["orderByKey"], view["orderByAsc"]) == ("attributes.start_time", True)
    assert view["columnOrder"] == view["selectedColumns"]  # MLflow sizes only the columns a view orders


def test_the_browser_gets_the_classic_workflow_no_assistant_no_promotion_and_each_nerplat_view():
    _, view = runs_view_tag(params=[], metrics=["test_micro_f1"], tags=[])
    settings = browser_settings({"3": {RUNS_VIEW_TAG: view}, "4": {"mlflow.note.content": "not nerplat's"}})
    assert settings[WORKFLOW_TYPE[0]] == '"machine_learning"'
    assert settings[ASSISTANT_OPENED_ONCE[0]] == "true" and settings[REGISTRY_PROMOTION_DISMISSED[0]] == "true"
    assert settings[experiment_view_key("3")] == view
    assert experiment_view_key("3") == 'MLflowLocalStorage-1.1-ExperimentPage-["3"]-ReactComponentState'
    assert experiment_view_key("4") not in settings  # an experiment without nerplat's view keeps MLflow's
    assert all(json.loads(value) is not None for value in settings.values())  # MLflow parses each as JSON


def test_the_script_writes_only_what_the_user_left_as_nerplat_wrote_it():
    script = browser_script({"a": '"x"'})
    assert 'if (now === null || now === written[key])' in script
    assert '"nerplat.ui.written"' in script
    assert "toPrecision(4)" in script and r"\d{5,}" in script  # more than four decimals: four significant digits


def test_a_value_cannot_end_the_script_element():
    script = browser_script({"a": json.dumps("</script><script>alert(1)")})
    assert "</script>" not in script


def test_the_script_runs_first_in_mlflows_page():
    page = with_browser_script(MLFLOW_PAGE, {"a": "1"})
    assert page.startswith('<!doctype html><html lang="en"><head><script>(function () {')
    assert page.index(browser_script({"a": "1"})) < page.index('src="main.js"')
    assert page.replace(f"<script>{browser_script({'a': '1'})}</script>", "") == MLFLOW_PAGE


def test_a_page_without_a_head_is_not_mlflows():
    with pytest.raises(ValueError, match="no <head>"):
        with_browser_script("<html><body>a proxy's error page</body></html>", {})
