#!/usr/bin/env bash
# Side by side with the machine's ceiling (issue 14): our MCP server against
# a server that does no work, with the same clients, alternating runs.
#
#   bench/mcp-ceiling.sh stdio [ROUNDS]   2,000 sequential read_text_file over stdio:
#                                         `agent-backend daemon --local-only` vs `mcpbench -stdio -noop`
#                                         and vs the same plus os.ReadFile (`-bareread`)
#   bench/mcp-ceiling.sh http  [ROUNDS]   read_text_file at c=32 (wrk, bench/read-text-file.lua),
#                                         GOMAXPROCS=1 for all: the full daemon (auth) vs `mcpbench -bare`
#                                         and vs `mcpbench -bare -bareread` (the same plus os.ReadFile)
#   bench/mcp-ceiling.sh tails [ROUNDS]   p50/p99 of read_text_file, list_directory and write_file
#                                         at c=32 against the full daemon
#
# It uses the side-by-side harness (BENCH_HARNESS, see bench/README.md: benchtool, wrk + lib/mcp.lua; run
# its `./run.sh setup` once) and prints one line per run plus the median ratio.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
HARNESS="${BENCH_HARNESS:-$REPO/../shared/bench}"
SCRATCH="${BENCH_SCRATCH:-/tmp/agentbe-bench}"
BT="${BENCH_BIN:-/tmp/bench-bin}/benchtool"
TOKEN=bench-token-of-32-bytes-or-more-0123456789
mkdir -p "$SCRATCH"
export BENCH_SCRATCH="$SCRATCH" RESULTS="$SCRATCH/results.jsonl"

die() { echo "mcp-ceiling: $*" >&2; exit 1; }
[ -x "$BT" ] || die "no $BT: run $HARNESS/run.sh setup first"

build() {
  (cd "$REPO" && go build -o "$SCRATCH/agent-backend" ./cmd/agent-backend &&
    go build -o "$SCRATCH/mcpbench" ./internal/cmd/mcpbench)
}

# fixtures ROOT: the files the harness reads (it writes its own over them).
fixtures() {
  mkdir -p "$1/bench/list100" "$1/bench/write"
  for i in $(seq 16); do printf 'line %02d of the 1 KiB read fixture, padded to sixty-four bytes.\n' "$i"; done >"$1/bench/read1k.txt"
  for i in $(seq -f '%03g' 0 99); do echo x >"$1/bench/list100/f$i.txt"; done
}

# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

wait_port() { wait_http "http://127.0.0.1:$1/health" || die "nothing answered on port $1"; }

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# versus LABEL ROUNDS UNIT OURS CEILING READ_CEILING: ROUNDS rounds, each
# calling the three functions named (each prints one rate), in that order;
# prints every round and the median ratios of ours to both ceilings.
versus() {
  local label=$1 rounds=$2 unit=$3 i o c r ratios=() readratios=()
  for ((i = 1; i <= rounds; i++)); do
    o=$("$4"); c=$("$5"); r=$("$6")
    ratios+=("$(ratio "$o" "$c")")
    readratios+=("$(ratio "$o" "$r")")
    printf '%s round %d: ours %.0f %s  ceiling %.0f  ceiling+ReadFile %.0f  ours/ceiling %s  ours/(ceiling+ReadFile) %s\n' \
      "$label" "$i" "$o" "$unit" "$c" "$r" "${ratios[-1]}" "${readratios[-1]}"
  done
  echo "$label median ours/ceiling: $(printf '%s\n' "${ratios[@]}" | median)  ours/(ceiling+ReadFile): $(printf '%s\n' "${readratios[@]}" | median)"
}

cmd_stdio() {
  local root="$SCRATCH/ws-stdio"
  build; fixtures "$root"
  run_stdio() {
    "$BT" stdio -n 2000 -path "$root/bench/read1k.txt" -expect "$root/bench/read1k.txt" -dir "$root" \
      -stderr "$SCRATCH/stdio.log" -- "$@" | jq .ops_per_s
  }
  stdio_ours() { run_stdio "$SCRATCH/agent-backend" daemon --local-only --rootDir "$root"; }
  stdio_noop() { run_stdio "$SCRATCH/mcpbench" -root "$root" -stdio -noop; }
  stdio_noopread() { run_stdio "$SCRATCH/mcpbench" -root "$root" -stdio -noop -bareread; }
  echo "stdio ceiling: mcpbench -stdio -noop"
  versus stdio "${1:-5}" calls/s stdio_ours stdio_noop stdio_noopread
}

