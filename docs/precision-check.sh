#!/usr/bin/env bash
# The paired check before a profile trains in `train.precision: auto` (docs/performance.md):
#   docs/precision-check.sh SPEC PROFILE [WORKDIR] [--set KEY=VALUE ...]
# runs `nerplat run specs/SPEC.yaml --profile PROFILE` twice in WORKDIR (default: a new scratch
# directory), once with --set train.precision=fp32 and once with --set train.precision=auto, as two
# experiments (<experiment>-fp32, <experiment>-auto) of one MLflow store, with the same seeds and
# partitions; then pairs each cell's replicates by seed and partition and prints, per cell, the
# mean difference auto - fp32 of test micro F1 beside the fp32 replicates' sd (`nerplat.bench.precision_check`).
# Exit 0 when every cell's difference lies within that noise, 1 when one does not.
# SPEC may also be a path to a .yaml file, and PROFILE "" for none (as
# tests/integration/docs/test_precision_check_script.py runs a tiny spec).
# Extra --set flags go to both runs (e.g. --set replicate.seeds=2 for a smaller check). The load
# average is printed at the start and the end of each run: on a shared machine the wall times mean little.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
spec=$1
profile=$2
shift 2
case $spec in *.yaml) spec_file=$(realpath "$spec") ;; *) spec_file=$repo/specs/$spec.yaml ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/nerplat-precision-XXXXXX")
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then work=$1; shift; fi
nerplat="$repo/.venv/bin/nerplat"
python="$repo/.venv/bin/python"
experiment=$("$nerplat" plan "$spec_file" ${profile:+--profile "$profile"} "$@" --json \
  | "$python" -c 'import json, sys; print(json.load(sys.stdin)["experiment"])')
for precision in fp32 auto; do
  echo "== $precision: load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
  (cd "$repo" && "$nerplat" run "$spec_file" ${profile:+--profile "$profile"} "$@" --set "experiment=$experiment-$precision" \
    --set "train.precision=$precision" --workdir "$work" --no-analyze)
  echo "== $precision done: load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)"
done
"$python" -m nerplat.bench.precision_check --tracking-uri "sqlite:///$work/mlflow.db" "$experiment-fp32" "$experiment-auto"
