#!/usr/bin/env bash
# Regenerates one committed report: docs/results/reproduce.sh SPEC [PROFILE] [WORKDIR | --continue]
#   runs `nerplat run specs/SPEC.yaml [--profile PROFILE]` in a scratch working directory and copies
#   its report here with RUN.md: the exact command, commit and wall time. The report of a spec's
#   `cpu` profile (or of no profile) goes to docs/results/SPEC/, any other profile's to
#   docs/results/SPEC-PROFILE/, so a spec's profiles keep their reports side by side.
#   With WORKDIR (the scratch directory of a run that stopped, printed when it does), the run
#   resumes there with --resume: finished trials are kept, failed or missing ones run again.
#   Arguments after WORKDIR go to `nerplat run`: `--rerun-changed` resumes after the spec changed,
#   running anew only the arms whose runs the change alters.
# A registered study split between sessions: a run that stops after a look with looks left (given
#   `--through-look K`) keeps its scratch store beside the report, store.tar.gz (what a resume reads:
#   python -m nerplat.track.store_archive), and RUN.md says so; a run that reaches its design's end
#   keeps none. `--continue` in WORKDIR's place unpacks that store into a fresh scratch directory and
#   resumes it there, in this session or on a fresh machine:
#     docs/results/reproduce.sh SPEC PROFILE "" --through-look 1
#     docs/results/reproduce.sh SPEC PROFILE --continue --through-look 2
set -euo pipefail
spec=$1
profile=${2:-}
resume_from=${3:-}
shift $(( $# < 3 ? $# : 3 ))
repo=$(cd "$(dirname "$0")/../.." && pwd)
folder=$spec
case "$profile" in ""|cpu) ;; *) folder="$spec-$profile" ;; esac
out="$repo/docs/results/$folder"
kept="$out/store.tar.gz"  # the store of a run stopped with looks left
if [ "$resume_from" = --continue ]; then  # the earlier looks' runs as MLflow recorded them, in a fresh directory
  [ -f "$kept" ] || { echo "--continue: no $kept (kept by a run stopped with looks left)" >&2; exit 2; }
  resume_from=$(mktemp -d "${TMPDIR:-/tmp}/nerplat-results-XXXXXX")
  "$repo/.venv/bin/python" -m nerplat.track.store_archive unpack "$kept" "$resume_from"
  cp "$out/console.txt" "$resume_from/console.txt"  # it goes on holding every attempt
fi
work=${resume_from:-$(mktemp -d "${TMPDIR:-/tmp}/nerplat-results-XXXXXX")}
resumed=""
[ -n "$resume_from" ] && [ -e "$resume_from/mlflow.db" ] && resumed=1  # a WORKDIR without a store starts afresh
command=(nerplat run "specs/$spec.yaml")
[ -n "$profile" ] && command+=(--profile "$profile")
[ -n "$resumed" ] && command+=(--resume)
command+=("$@")
commit=$(git -C "$repo" rev-parse HEAD)
# The prediction before the run (`nerplat plan --cost`: from the scratch store's earlier runs when
# resuming, else a short calibration on this machine), every run counted at its epoch cap.
plan=(nerplat plan "specs/$spec.yaml" --cost --json --tracking-uri "sqlite:///$work/mlflow.db")
[ -n "$profile" ] && plan+=(--profile "$profile")
(cd "$repo" && "$repo/.venv/bin/${plan[0]}" "${plan[@]:1}" >"$work/plan-cost.json" 2>"$work/plan-cost.err") || true
predicted=$("$repo/.venv/bin/python" -c 'import json, sys; print("%.1f min" % (json.load(sys.stdin)["cost"]["wall_s"] / 60))' \
  <"$work/plan-cost.json" || echo "none (nerplat plan --cost failed: see plan-cost.err in the scratch folder)")
# The experiment's name from the plan alone (no calibration), so it is known when the cost step fails.
experiment=$(cd "$repo" && "$repo/.venv/bin/nerplat" plan "specs/$spec.yaml" --json ${profile:+--profile "$profile"} \
  | "$repo/.venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["experiment"])' || true)
dirty=$(git -C "$repo" status --porcelain -- platform specs | wc -l)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
capability=$("$repo/.venv/bin/python" -c 'import torch; print(torch.backends.cpu.get_cpu_capability())')
cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
begin=$(date +%s)
status=0
# stderr too: a run that dies (Ray's memory monitor, a traceback) says why in console.txt
(cd "$repo" && "$repo/.venv/bin/${command[0]}" "${command[@]:1}" --workdir "$work" 2>&1) | tee "$work/this-run.txt" | tee -a "$work/console.txt" || status=$?
if [ "$status" -ne 0 ]; then
  echo "the run stopped (exit $status); nothing was copied. Resume it with:" >&2
  echo "  docs/results/reproduce.sh $spec ${profile:-\"\"} $work" >&2
  exit "$status"
fi
seconds=$(( $(date +%s) - begin ))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
# The arithmetic the runs recorded and this host's calibration behind `auto` (the run's first lines
# measured or read it), with the runs that ran the arithmetic it measured slower.
precision=$("$repo/.venv/bin/python" -m nerplat.estimate.precision_used --tracking-uri "sqlite:///$work/mlflow.db" \
  "$experiment" 2>&1 || echo "- precision used: not read (python -m nerplat.estimate.precision_used failed)")
# `nerplat run` prints this line when --through-look stopped the design before its end.
stopped_after=$(sed -n 's/^stopped after look \([0-9]*\) by --through-look:.*/\1/p' "$work/this-run.txt")
rm -rf "$out"  # a stale store.tar.gz too
mkdir -p "$out"
cp -r "$work/reports/$spec/." "$out/"
cp "$work/console.txt" "$out/console.txt"
store="- MLflow store of the run: a scratch directory (not committed); \`console.txt\` is what the command printed"
if [ -n "$stopped_after" ]; then
  "$repo/.venv/bin/python" -m nerplat.track.store_archive pack "$work" "$kept"
  store="- stopped after look $stopped_after with looks left: its MLflow store is \`store.tar.gz\` (\`docs/results/reproduce.sh $spec ${profile:-\"\"} --continue --through-look $((stopped_after + 1))\` continues it); \`console.txt\` is what the command printed"
fi
cat > "$out/RUN.md" <<MD
# How this report was made

- command: \`${command[*]}\` (from the repository root; \`docs/results/reproduce.sh $spec${profile:+ $profile}\` reruns it and rewrites this folder)
- commit: \`$commit\`$( [ "$dirty" -gt 0 ] && echo " (with uncommitted changes under platform/ or specs/)" )
- started: $started; wall time: $((seconds / 60)) min $((seconds % 60)) s$( [ -n "$resumed" ] && echo " (this resumed run only; console.txt holds every attempt)" )
- machine: $(nproc) CPU cores ($cpu_model), no GPU; torch CPU capability: $capability; NERPLAT_DATA=${NERPLAT_DATA:-unset}
- predicted before the run: $predicted (\`${plan[*]}\`, every run at its epoch cap: early stopping can only shorten it)
$precision
- load average (1, 5, 15 min) at the start: $load_start; at the end: $load_end (on 2 cores a load above 2 means other work shared the machine)
$store
MD
echo "report written to $out"
