import json

from nerplat.track.view import runs_table_url, runs_view_tag


def test_the_runs_table_url_asks_for_the_model_training_view_and_nerplats_columns():
    assert runs_table_url("http://127.0.0.1:5000/", "7") == (
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=nerplat"
    )


def test_the_view_selects_columns_in_order_wide_enough_for_their_names():
    key, value = runs_view_tag(params=["objective.lambda"], metrics=["test_micro_f1_mean"], tags=["nerplat.status"])
    view = json.loads(value)
    assert key == "mlflow.sharedViewState.nerplat"
    assert view["selectedColumns"] == ["params.`objective.lambda`", "metrics.`test_micro_f1_mean`", "tags.`nerplat.status`"]
    assert view["columnWidths"]["metrics.`test_micro_f1_mean`"] >= 7 * len("test_micro_f1_mean")
    assert (view["orderByKey"], view["orderByAsc"]) == ("attributes.start_time", True)
    assert view["columnOrder"] == view["selectedColumns"]  # MLflow sizes only the columns a view orders
