#!/usr/bin/env bash
# Entrypoint of the agentbe image (docs/daemon.md, "Docker image").
#
#   docker-entrypoint.sh agent-backend daemon [extra flags...]
#       prepare the workspace, run /docker-entrypoint.d/*.sh, translate the
#       environment into flags and exec the daemon (it becomes PID 1);
#   docker-entrypoint.sh anything else...
#       exec it as is.
#
# Environment: WORKSPACE_ROOT, PORT, AUTH_TOKEN, SSH_HOST_KEY, SHELL_TYPE,
# DISABLE_SSH_WS, CONVENTIONAL_SSH, SSH_PORT, SSH_USERS, SSH_PUBLIC_KEY,
# USE_LOCAL_BUILD. AUTH_TOKEN and SSH_USERS are handed over in files (mode
# 0600) through --auth-token-file and --ssh-users-file and removed from the
# environment: secrets in argv would be readable by every process through
# ps. Secrets are never echoed.
#
# AGENTBE_ENTRYPOINT_D, AGENTBE_AUTHORIZED_KEYS, AGENTBE_RUN_DIR and
# AGENTBE_SOURCE_DIR override /docker-entrypoint.d, /keys/authorized_keys,
# /run/agentbe and /app/agent-backend (tests use them).
set -e

init_dir="${AGENTBE_ENTRYPOINT_D:-/docker-entrypoint.d}"
authorized_keys="${AGENTBE_AUTHORIZED_KEYS:-/keys/authorized_keys}"
run_dir="${AGENTBE_RUN_DIR:-/run/agentbe}"
source_dir="${AGENTBE_SOURCE_DIR:-/app/agent-backend}"

log() { printf 'docker-entrypoint: %s\n' "$*" >&2; }

is_true() {
  case "${1,,}" in
    1 | true | yes | on) return 0 ;;
    *) return 1 ;;
  esac
}

run_init_scripts() {
  [ -d "$init_dir" ] || return 0
  local f
  while IFS= read -r -d '' f; do
    case "$f" in
      *.sh)
        if [ -x "$f" ]; then
          log "running $f"
          "$f"
        else
          log "ignoring $f (not executable)"
        fi
        ;;
      *) log "ignoring $f (not a .sh file)" ;;
    esac
  done < <(find "$init_dir" -mindepth 1 -maxdepth 1 -print0 | sort -z -V)
}

# dev_loop rebuilds the daemon from $source_dir and restarts it whenever a
# Go source file changes (USE_LOCAL_BUILD=1).
dev_loop() {
  local bin="$run_dir/agent-backend-dev" stamp="$run_dir/dev-stamp" pid=""
  mkdir -p "$run_dir"
  chmod 700 "$run_dir"
  trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait; exit 0' TERM INT
  while true; do
    touch "$stamp"
    if (cd "$source_dir" && go build -o "$bin" ./cmd/agent-backend); then
      "$bin" daemon "${args[@]}" &
      pid=$!
    else
      log "build failed; waiting for a change"
    fi
    while [ -z "$(find "$source_dir" -name '*.go' -newer "$stamp" -print -quit)" ]; do
      if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then pid=""; fi
      sleep 1
    done
    log "change detected: rebuilding"
    if [ -n "$pid" ]; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" || true
      pid=""
    fi
  done
}

if [ "$1" = "agent-backend" ] && [ "$2" = "daemon" ]; then
  shift 2
  workspace="${WORKSPACE_ROOT:-/var/workspace}"
  mkdir -p "$workspace"
  chmod 755 "$workspace"

  run_init_scripts

  args=(--rootDir "$workspace" --port "${PORT:-3001}")
  if [ -n "${AUTH_TOKEN:-}" ] || [ -n "${SSH_USERS:-}" ]; then
    mkdir -p "$run_dir"
    chmod 700 "$run_dir"
  fi
  if [ -n "${AUTH_TOKEN:-}" ]; then
    (umask 077 && printf '%s\n' "$AUTH_TOKEN" >"$run_dir/auth-token")
    args+=(--auth-token-file "$run_dir/auth-token")
    unset AUTH_TOKEN
  fi
  [ -n "${SSH_HOST_KEY:-}" ] && args+=(--ssh-host-key "$SSH_HOST_KEY")
  [ -n "${SHELL_TYPE:-}" ] && args+=(--shell "$SHELL_TYPE")
  if is_true "${DISABLE_SSH_WS:-false}"; then args+=(--disable-ssh-ws); fi
  if is_true "${CONVENTIONAL_SSH:-false}"; then args+=(--conventional-ssh); fi
  [ -n "${SSH_PORT:-}" ] && args+=(--ssh-port "$SSH_PORT")
  if [ -n "${SSH_USERS:-}" ]; then
    (umask 077 && printf '%s\n' "$SSH_USERS" >"$run_dir/ssh-users")
    args+=(--ssh-users-file "$run_dir/ssh-users")
  fi
  [ -n "${SSH_PUBLIC_KEY:-}" ] && args+=(--ssh-public-key "$SSH_PUBLIC_KEY")
  [ -f "$authorized_keys" ] && args+=(--ssh-authorized-keys "$authorized_keys")
  unset SSH_USERS
  args+=("$@")

  cd "$workspace"
  if [ "${USE_LOCAL_BUILD:-0}" = "1" ] && [ -d "$source_dir" ]; then
    if command -v go >/dev/null 2>&1; then
      log "USE_LOCAL_BUILD=1: running from $source_dir with rebuild on change"
      dev_loop
    fi
    log "USE_LOCAL_BUILD=1 needs a Go toolchain in the image; running the installed daemon"
  fi
  exec agent-backend daemon "${args[@]}"
fi

exec "$@"
