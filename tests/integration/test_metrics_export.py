"""nerplat's metrics beside Ray's on the embedded Ray's Prometheus endpoint, during a real run, and a real
Prometheus (Debian's `prometheus`, on 127.0.0.1, started and stopped here) that scrapes it and answers
every query of the Grafana dashboards in dashboards/grafana/.

One tiny tune-only run serves every check. Ray reports metrics every second here instead of every
10 s (`RAY_metrics_report_interval_ms`), so short trials' series reach the endpoint while they run.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from grafana_dashboards import dashboard_files, load, metric_names, targets, with_variables
from host_load import scaled
from nerplat_processes import SPEC, finish, nerplat
from prometheus_server import get, get_json, running_prometheus

from nerplat.run.exported_metrics import DEFINITIONS, TRIAL_DEV_SCORE, TRIAL_EPOCH_SECONDS, TRIAL_TOKENS_PER_SECOND, TRIALS
from nerplat.loopback import free_port

pytestmark = pytest.mark.slow

ARM = "conll2003/low_resource-40/mom"  # the tiny spec's one arm with a search space
# Every dashboard variable set to "All", as Grafana sends it; $__range is the dashboard's time range.
ALL = {"experiment": ".*", "arm": ".*", "phase": ".*", "node": ".*", "__range": "1h"}


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A Prometheus of our own scraping 127.0.0.1:<port> every second: (its URL, the port it scrapes)."""
    scraped = free_port()
    config = {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [{"job_name": "ray", "static_configs": [{"targets": [f"127.0.0.1:{scraped}"]}]}],
    }
    with running_prometheus(config, tmp_path / "prometheus") as url:
        yield url, scraped


def scrape_while_running(driver: subprocess.Popen, port: int, timeout: float = 600) -> dict[str, list]:
    """Every sample of the endpoint's metric families, scraped each half second until the driver exits."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, list] = {}
    deadline = time.monotonic() + scaled(timeout)
    while driver.poll() is None:
        assert time.monotonic() < deadline, "the run did not end"
        try:
            text = get(f"http://127.0.0.1:{port}/metrics")
        except OSError:  # Ray is still starting, or already stopping
            text = ""
        for family in text_string_to_metric_families(text):
            samples.setdefault(family.name, []).extend(family.samples)
        time.sleep(0.5)
    return samples


def prometheus_query(url: str, expr: str, start: float, end: float) -> list:
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": 2})
    try:
        answer = get_json(f"{url}/api/v1/query_range?{query}")
    except urllib.error.HTTPError as error:  # 400 for a query Prometheus cannot parse or run
        pytest.fail(f"{expr}: {error.read().decode()}")
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_a_run_exports_nerplat_metrics_beside_rays_and_prometheus_answers_the_dashboards(tmp_path: Path, prometheus):
    url, port = prometheus
    started = time.time()
    driver = nerplat(
        "run", str(SPEC), "--workdir", str(tmp_path), "--tune-only", "--no-analyze", "--metrics-port", str(port),
        # A tiny epoch takes under 0.1 s here: 20 of them keep each trial running over several of Ray's
        # 1 s reports, so a running trial is scraped; once trials end, the run holds their series for
        # Prometheus (`keeping the final metrics exported`). One trial at a time: one trial worker.
        "--set", "train.epochs=20", "--set", "tune.scheduler=fifo", "--set", "tune.max_concurrent=1",
        "--progress-every", "60",
        workdir=tmp_path, env={"RAY_metrics_report_interval_ms": "1000"},
    )
    scraped = scrape_while_running(driver, port)
    code, output = finish(driver)
    assert code == 0, output
    assert f"Prometheus metrics at http://127.0.0.1:{port}/metrics" in output
    assert "no longer exported" not in output  # Ray's metrics API took every series nerplat recorded

    # The endpoint: nerplat's metrics with their arm tags, next to Ray's own.
    assert {d.exported_name for d in DEFINITIONS} <= set(scraped), sorted(scraped)
    nodes = {sample.labels["ip"] for sample in scraped["ray_node_cpu_utilization"]}
    counts = [s for s in scraped[TRIALS.exported_name] if s.labels["arm"] == ARM and s.labels["phase"] == "tune"]
    assert {s.labels["experiment"] for s in counts} == {"tiny_run"}
    assert max(s.value for s in counts if s.labels["state"] == "running") >= 1
    # The run held its last values before Ray stopped with it, so its end state was scraped too.
    assert "keeping the final metrics exported" in output
    final = {s.labels["state"]: s.value for s in counts}  # each state's last scraped value
    assert (final["finished"], final["running"]) == (3, 0), final
    scores = scraped[TRIAL_DEV_SCORE.exported_name]
    assert scores and all(s.labels["arm"] == ARM and s.labels["metric"] == "micro_f1" and 0 <= s.value <= 1 for s in scores)
    assert {s.labels["trial"] for s in scores} <= {"t0000", "t0001", "t0002"}
    for definition in (TRIAL_TOKENS_PER_SECOND, TRIAL_EPOCH_SECONDS):
        samples = scraped[definition.exported_name]
        assert samples and all(s.value > 0 and s.labels["arm"] == ARM for s in samples), definition.name
        assert {s.labels["node"] for s in samples} <= nodes  # the GPU dashboard joins nerplat's node with Ray's ip

    # Prometheus stored them, and every dashboard query runs; nerplat's panels and the CPU panel have data.
    ended = time.time()
    stored = prometheus_query(url, f'{TRIALS.exported_name}{{state="running"}}', started, ended)
    assert {series["metric"]["arm"] for series in stored} == {ARM}
    for path in dashboard_files():
        for title, target in targets(load(path)):
            result = prometheus_query(url, with_variables(target["expr"], ALL), started, ended)
            names = metric_names(target["expr"])
            if any(name.startswith("ray_nerplat_") for name in names) or "ray_node_cpu_utilization" in names:
                assert result, f"{path.name}: {title}: no data for {target['expr']}"
