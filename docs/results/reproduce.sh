#!/usr/bin/env bash
# Regenerates one committed report: docs/results/reproduce.sh SPEC [PROFILE]
#   runs `nerplat run specs/SPEC.yaml [--profile PROFILE]` in a scratch working directory and copies
#   its report here (docs/results/SPEC/) with RUN.md: the exact command, commit and wall time.
set -euo pipefail
spec=$1
profile=${2:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
out="$repo/docs/results/$spec"
work=$(mktemp -d "${TMPDIR:-/tmp}/nerplat-results-XXXXXX")
command=(nerplat run "specs/$spec.yaml")
[ -n "$profile" ] && command+=(--profile "$profile")
commit=$(git -C "$repo" rev-parse HEAD)
dirty=$(git -C "$repo" status --porcelain -- platform specs | wc -l)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
begin=$(date +%s)
(cd "$repo" && "$repo/.venv/bin/${command[0]}" "${command[@]:1}" --workdir "$work") | tee "$work/console.txt"
seconds=$(( $(date +%s) - begin ))
rm -rf "$out"
mkdir -p "$out"
cp -r "$work/reports/$spec/." "$out/"
cp "$work/console.txt" "$out/console.txt"
cat > "$out/RUN.md" <<MD
# How this report was made

- command: \`${command[*]}\` (from the repository root; \`docs/results/reproduce.sh $spec${profile:+ $profile}\` reruns it and rewrites this folder)
- commit: \`$commit\`$( [ "$dirty" -gt 0 ] && echo " (with uncommitted changes under platform/ or specs/)" )
- started: $started; wall time: $((seconds / 60)) min $((seconds % 60)) s
- machine: $(nproc) CPU cores, no GPU; NERPLAT_DATA=${NERPLAT_DATA:-unset}
- MLflow store of the run: a scratch directory (not committed); \`console.txt\` is what the command printed
MD
echo "report written to $out"
