"""How MLflow's UI shows nerplat's experiments: the model-training view, nerplat's columns, no clutter.

MLflow 3.17's UI keeps most of what it shows in the browser's local storage, not on the server:
which workflow its sidebar and experiment pages follow (`mlflow.workflowType`: GenAI at first, so a
run's page opens with Traces, Judges, Prompts and AI Gateway), whether its assistant panel has
opened itself once (it does on a first visit from 127.0.0.1 or localhost), whether the promotion of
the new model registry was dismissed, and the runs-table view of each experiment (its columns,
their order and widths, the sort) under `MLflowLocalStorage-1.1-ExperimentPage-["<id>"]-ReactComponentState`.
Only a page of the server's own origin can write those, so `nerplat ui` serves MLflow's UI through
a front (`track/ui_front.py`) whose page first runs `browser_script`: it writes `browser_settings`
into the browser's storage before MLflow's scripts read them. A value the user has changed since
nerplat wrote it is kept (the values nerplat wrote last are kept beside them, `nerplat.ui.written`).

The runs view of an experiment is stored on the server too, as the experiment tag
`mlflow.sharedViewState.nerplat` (`runs_view_tag`: the searched hyper-parameters, the tuning
metric, the headline test metric with its mean and sd over replicates, each run's status and
best-trial mark); the front reads it there. MLflow opens the same tag as a "shared view"
(`viewStateShareKey=nerplat`), under a banner saying changes are not saved: nerplat prints no such
URL. Earlier 3.x releases chose an experiment's workflow by its tag `mlflow.experimentKind`, which
nerplat sets when it creates the experiment; 3.17 reads the storage or the URL's `workflowType`.

MLflow's runs table and run page show the stored doubles in full (0.46764639011633724): they have no
number format. The front's script shows a table cell holding a number with more than four decimals
to four significant digits, with the full value as the cell's tooltip; the store keeps them exact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"  # the UI's "Machine learning" kind
# The only tag MLflow's experiment list leaves out (it hides the AI gateway's own experiments);
# nerplat puts it on the experiments people do not browse (its bookkeeping runs').
HIDDEN_EXPERIMENT_TAG = "mlflow.experiment.isGateway"
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."
VIEW_KEY = "nerplat"
RUNS_VIEW_TAG = f"{SHARED_VIEW_TAG_PREFIX}{VIEW_KEY}"
RUNS_TABLE_PARAMETERS = "workflowType=machine_learning&orderByKey=attributes.start_time&orderByAsc=true"

# Local-storage entries (JSON values) that MLflow 3.17's UI reads, and what nerplat gives them. The
# `_v1` suffix is the version MLflow's `useLocalStorage` appends to a key.
WORKFLOW_TYPE = ("mlflow.workflowType_v1", "machine_learning")  # the classic sidebar, runs and models
ASSISTANT_OPENED_ONCE = ("mlflow.assistant.fab.autoOpenedOnFirstLoad_v1", True)  # it opens itself otherwise
ASSISTANT_PANEL_OPEN = ("mlflow.assistant.panelOpen_v1", False)
REGISTRY_PROMOTION_DISMISSED = ("_mlflow_model_registry_promo_modal_dismissed_v1", True)
WRITTEN_KEY = "nerplat.ui.written"
SIGNIFICANT_DIGITS = 4  # of a number with more decimals in a table cell


def runs_table_url(server_url: str, experiment_id: str) -> str:
    """The experiment's runs table in the model-training view, oldest run first (its columns are the
    ones the browser keeps for it: nerplat's, through the front, until the user picks others)."""
    return f"{server_url.rstrip('/')}/#/experiments/{experiment_id}/runs?{RUNS_TABLE_PARAMETERS}"


