import pytest

from nerplat.errors import UserInputError
from nerplat.track.experiment_reader import experiments_to_show, open_client
from nerplat.track.experiment_tracker import ExperimentTracker


def test_experiments_to_show(tracking_uri):
    first = ExperimentTracker.open(tracking_uri, "alpha")
    second = ExperimentTracker.open(tracking_uri, "beta")
    client = open_client(tracking_uri)
    assert experiments_to_show(client, "beta") == [("beta", second.experiment_id)]
    assert experiments_to_show(client, None) == [("alpha", first.experiment_id), ("beta", second.experiment_id)]
    with pytest.raises(UserInputError, match=f"no experiment 'alpah' in {tracking_uri}; did you mean 'alpha'"):
        experiments_to_show(client, "alpah")
