#!/bin/bash
# bench-sftp-d.sh BIN [SIZE_MIB] [RUNS]
#
# Side-by-side throughput of OpenSSH's `sftp -D` client against OpenSSH's
# /usr/lib/openssh/sftp-server and against `BIN sftp-server --rootDir`,
# the way the side-by-side harness (bench/README.md) measures OpenSSH: one
# `get` or `put` of a SIZE_MIB file per batch, wall time around the sftp
# process, runs interleaved, median reported. Then the peak RSS
# (/usr/bin/time %M = VmHWM) of each server during one get and one put.
set -euo pipefail
BIN=$(realpath "$1"); SIZE=${2:-256}; RUNS=${3:-9}
OSSH=/usr/lib/openssh/sftp-server
S=$(mktemp -d /tmp/sftp-bench.XXXXXX); trap 'rm -rf "$S"' EXIT
mkdir "$S/ws"; head -c $((SIZE << 20)) /dev/urandom >"$S/src.bin"; cp "$S/src.bin" "$S/ws/big.bin"
line() { [ "$1" = get ] && echo "get big.bin $S/dl.bin" || echo "put $S/src.bin up.bin"; }
server() { [ "$1" = openssh ] && echo "$OSSH" || echo "$BIN sftp-server --rootDir $S/ws"; }
one() { # one SERVER DIR -> MiB/s
  rm -f "$S/dl.bin" "$S/ws/up.bin"; line "$2" >"$S/batch"
  local t0 t1; t0=$(date +%s.%N)
  (cd "$S/ws" && sftp -q -b "$S/batch" -D "$(server "$1")" >/dev/null)
  t1=$(date +%s.%N)
  if [ "$2" = get ]; then cmp -s "$S/src.bin" "$S/dl.bin"; else cmp -s "$S/src.bin" "$S/ws/up.bin"; fi || { echo "content mismatch: $1 $2" >&2; exit 1; }
  awk -v a="$t1" -v b="$t0" -v n="$SIZE" 'BEGIN { printf "%.0f\n", n / (a - b) }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for dir in get put; do
  : >"$S/openssh.$dir"; : >"$S/ours.$dir"
  for ((r = 1; r <= RUNS; r++)); do one openssh $dir >>"$S/openssh.$dir"; one ours $dir >>"$S/ours.$dir"; done
  o=$(median <"$S/openssh.$dir"); u=$(median <"$S/ours.$dir")
  echo "$dir ${SIZE} MiB: OpenSSH sftp-server $o MiB/s, agent-backend $u MiB/s ($((100 * u / o))%)  runs: openssh $(tr '\n' ' ' <"$S/openssh.$dir")| ours $(tr '\n' ' ' <"$S/ours.$dir")"
done
for who in openssh ours; do
  for dir in get put; do
    line $dir >"$S/batch"; rm -f "$S/dl.bin" "$S/ws/up.bin"
    (cd "$S/ws" && sftp -q -b "$S/batch" -D "/usr/bin/time -o $S/rss -f %M $(server $who)" >/dev/null)
    echo "peak RSS $who $dir: $(cat "$S/rss") KiB"
  done
done
