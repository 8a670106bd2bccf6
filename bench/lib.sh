# shellcheck shell=bash
# Shared by the bench/*.sh scripts (sourced, not run).

# median: the median of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A / B with three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# run_daemon BIN PORT ROOT TOKEN DIR: starts the full daemon as it ships
# (token, software isolation) on 127.0.0.1:PORT in the background, its host
# key and log (daemon-PORT.log) in DIR, and prints its pid.
run_daemon() {
	"$1" daemon --rootDir "$3" --host 127.0.0.1 --port "$2" --auth-token "$4" --isolation software \
		--ssh-host-key "$5/hostkey" >"$5/daemon-$2.log" 2>&1 &
	echo $!
}

# wait_http URL [CURL_ARGS...]: waits up to 10 s for URL to answer with a
# 2xx status; fails (saying so) if it never does.
wait_http() {
	local url=$1 i
	shift
	for ((i = 0; i < 200; i++)); do
		curl -fs -o /dev/null "$@" "$url" && return 0
		sleep 0.05
	done
	echo "nothing answered at $url" >&2
	return 1
}
