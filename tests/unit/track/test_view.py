import json

from nerplat.track.view import runs_table_url, runs_view_tag, shared_view_url


def test_the_runs_table_url_asks_for_the_model_training_view_oldest_run_first_and_no_shared_view():
    url = runs_table_url("http://127.0.0.1:5000/", "7")
    assert url == (
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true"
    )
    assert "viewStateShareKey" not in url  # MLflow would show its "You're viewing a shared view" banner


def test_the_shared_view_url_opens_the_view_the_experiment_tag_holds():
    key, _ = runs_view_tag(params=[], metrics=[], tags=[])
    url = shared_view_url("http://127.0.0.1:5000/", "7")
    assert url == "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=nerplat"
    assert key == "mlflow.sharedViewState." + url.rsplit("viewStateShareKey=", 1)[1]


def test_the_view_selects_columns_in_order_wide_enough_for_their_names():
    key, value = runs_view_tag(params=["objective.lambda"], metrics=["test_micro_f1_mean"], tags=["nerplat.status"])
    view = json.loads(value)
    assert key == "mlflow.sharedViewState.nerplat"
    assert view["selectedColumns"] == ["params.`objective.lambda`", "metrics.`test_micro_f1_mean`", "tags.`nerplat.status`"]
    assert view["columnWidths"]["metrics.`test_micro_f1_mean`"] >= 7 * len("test_micro_f1_mean")
    assert (view["orderByKey"], view["orderByAsc"]) == ("attributes.start_time", True)
    assert view["columnOrder"] == view["selectedColumns"]  # MLflow sizes only the columns a view orders
