#!/usr/bin/env bash
# Tests docker-entrypoint.sh against a stub agent-backend: exact argv,
# environment translation, init-script ordering and ignored files, the
# token and the SSH users handed over in files (never in argv or the
# daemon's environment), set -e, and exec of other commands.
# Run: bash docker/entrypoint_test.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
entrypoint="$here/../docker-entrypoint.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  failures=$((failures + 1))
}

expect_eq() { # name got want
  if [ "$2" != "$3" ]; then
    fail "$1"$'\n'"  got:  $(printf '%q' "$2")"$'\n'"  want: $(printf '%q' "$3")"
  fi
}

# The stub records its argv (one per line, %q-quoted), cwd and selected
# environment, then exits 0.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/agent-backend" <<'STUB'
#!/usr/bin/env bash
out="$STUB_OUT"
: >"$out/argv"
for a in "$@"; do printf '%q\n' "$a" >>"$out/argv"; done
pwd >"$out/cwd"
printf '%s|%s\n' "${AUTH_TOKEN-unset}" "${SSH_USERS-unset}" >"$out/env"
STUB
chmod +x "$tmp/bin/agent-backend"

# run_case NAME [VAR=value ...] -- ARGS...: runs the entrypoint with a
# clean environment plus the variables.
run_case() {
  local name="$1"
  shift
  local vars=()
  while [ "$1" != "--" ]; do
    vars+=("$1")
    shift
  done
  shift
  out="$tmp/$name"
  mkdir -p "$out"
  env -i PATH="$tmp/bin:/usr/bin:/bin" STUB_OUT="$out" \
    AGENTBE_ENTRYPOINT_D="$tmp/$name.d" AGENTBE_AUTHORIZED_KEYS="$tmp/$name.keys" \
    AGENTBE_RUN_DIR="$tmp/$name.run" AGENTBE_SOURCE_DIR="$tmp/no-source" \
    "${vars[@]}" bash "$entrypoint" "$@" >"$out/stdout" 2>"$out/stderr"
}

argv_of() { tr '\n' ' ' <"$tmp/$1/argv" | sed 's/ $//'; }

# 1. Defaults: only the workspace and the port.
run_case defaults WORKSPACE_ROOT="$tmp/ws1" -- agent-backend daemon
expect_eq "defaults argv" "$(argv_of defaults)" "daemon --rootDir $tmp/ws1 --port 3001"
expect_eq "defaults cwd" "$(cat "$tmp/defaults/cwd")" "$tmp/ws1"
expect_eq "workspace mode" "$(stat -c %a "$tmp/ws1")" "755"
expect_eq "defaults env" "$(cat "$tmp/defaults/env")" "unset|unset"

# 2. Every variable, values with spaces, extra args appended, init scripts.
mkdir -p "$tmp/full.d"
for f in 10-second.sh 9-first.sh 100-third.sh; do
  printf '#!/bin/sh\necho %s >>"%s"\n' "$f" "$tmp/order" >"$tmp/full.d/$f"
  chmod +x "$tmp/full.d/$f"
done
printf '#!/bin/sh\necho never >>"%s"\n' "$tmp/order" >"$tmp/full.d/50-disabled.sh"
echo "not a script" >"$tmp/full.d/README.txt"
echo "ssh-ed25519 AAAA key" >"$tmp/full.keys"
# The literal $x checks that the token is not expanded anywhere.
# shellcheck disable=SC2016
run_case full WORKSPACE_ROOT="$tmp/ws 2" PORT=4000 AUTH_TOKEN='t0k en$x' SSH_HOST_KEY=/keys/host \
  SHELL_TYPE=sh DISABLE_SSH_WS=true CONVENTIONAL_SSH=1 SSH_PORT=2222 SSH_USERS='a:b c,d:e' \
  SSH_PUBLIC_KEY='ssh-ed25519 AAAA me@x' -- agent-backend daemon --isolation 'bwrap' "extra arg"
want=(daemon --rootDir "$tmp/ws 2" --port 4000 --auth-token-file "$tmp/full.run/auth-token"
  --ssh-host-key /keys/host --shell sh --disable-ssh-ws --conventional-ssh --ssh-port 2222
  --ssh-users-file "$tmp/full.run/ssh-users" --ssh-public-key 'ssh-ed25519 AAAA me@x'
  --ssh-authorized-keys "$tmp/full.keys" --isolation bwrap "extra arg")
expect_eq "full argv" "$(argv_of full)" "$(printf '%q\n' "${want[@]}" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "full cwd" "$(cat "$tmp/full/cwd")" "$tmp/ws 2"
# shellcheck disable=SC2016
expect_eq "token file" "$(cat "$tmp/full.run/auth-token")" 't0k en$x'
expect_eq "token file mode" "$(stat -c %a "$tmp/full.run/auth-token")" "600"
expect_eq "users file" "$(cat "$tmp/full.run/ssh-users")" 'a:b c,d:e'
expect_eq "users file mode" "$(stat -c %a "$tmp/full.run/ssh-users")" "600"
expect_eq "secrets not inherited" "$(cat "$tmp/full/env")" "unset|unset"
expect_eq "init order" "$(tr '\n' ' ' <"$tmp/order")" "9-first.sh 10-second.sh 100-third.sh "
grep -q "ignoring .*50-disabled.sh (not executable)" "$tmp/full/stderr" || fail "non-executable script not logged"
grep -q "ignoring .*README.txt (not a .sh file)" "$tmp/full/stderr" || fail "non-.sh file not logged"
if grep -rq 't0k en' "$tmp/full/stderr" "$tmp/full/stdout" "$tmp/full/argv"; then fail "token echoed or in argv"; fi
if grep -rq 'a:b c' "$tmp/full/stderr" "$tmp/full/stdout" "$tmp/full/argv"; then fail "password echoed or in argv"; fi