def runs_view_tag(params: Sequence[str], metrics: Sequence[str], tags: Sequence[str]) -> tuple[str, str]:
    """(experiment tag key, value) of the view that shows these metrics, params and run tags as
    columns after the run names, the metrics first (the headline test metric stays in a 1400-pixel
    window), each wide enough for its name; runs in the order they started."""
    named = [("metrics", key) for key in metrics] + [("params", key) for key in params] + [("tags", key) for key in tags]
    columns = [f"{kind}.`{key}`" for kind, key in named]
    view = {
        "selectedColumns": columns,
        "columnOrder": columns,
        "columnWidths": {column: max(110, 7 * len(key) + 40) for column, (_, key) in zip(columns, named)},
        "orderByKey": "attributes.start_time",
        "orderByAsc": True,
    }
    return RUNS_VIEW_TAG, json.dumps(view)


def experiment_view_key(experiment_id: str) -> str:
    """The local-storage key of the runs-table view MLflow keeps for one experiment."""
    scope = json.dumps([experiment_id], separators=(",", ":"))
    return f"MLflowLocalStorage-1.1-ExperimentPage-{scope}-ReactComponentState"


def browser_settings(experiment_tags: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Local-storage key -> JSON text for a browser opening MLflow's UI: the model-training workflow,
    no assistant panel, no registry promotion, and the runs view of each experiment (id -> its
    tags) that has nerplat's."""
    settings = {
        key: json.dumps(value)
        for key, value in (WORKFLOW_TYPE, ASSISTANT_OPENED_ONCE, ASSISTANT_PANEL_OPEN, REGISTRY_PROMOTION_DISMISSED)
    }
    for experiment_id, tags in sorted(experiment_tags.items()):
        if RUNS_VIEW_TAG in tags:
            settings[experiment_view_key(experiment_id)] = tags[RUNS_VIEW_TAG]
    return settings


# Writes each setting the browser lacks or still holds as nerplat wrote it, then rounds long numbers
# in table cells as MLflow renders them (a MutationObserver: MLflow's tables are React and ag-grid).
_SCRIPT = """(function () {
  var settings = %(settings)s, store = window.localStorage, written;
  try { written = JSON.parse(store.getItem("%(written_key)s") || "{}"); } catch (error) { written = {}; }
  Object.keys(settings).forEach(function (key) {
    var now = store.getItem(key);
    if (now === null || now === written[key]) { store.setItem(key, settings[key]); written[key] = settings[key]; }
  });
  store.setItem("%(written_key)s", JSON.stringify(written));
  var long = /^-?\\d+\\.\\d{%(more)d,}(e[-+]?\\d+)?$/, cells = '[role="gridcell"], [role="cell"], td';
  function round(node) {
    var text = node.nodeValue.trim(), cell = node.parentElement && node.parentElement.closest(cells);
    if (!cell || !long.test(text)) return;
    var shown = String(Number(Number(text).toPrecision(%(digits)d)));
    if (shown === text) return;  // setting it again would be a change to observe, again and again
    node.nodeValue = shown;
    if (!node.parentElement.title) node.parentElement.title = text;
  }
  function visit(node) {
    if (node.nodeType === 3) return round(node);
    var walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT), text;
    while ((text = walker.nextNode())) round(text);
  }
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      if (change.type === "characterData") round(change.target); else change.addedNodes.forEach(visit);
    });
  }).observe(document.documentElement, { subtree: true, childList: true, characterData: true });
})();"""


def browser_script(settings: Mapping[str, str]) -> str:
    """The script (without its tag) that the front's page runs before MLflow's own."""
    literal = json.dumps(dict(settings)).replace("</", "<\\/")  # never ends the <script> element early
    digits = SIGNIFICANT_DIGITS
    return _SCRIPT % {"settings": literal, "written_key": WRITTEN_KEY, "more": digits + 1, "digits": digits}


def with_browser_script(index_html: str, settings: Mapping[str, str]) -> str:
    """MLflow's page with the settings script first in its <head>, before MLflow's scripts."""
    head = index_html.find("<head>")
    if head < 0:
        raise ValueError("MLflow's page has no <head>: is the upstream an MLflow server?")
    at = head + len("<head>")
    return f"{index_html[:at]}<script>{browser_script(settings)}</script>{index_html[at:]}"
