"""Stable names shared by the runner (which writes MLflow runs) and analysis (which reads them).

Changing a name here breaks reading older experiments: add, do not rename.

Metric keys are `<split>_<name>` with split in {dev, test}; names from `nerplat.metrics`:
  micro_precision, micro_recall, micro_f1, macro_precision, macro_recall, macro_f1,
  token_macro_f1, sentence_accuracy, word_accuracy, type_<TYPE>_precision|recall|f1|support
Per-epoch dev metrics are logged with step = epoch; `dev_best_<metric>` is the best so far
(what ASHA and the searcher see). Replicate runs log final test metrics once.
"""

TAG_PREFIX = "nerplat."

# Tags on every nerplat run.
EXPERIMENT = "nerplat.experiment"  # spec experiment name
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
STATUS = "nerplat.status"  # "completed" | "early_stopped" | "failed"

PHASES = ("tune", "replicate", "summary")
KINDS = ("arm", "trial", "replicate", "summary")
STATUSES = ("completed", "early_stopped", "failed")


def metric_key(split: str, name: str) -> str:
    return f"{split}_{name}"


def best_key(split: str, name: str) -> str:
    return f"{split}_best_{name}"