# 3. False-ish booleans add nothing.
run_case falsy WORKSPACE_ROOT="$tmp/ws3" DISABLE_SSH_WS=false CONVENTIONAL_SSH=no -- agent-backend daemon
expect_eq "falsy argv" "$(argv_of falsy)" "daemon --rootDir $tmp/ws3 --port 3001"

# 4. set -e: a failing init script stops the container before the daemon.
mkdir -p "$tmp/failing.d"
printf '#!/bin/sh\nexit 7\n' >"$tmp/failing.d/01-fail.sh"
chmod +x "$tmp/failing.d/01-fail.sh"
if run_case failing WORKSPACE_ROOT="$tmp/ws4" -- agent-backend daemon; then fail "failing init script ignored"; fi
[ -s "$tmp/failing/argv" ] && fail "daemon started after a failing init script"

# 5. Any other command is exec'd as is.
run_case other -- printf '%s|' "a b" c
expect_eq "other command" "$(cat "$tmp/other/stdout")" "a b|c|"
run_case notdaemon WORKSPACE_ROOT="$tmp/ws5" -- agent-backend --version
expect_eq "agent-backend without daemon" "$(argv_of notdaemon)" "--version"

# 6. USE_LOCAL_BUILD=1: build from the source dir, restart on a change,
# stop on SIGTERM. A stub `go` "builds" a script that records its start.
mkdir -p "$tmp/src/cmd/agent-backend" "$tmp/gobin"
echo 'package main' >"$tmp/src/cmd/agent-backend/main.go"
cat >"$tmp/gobin/go" <<'GO'
#!/usr/bin/env bash
# go build -o OUT ./cmd/agent-backend
out="$3"
printf '#!/usr/bin/env bash\necho "$*" >>"%s/dev-starts"\nexec sleep 300\n' "$STUB_OUT" >"$out"
chmod +x "$out"
GO
chmod +x "$tmp/gobin/go"
mkdir -p "$tmp/dev"
env -i PATH="$tmp/gobin:/usr/bin:/bin" STUB_OUT="$tmp/dev" USE_LOCAL_BUILD=1 WORKSPACE_ROOT="$tmp/ws6" \
  AGENTBE_RUN_DIR="$tmp/dev.run" AGENTBE_SOURCE_DIR="$tmp/src" AGENTBE_ENTRYPOINT_D="$tmp/none.d" \
  bash "$entrypoint" agent-backend daemon --x >"$tmp/dev/stdout" 2>"$tmp/dev/stderr" &
dev_pid=$!
wait_lines() { # file n
  for _ in $(seq 100); do
    [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
wait_lines "$tmp/dev/dev-starts" 1 || fail "dev build never started: $(cat "$tmp/dev/stderr")"
sleep 1.1 # the stamp has a one-second resolution on some file systems
touch "$tmp/src/cmd/agent-backend/main.go"
wait_lines "$tmp/dev/dev-starts" 2 || fail "no restart after a change"
expect_eq "dev argv" "$(head -1 "$tmp/dev/dev-starts")" "daemon --rootDir $tmp/ws6 --port 3001 --x"
kill -TERM "$dev_pid"
dev_rc=0
wait "$dev_pid" || dev_rc=$?
expect_eq "dev loop exit on SIGTERM" "$dev_rc" "0"

# 7. USE_LOCAL_BUILD=1 without a Go toolchain: the installed daemon runs.
mkdir -p "$tmp/nogo"
env -i PATH="$tmp/bin:/usr/bin:/bin" STUB_OUT="$tmp/nogo" USE_LOCAL_BUILD=1 WORKSPACE_ROOT="$tmp/ws7" \
  AGENTBE_RUN_DIR="$tmp/nogo.run" AGENTBE_SOURCE_DIR="$tmp/src" AGENTBE_ENTRYPOINT_D="$tmp/none.d" \
  bash "$entrypoint" agent-backend daemon >"$tmp/nogo/stdout" 2>"$tmp/nogo/stderr" || fail "no-go run failed"
if [ -x /usr/bin/go ] || [ -x /bin/go ]; then
  fail "a Go toolchain in /usr/bin or /bin: the no-Go case cannot be set up"
else
  expect_eq "no go: installed daemon" "$(argv_of nogo)" "daemon --rootDir $tmp/ws7 --port 3001"
  grep -q "needs a Go toolchain" "$tmp/nogo/stderr" || fail "no-go case not logged"
fi

if [ "$failures" -gt 0 ]; then
  printf '%d failure(s)\n' "$failures" >&2
  exit 1
fi
echo "entrypoint: all tests passed"
