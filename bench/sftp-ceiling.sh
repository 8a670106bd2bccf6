#!/usr/bin/env bash
# sftp-ceiling.sh: OpenSSH's sftp client against two SFTP servers, side by
# side: OpenSSH's own sftp-server and `agent-backend sftp-server`, both
# started by `sftp -D` on the same machine, with the same client options.
#
# Each round transfers a random file (256 MiB by default) with both servers,
# in alternating order: a get (server to local), then a put (local to
# server), each timed on its own by `!date` markers in the sftp batch and
# checked with sha256sum afterwards. It prints MB/s per round and the median
# of the per-round ratios ours/OpenSSH for get and for put.
#
# Environment:
#   BENCH_SCRATCH  scratch directory (default /tmp/agentbe-bench-sftp); removed
#                  and recreated
#   ROUNDS         rounds (default 5)
#   WARMUP         untimed rounds first (default 1): the first transfers
#                  after the files are written run far slower for both
#   SIZE_MIB       file size in MiB (default 256)
#   SFTP_OPTS      extra sftp client options given to both sides, e.g.
#                  "-B 32768 -R 64" (default none: the client's defaults)
#   OPENSSH_SERVER OpenSSH's server (default /usr/lib/openssh/sftp-server)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=${BENCH_SCRATCH:-/tmp/agentbe-bench-sftp}
rounds=${ROUNDS:-5}
warmup=${WARMUP:-1}
size_mib=${SIZE_MIB:-256}
openssh_server=${OPENSSH_SERVER:-/usr/lib/openssh/sftp-server}
read -r -a sftp_opts <<<"${SFTP_OPTS:-}"

for tool in sftp sha256sum go; do
	command -v "$tool" >/dev/null || { echo "sftp-ceiling: $tool not found" >&2; exit 1; }
done
[[ -x $openssh_server ]] || { echo "sftp-ceiling: $openssh_server not found" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch/local" "$scratch/openssh" "$scratch/ours"
bin=$scratch/agent-backend
(cd "$repo" && go build -o "$bin" ./cmd/agent-backend)

src=$scratch/local/src.bin
head -c "$((size_mib << 20))" /dev/urandom >"$src"
want=$(sha256sum <"$src")
cp "$src" "$scratch/openssh/file.bin"
cp "$src" "$scratch/ours/file.bin"
bytes=$((size_mib << 20))

# transfer NAME SERVER_CMD REMOTE_DIR: one get and one put; prints
# "GET_SECONDS PUT_SECONDS". REMOTE_DIR is how the server names its
# directory: an absolute host path for OpenSSH (it serves the whole file
# system), "" (the workspace root) for ours.
transfer() {
	local name=$1 server=$2 remote=$3
	local got=$scratch/local/got-$name.bin put=$scratch/$name/put.bin
	rm -f "$got" "$put"
	sync
	local out
	out=$(sftp -q "${sftp_opts[@]}" -b - -D "$server" <<EOF
!date +%s.%N
get $remote/file.bin $got
!date +%s.%N
put $src $remote/put.bin
!date +%s.%N
EOF
)
	local -a t
	mapfile -t t < <(grep -E '^[0-9]+\.[0-9]+$' <<<"$out")
	if ((${#t[@]} != 3)); then
		echo "sftp-ceiling: $name: unexpected sftp output:" >&2
		echo "$out" >&2
		exit 1
	fi
	[[ $(sha256sum <"$got") == "$want" ]] || { echo "sftp-ceiling: $name: get corrupted the file" >&2; exit 1; }
	[[ $(sha256sum <"$put") == "$want" ]] || { echo "sftp-ceiling: $name: put corrupted the file" >&2; exit 1; }
	rm -f "$got" "$put"
	awk -v a="${t[0]}" -v b="${t[1]}" -v c="${t[2]}" 'BEGIN { printf "%.6f %.6f\n", b - a, c - b }'
}

# mbps SECONDS: throughput in MB/s (10^6 bytes).
mbps() { awk -v s="$1" -v n="$bytes" 'BEGIN { printf "%.1f", n / s / 1e6 }'; }

# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"

ours_cmd="$bin sftp-server --rootDir $scratch/ours"
for ((i = 0; i < warmup; i++)); do
	transfer openssh "$openssh_server" "$scratch/openssh" >/dev/null
	transfer ours "$ours_cmd" "" >/dev/null
done
echo "file ${size_mib} MiB, $rounds rounds after $warmup warm-up, sftp options: ${SFTP_OPTS:-(defaults)}"
printf '%-6s %12s %12s %7s   %12s %12s %7s\n' round "get openssh" "get ours" ratio "put openssh" "put ours" ratio
get_ratios=() put_ratios=()
for ((i = 1; i <= rounds; i++)); do
	# Alternate which server goes first, so drift in the machine's load
	# does not favour one side.
	if ((i % 2)); then
		o=$(transfer openssh "$openssh_server" "$scratch/openssh")
		y=$(transfer ours "$ours_cmd" "")
	else
		y=$(transfer ours "$ours_cmd" "")
		o=$(transfer openssh "$openssh_server" "$scratch/openssh")
	fi
	read -r og op <<<"$o"
	read -r yg yp <<<"$y"
	gr=$(ratio "$og" "$yg")
	pr=$(ratio "$op" "$yp")
	get_ratios+=("$gr") put_ratios+=("$pr")
	printf '%-6s %12s %12s %7s   %12s %12s %7s\n' "$i" "$(mbps "$og")" "$(mbps "$yg")" "$gr" "$(mbps "$op")" "$(mbps "$yp")" "$pr"
done
echo "median ratio ours/openssh: get $(printf '%s\n' "${get_ratios[@]}" | median)  put $(printf '%s\n' "${put_ratios[@]}" | median)"
