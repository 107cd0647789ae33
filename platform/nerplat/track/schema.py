"""Stable names shared by the runner (which writes MLflow runs) and analysis (which reads them).

Changing a name here breaks reading older experiments: add, do not rename.

Metric keys are `<split>_<name>` with split in {dev, test}; names from `nerplat.metrics`:
  micro_precision, micro_recall, micro_f1, macro_precision, macro_recall, macro_f1,
  conlleval_micro_precision|recall|f1, token_macro_f1, sentence_accuracy, word_accuracy, type_<TYPE>_precision|recall|f1|support
Per-epoch dev metrics are logged with step = epoch; `dev_best_<metric>` is the best so far
(what ASHA and the searcher see). Replicate runs log final test metrics once; the replicate
phase's arm run logs their mean and sd (`<split>_<name>_mean`, `<split>_<name>_sd`), and the summary
run the headline table's numbers (`analysis/report.py`).
"""

TAG_PREFIX = "nerplat."

# Tags on every nerplat run.
EXPERIMENT = "nerplat.experiment"  # spec experiment name
RUN_KEY = "nerplat.run_key"  # deterministic key, unique in the experiment, that resume looks up (run_keys.py)
SPEC_SHA = "nerplat.spec_sha256"
ARM = "nerplat.arm"  # arm id, e.g. "conll2003/low_resource-100/mom"
PHASE = "nerplat.phase"  # "tune" | "replicate" | "summary"
KIND = "nerplat.kind"  # "arm" (parent) | "trial" | "replicate" | "summary"
DATASET = "nerplat.dataset"
SAMPLER = "nerplat.sampler"  # readable sampler chain, e.g. "untyped+low_resource(size=100)"
SIZE = "nerplat.size"  # training sentences after sampling
METHOD = "nerplat.method"  # method name in the spec
OBJECTIVE = "nerplat.objective"
HEAD = "nerplat.head"
ENCODER = "nerplat.encoder"
SEED = "nerplat.seed"
PARTITION = "nerplat.partition"
TRIAL = "nerplat.trial"  # trial id within its arm's tune phase
SAMPLED = "nerplat.sampled"  # JSON of a tuning trial's searched values (exact types); on tune parents: the chosen ones
# a tuning trial's place in its search's sampling order: the earliest of tied trials is chosen (run/trial_choice.py)
SAMPLE_INDEX = "nerplat.sample_index"
BEST_TRIAL = "nerplat.best_trial"  # "true" on the tuning trial whose configuration its arm chose
RAY_NODE = "nerplat.ray_node"  # the Ray node a trial ran on (its last one, after retries)
MALLOC = "nerplat.malloc"  # the allocator of the trial's worker: tcmalloc | jemalloc | system (run.allocator)
# the arithmetic the trial ran: fp32 | bf16 | fp16 (`train.precision: auto` resolved on its device)
PRECISION = "nerplat.precision"
EVAL_PRECISION = "nerplat.eval_precision"  # the arithmetic of its dev and test forward passes (`train.eval_precision` resolved)
DEVICE = "nerplat.device"  # what the trial computed on: `cpu: <model> x<threads> threads` | `cuda: <GPU name>`
# the vector instructions torch's CPU kernels use there: AVX2 | AVX512 | ... (`trial.device.cpu_capability`)
CPU_CAPABILITY = "nerplat.cpu_capability"
STOPPED_BY = "nerplat.stopped_by"  # why training ended: "patience" (train.early_stopping) | "cap" (train.epochs)
STATUS = "nerplat.status"  # "completed" | "early_stopped" | "failed" | "interrupted"
# replicate runs: JSON {claim id: digest} of the registrations the run served (analysis/registrations.py)
REGISTRATIONS = "nerplat.registrations"
GIT_DIRTY = "nerplat.git_dirty"  # "true" when the nerplat source tree had uncommitted changes
GIT_COMMIT = "mlflow.source.git.commit"  # MLflow's own tag, so the UI shows it
PARENT_RUN = "mlflow.parentRunId"  # MLflow's own tag that nests child runs under their parent

PHASES = ("tune", "replicate", "summary")
KINDS = ("arm", "trial", "replicate", "summary")
# "early_stopped": stopped by the scheduler (ASHA); MLflow alone shows such runs FINISHED.
# "interrupted": stopped by the user (Ctrl-C); MLflow status KILLED, resumed by `--resume`.
STATUSES = ("completed", "early_stopped", "failed", "interrupted")

# Artifacts, at the root of a run's artifact directory.
PLAN_ARTIFACT = "plan.json"  # summary run: the compiled plan
RESOLVED_SPEC_ARTIFACT = "resolved_spec.yaml"  # summary run: the spec after interpolation and defaults
ENVIRONMENT_ARTIFACT = "environment.json"  # summary run: package versions, python, git commit
DATA_CHECKSUMS_ARTIFACT = "data_checksums.json"  # arm runs: {file or split: sha256}
DATA_NOTES_ARTIFACT = "data_notes.txt"  # trial and replicate runs: what the corpus layer and samplers did, a line each
PLUGIN_FILES_ARTIFACT = "plugins.json"  # summary run: the plugin files the run imports, with their sha256
# Replicate runs: one token per line, `TOKEN<TAB>GOLD<TAB>PRED`, a blank line after each sentence.
PREDICTIONS_ARTIFACT = "predictions.conll"

# Parameters that make creating a child by key safe across processes (see track/experiment_tracker.py), one per
# child: `nerplat.child.<generation>:<child key>` = the child's run id. They live on the parent's
# bookkeeping run, out of the experiment people browse (`BOOKKEEPING_RUN`).
CHILD_CLAIM_PREFIX = "nerplat.child."
# Tag of arm and summary runs: the id of their bookkeeping run, in the experiment's companion
# experiment `<experiment> · nerplat bookkeeping`, whose params hold the claims of their children
# (arm runs) or the experiment's lease (summary run). Runs without it keep their own.
BOOKKEEPING_RUN = "nerplat.bookkeeping_run"
BOOKKEEPING_FOR = "nerplat.bookkeeping_for"  # tag of a companion experiment: the experiment it serves


def metric_key(split: str, name: str) -> str:
    return f"{split}_{name}"


def best_key(split: str, name: str) -> str:
    return f"{split}_best_{name}"


def mean_key(metric: str) -> str:
    """An arm run's mean of a replicate metric (`test_micro_f1` -> `test_micro_f1_mean`)."""
    return f"{metric}_mean"


def sd_key(metric: str) -> str:
    """An arm run's sample sd of a replicate metric (`test_micro_f1` -> `test_micro_f1_sd`)."""
    return f"{metric}_sd"
