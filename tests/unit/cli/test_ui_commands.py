from nerplat.cli.ui_commands import _print_urls


def test_each_experiment_gets_its_runs_table_and_no_shared_view_link(capsys):
    """nerplat's columns come with the page (track/ui_front.py), so no shared-view link, whose banner
    MLflow shows, is printed."""
    _print_urls("http://127.0.0.1:5000/", [("quickstart", "3")])
    assert capsys.readouterr().out.splitlines() == [
        "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true",
        "  (quickstart)",
    ]


def test_a_store_without_nerplat_experiments_gets_the_experiments_list(capsys):
    _print_urls("http://127.0.0.1:5000", [])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["http://127.0.0.1:5000/#/experiments", "  (no nerplat experiment in this store yet)"]
