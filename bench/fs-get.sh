#!/usr/bin/env bash
# Side by side (issue 10): GET of one file through /v1/fs/file from our
# daemon (full mode, token, software isolation) and from the sandbox-agent
# 0.4.2 binary (npm ci --prefix interop), alternating, with a client that
# does almost nothing (internal/cmd/getbench), so the servers set the pace.
# Prints MiB/s per run, each server's peak RSS, and the median ratio.
#
#   bench/fs-get.sh [ROUNDS] [SIZE_MIB]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
SCRATCH="${BENCH_SCRATCH:-/tmp/agentbe-bench-get}"
ROUNDS=${1:-5} SIZE_MIB=${2:-64} TOKEN=bench-token-of-32-bytes-or-more-0123456789
SA="$REPO/interop/node_modules/@sandbox-agent/cli-linux-x64/bin/sandbox-agent"
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

die() { echo "fs-get: $*" >&2; exit 1; }
[ -f "$SA" ] || die "no sandbox-agent binary: npm ci --prefix interop"
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH/ours" "$SCRATCH/sa"
(cd "$REPO" && go build -o "$SCRATCH/agent-backend" ./cmd/agent-backend && go build -o "$SCRATCH/getbench" ./internal/cmd/getbench)
cp "$SA" "$SCRATCH/sandbox-agent" && chmod +x "$SCRATCH/sandbox-agent"
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$SCRATCH/ours/big.bin"
cp "$SCRATCH/ours/big.bin" "$SCRATCH/sa/big.bin"

OURS=$(run_daemon "$SCRATCH/agent-backend" 3961 "$SCRATCH/ours" "$TOKEN" "$SCRATCH")
(cd "$SCRATCH/sa" && HOME="$SCRATCH/sa" exec "$SCRATCH/sandbox-agent" server --no-token --no-telemetry -H 127.0.0.1 -p 3962) >"$SCRATCH/sa.log" 2>&1 &
THEIRS=$!
trap 'kill $OURS $THEIRS 2>/dev/null; wait 2>/dev/null || true' EXIT
for p in 3961 3962; do
  wait_http "http://127.0.0.1:$p/v1/health" -H "Authorization: Bearer $TOKEN" || die "port $p did not start"
done

ours_url="http://127.0.0.1:3961/v1/fs/file?path=big.bin"
sa_url="http://127.0.0.1:3962/v1/fs/file?path=$SCRATCH/sa/big.bin"
ratios=()
for ((i = 1; i <= ROUNDS; i++)); do
  o=$("$SCRATCH/getbench" -H "Authorization: Bearer $TOKEN" "$ours_url" | awk '{print $1}')
  s=$("$SCRATCH/getbench" "$sa_url" | awk '{print $1}')
  ratios+=("$(ratio "$o" "$s")")
  echo "get round $i: ours $o MiB/s  sandbox-agent $s MiB/s  ratio ${ratios[-1]}"
done
hwm() { awk '/VmHWM/ {printf "%d MiB", $2 / 1024}' "/proc/$1/status"; }
echo "peak RSS: ours $(hwm "$OURS")  sandbox-agent $(hwm "$(pgrep -P $THEIRS -f sandbox-agent || echo $THEIRS)")"
echo "get median ratio ours/sandbox-agent: $(printf '%s\n' "${ratios[@]}" | median)"
