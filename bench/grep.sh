#!/usr/bin/env bash
# Side by side (issue 24): the pure-Go grep (internal/grep, run as a whole
# process by internal/cmd/grepbench) against ripgrep run directly, on a
# reproducible 100,000-file source-like tree, alternating, several
# patterns and output modes. Prints wall time, CPU time (user+sys) and peak
# RSS of both per round, the medians and the ratio ours/rg; each round
# checks that both found the same lines (sorted). Then the small-tree case:
# one in-process search against spawning rg per call, as the reference
# does (through bash, and directly).
#
#   bench/grep.sh [ROUNDS] [FILES]
#
# Needs rg (apt-get install -y ripgrep) and GNU time (/usr/bin/time).
# The tree is kept in $BENCH_SCRATCH (default /tmp/agentbe-bench-grep)
# between runs; delete it to regenerate.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
SCRATCH="${BENCH_SCRATCH:-/tmp/agentbe-bench-grep}"
ROUNDS=${1:-3} FILES=${2:-100000}
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

die() { echo "grep: $*" >&2; exit 1; }
command -v rg >/dev/null || die "no rg: apt-get install -y ripgrep"
[ -x /usr/bin/time ] || die "no /usr/bin/time: apt-get install -y time"
mkdir -p "$SCRATCH"
(cd "$REPO" && go build -o "$SCRATCH/grepbench" ./internal/cmd/grepbench)
TREE="$SCRATCH/tree-$FILES"
if [ ! -f "$TREE/.done" ]; then
  rm -rf "$TREE"
  "$SCRATCH/grepbench" -gen "$TREE" -files "$FILES" -seed 1
  touch "$TREE/.done"
fi
cd "$TREE"
# Warm the page cache so both sides read from memory.
rg -uuu -c zzzz-not-there . >/dev/null || true

RG=(rg --color=never --no-heading --with-filename)
# name | rg flags | grepbench flags | pattern
CASES=(
  "literal files|-l|-l|ErrTimeout"
  "literal content|-n|-n|ErrTimeout"
  "literal count (common)|-c|-c|return"
  "case-insensitive files|-i -l|-i -l|errtimeout"
  "regex with literal|-c|-c|func \\w+Close\\w*\\("
  "regex no literal|-c|-c|[A-Z][a-z]+[0-9]{3}"
)

# measure OUT CMD...: runs CMD with stdout to OUT; prints "wall cpu rss_kb".
measure() {
  local out=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$SCRATCH/time" "$@" >"$out" 2>/dev/null || true
  tail -1 "$SCRATCH/time" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }'
}

printf '%-26s %8s %8s %8s | %8s %8s %8s | %6s %6s\n' case rg-wall rg-cpu rg-MB ours-wall ours-cpu ours-MB wall× cpu×
for c in "${CASES[@]}"; do
  IFS='|' read -r name rgf ourf pat <<<"$c"
  rw=() rc=() rm=() ow=() oc=() om=()
  for ((i = 1; i <= ROUNDS; i++)); do
    # shellcheck disable=SC2086
    read -r w cpu kb < <(measure "$SCRATCH/rg.out" "${RG[@]}" $rgf -- "$pat" .)
    rw+=("$w") rc+=("$cpu") rm+=("$kb")
    # shellcheck disable=SC2086
    read -r w cpu kb < <(measure "$SCRATCH/ours.out" "$SCRATCH/grepbench" $ourf "$pat" .)
    ow+=("$w") oc+=("$cpu") om+=("$kb")
    sort "$SCRATCH/rg.out" >"$SCRATCH/rg.sorted"
    sed '/^No matches found$/d' "$SCRATCH/ours.out" | sort >"$SCRATCH/ours.sorted"
    cmp -s "$SCRATCH/rg.sorted" "$SCRATCH/ours.sorted" || die "$name: outputs differ (see $SCRATCH/rg.sorted, $SCRATCH/ours.sorted)"
  done
  mrw=$(printf '%s\n' "${rw[@]}" | median) mrc=$(printf '%s\n' "${rc[@]}" | median)
  mow=$(printf '%s\n' "${ow[@]}" | median) moc=$(printf '%s\n' "${oc[@]}" | median)
  mrm=$(printf '%s\n' "${rm[@]}" | median) mom=$(printf '%s\n' "${om[@]}" | median)
  printf '%-26s %8s %8s %8.1f | %8s %8s %8.1f | %6s %6s\n' "$name" "$mrw" "$mrc" "$(ratio "$mrm" 1024)" \
    "$mow" "$moc" "$(ratio "$mom" 1024)" "$(ratio "$mow" "$mrw")" "$(ratio "$moc" "$mrc")"
done

# Small tree: what one tool call costs. The reference spawns
# `bash -c "rg ... || [ $? -eq 1 ]"` per call; ours is a function call.
SMALL="$SCRATCH/small"
rm -rf "$SMALL" && mkdir -p "$SMALL/src/sub"
for i in $(seq 1 20); do
  printf 'package x\n\nfunc F%d() error {\n\treturn ErrTimeout\n}\n' "$i" >"$SMALL/src/f$i.go"
  printf 'nothing here %d\n' "$i" >"$SMALL/src/sub/n$i.txt"
done
N=200
cd "$SMALL"
start=$(date +%s%N)
for ((i = 0; i < N; i++)); do bash -c "rg --color=never --no-heading --with-filename -l -- ErrTimeout src || [ \$? -eq 1 ]" >/dev/null; done
bash_us=$((($(date +%s%N) - start) / 1000 / N))
start=$(date +%s%N)
for ((i = 0; i < N; i++)); do rg --color=never --no-heading --with-filename -l -- ErrTimeout src >/dev/null || true; done
rg_us=$((($(date +%s%N) - start) / 1000 / N))
ours_us=$("$SCRATCH/grepbench" -repeat 2000 -l ErrTimeout src 2>&1 >/dev/null | awk '{print $1}')
echo
echo "small tree (40 files), one files_with_matches call:"
echo "  bash -c rg (the reference's way): ${bash_us} us/call"
echo "  rg spawned directly:              ${rg_us} us/call"
echo "  ours, in process:                 ${ours_us} us/call"
