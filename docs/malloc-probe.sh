#!/usr/bin/env bash
# The measurement behind nerplat/run/allocator.py (docs/performance.md, "Trial workers' malloc"):
#   docs/malloc-probe.sh [EPOCHS] [SPEC] [PROFILE]   (defaults: 6, specs/mom_mrc.yaml, cpu)
# For each malloc, one tuning trial of the spec's first tuned arm runs through an embedded Ray
# (`nerplat run --tune-only`, one trial at a time); the trial worker's RSS is sampled every 10 s,
# and its cumulative training and evaluation seconds are read back from MLflow. Run it alone:
# the settings take turns, so their times are comparable with each other, not with a busy machine.
# jemalloc needs Debian's libjemalloc2 (`apt-get install libjemalloc2`); without it that row runs on glibc.
# MALLOC_PROBE_SETTINGS=N runs only the first N settings and MALLOC_PROBE_INTERVAL the seconds between
# RSS samples (default 10): tests/integration/docs/test_malloc_probe.py runs two on a tiny spec so.
set -euo pipefail
epochs=${1:-6}
spec=$(realpath "${2:-specs/mom_mrc.yaml}")
profile=${3-cpu}  # "" for a spec without profiles
repo=$(cd "$(dirname "$0")/.." && pwd)
nerplat="$repo/.venv/bin/nerplat"
python="$repo/.venv/bin/python"
# name, then the environment the driver (and so every Ray process) starts with
settings=(
  "tcmalloc (nerplat's default)|"
  "glibc|LD_PRELOAD="
  "glibc, MALLOC_ARENA_MAX=1|LD_PRELOAD= MALLOC_ARENA_MAX=1"
  "glibc, MALLOC_ARENA_MAX=2|LD_PRELOAD= MALLOC_ARENA_MAX=2"
  "jemalloc|LD_PRELOAD=libjemalloc.so.2"
  "jemalloc, decay 60 s|LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=background_thread:true,dirty_decay_ms:60000,muzzy_decay_ms:60000"
  "tcmalloc, aggressive decommit|TCMALLOC_AGGRESSIVE_DECOMMIT=true"
)
settings=("${settings[@]:0:${MALLOC_PROBE_SETTINGS:-${#settings[@]}}}")
interval=${MALLOC_PROBE_INTERVAL:-10}
# The trial's worker among the driver's descendants (its embedded Ray's raylet starts the workers).
trial_worker() {
  local children child found
  children=$(pgrep -P "$1" || true)
  for child in $children; do
    if grep -q "^ray::ImplicitFunc" "/proc/$child/cmdline" 2>/dev/null; then echo "$child"; return; fi
    found=$(trial_worker "$child")
    if [ -n "$found" ]; then echo "$found"; return; fi
  done
  return 0
}
printf '%-32s %10s %10s %12s %12s\n' malloc "peak RSS" "last RSS" "train s" "eval s"
for setting in "${settings[@]}"; do
  name=${setting%%|*}
  read -r -a env_vars <<< "${setting#*|}"
  work=$(mktemp -d "${TMPDIR:-/tmp}/nerplat-malloc-XXXXXX")
  env ${env_vars[@]+"${env_vars[@]}"} "$nerplat" run "$spec" ${profile:+--profile "$profile"} --workdir "$work" \
    --tune-only --no-analyze --set "train.epochs=$epochs" --set tune.num_samples=1 --set tune.max_concurrent=1 \
    > "$work/console.txt" 2>&1 &
  driver=$!
  peak=0 last=0
  while kill -0 "$driver" 2>/dev/null; do
    worker=$(trial_worker "$driver")
    if [ -n "$worker" ]; then
      last=$(ps -o rss= --pid "$worker" || echo 0)
      [ "${last:-0}" -gt "$peak" ] && peak=$last
    fi
    sleep "$interval"
  done
  wait "$driver" || { echo "$name: the run failed, see $work/console.txt" >&2; exit 1; }
  times=$("$python" - "$work/mlflow.db" <<'PY'
import sqlite3, sys
rows = dict(sqlite3.connect(sys.argv[1]).execute(
    "select key, max(value) from metrics where key in ('time_train_s', 'time_eval_s') group by key"))
print(f"{rows.get('time_train_s', 0):.1f} {rows.get('time_eval_s', 0):.1f}")
PY
)
  read -r train evaluate <<< "$times"
  printf '%-32s %8.2f GB %8.2f GB %12s %12s\n' "$name" \
    "$(echo "$peak / 1048576" | bc -l)" "$(echo "$last / 1048576" | bc -l)" "$train" "$evaluate"
  rm -rf "$work"
done