# wrk_run PORT ROOT SCENARIO: one 5 s run at c=32, prints the harness's JSON summary.
wrk_run() {
  : >"$RESULTS"
  "$HARNESS/run.sh" mcp-http --url "http://127.0.0.1:$1" --token "$TOKEN" --root "$2" \
    --scenarios "$3" --conc 32 --runs 1 --duration "${DURATION:-5}" >/dev/null 2>>"$SCRATCH/harness.log"
  grep "\"scenario\":\"$3\"" "$RESULTS" | grep '"run":"median"' | tail -1 | grep . ||
    die "no result for $3 on port $1 (see $SCRATCH/harness.log)"
}

start_daemon() { # start_daemon PORT ROOT: run_daemon at GOMAXPROCS=${DAEMON_GOMAXPROCS:-1}
  GOMAXPROCS=${DAEMON_GOMAXPROCS:-1} run_daemon "$SCRATCH/agent-backend" "$1" "$2" "$TOKEN" "$SCRATCH"
}

# plain_rps PORT: req/s of a 5 s wrk run with bench/read-text-file.lua (fails
# on any non-2xx answer or socket error).
plain_rps() {
  local out
  out=$(wrk -t1 -c32 -d"${DURATION:-5}"s -s "$HERE/read-text-file.lua" "http://127.0.0.1:$1/mcp")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then echo "$out" >&2; die "errors on port $1"; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}

# check_body PORT: one request must return the fixture's text.
check_body() {
  curl -fs -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' --data @<(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$HERE/read-text-file.lua") \
    "http://127.0.0.1:$1/mcp" | grep -q "$(head -c 20 "$2/bench/read1k.txt")" || die "port $1 did not return the fixture"
}

cmd_http() {
  local root="$SCRATCH/ws-http" p
  build; fixtures "$root"
  DAEMON=$(start_daemon 3931 "$root")
  GOMAXPROCS=1 "$SCRATCH/mcpbench" -root "$root" -addr 127.0.0.1:3932 -bare >"$SCRATCH/bare.log" 2>&1 &
  BARE=$!
  GOMAXPROCS=1 "$SCRATCH/mcpbench" -root "$root" -addr 127.0.0.1:3933 -bare -bareread >"$SCRATCH/bareread.log" 2>&1 &
  BAREREAD=$!
  trap 'stop $DAEMON; stop $BARE; stop $BAREREAD' EXIT
  for p in 3931 3932 3933; do wait_port "$p"; check_body "$p" "$root"; done
  http_ours() { plain_rps 3931; }
  http_bare() { plain_rps 3932; }
  http_bareread() { plain_rps 3933; }
  echo "http ceiling: mcpbench -bare (all at GOMAXPROCS=1)"
  versus http "${1:-3}" req/s http_ours http_bare http_bareread
}

cmd_tails() {
  local rounds=${1:-3} root="$SCRATCH/ws-tails" s j
  build; fixtures "$root"
  DAEMON=$(start_daemon 3934 "$root")
  trap 'stop $DAEMON' EXIT
  wait_port 3934
  for ((i = 1; i <= rounds; i++)); do
    for s in read_text_file list_directory write_file; do
      j=$(wrk_run 3934 "$root" "$s")
      jq -r --arg s "$s" --argjson i "$i" '"tails round \($i) \($s): \(.ok_rps|floor) req/s  p50 \(.p50_ms) ms  p99 \(.p99_ms) ms  errors \(.errors_total)"' <<<"$j"
    done
  done
}

case "${1:-}" in
  stdio) shift; cmd_stdio "$@" ;;
  http) shift; cmd_http "$@" ;;
  tails) shift; cmd_tails "$@" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
