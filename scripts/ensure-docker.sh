#!/usr/bin/env bash
# Make sure a Docker daemon answers, with runsc (gVisor) registered as a runtime.
#
# - A daemon that already answers is used as it is: nothing is changed.
# - Otherwise, as root on Debian/Ubuntu: install Debian's docker.io and runsc,
#   register runsc with --network=none and --oci-seccomp, and start dockerd
#   with --bridge=none --iptables=false --ip6tables=false, waiting (bounded)
#   until it answers. A stale pid file (dockerd's or its containerd's) is removed;
#   a second daemon is never started.
# - Neither possible: one line that says what to install, exit 2.
#
# Idempotent, and quick (one API ping) when the daemon is already up.
set -euo pipefail

DOCKER_WAIT_SECONDS="${SANDBOX_AGENT_DOCKER_WAIT_SECONDS:-60}"
DAEMON_JSON=/etc/docker/daemon.json
DAEMON_LOG=/var/log/sandbox-agent-dockerd.log
PID_FILE=/var/run/docker.pid
CONTAINERD_PID_FILE=/var/run/docker/containerd/containerd.pid

say() { printf 'ensure-docker: %s\n' "$*" >&2; }
die() { printf 'ensure-docker: %s\n' "$*" >&2; exit 2; }

daemon_answers() {
  # Speak the daemon's own API version: the client in /usr/local/bin can be newer.
  DOCKER_API_VERSION=1.41 timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

runsc_registered() {
  DOCKER_API_VERSION=1.41 timeout 5 docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'
}

if command -v docker >/dev/null 2>&1 && daemon_answers; then
  if ! runsc_registered; then
    say "note: the running daemon has no 'runsc' runtime; runc works, runsc tests will fail (register runsc with runtimeArgs [\"--network=none\", \"--oci-seccomp\"])"
  fi
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  die "no Docker daemon answers and this is not root: start Docker (or run 'sudo make test'), then try again"
fi
if ! command -v apt-get >/dev/null 2>&1; then
  die "no Docker daemon answers and this host has no apt-get: install and start Docker (with runsc registered), then try again"
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v runsc >/dev/null 2>&1 || need+=(runsc)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || die "apt-get update failed: check the package mirror, then try again"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || die "apt-get install ${need[*]} failed: install them by hand, then try again"
fi

# Register runsc. Without --network=none every start fails (and leaks its
# shim); without --oci-seccomp gVisor ignores the container's seccomp profile.
mkdir -p /etc/docker
python3 - "$DAEMON_JSON" "$(command -v runsc)" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
config = {}
if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    config = json.loads(text) if text else {}
want = {"path": runsc, "runtimeArgs": ["--network=none", "--oci-seccomp"]}
runtimes = config.setdefault("runtimes", {})
if runtimes.get("runsc") != want:
    runtimes["runsc"] = want
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
PY

# A daemon killed with its session leaves its pid file behind, and the next dockerd
# refuses to start until it is gone; containerd's, naming a pid another program has
# taken since (a machine restored with /var/run kept), makes dockerd wait for a
# containerd that is not there. Each is removed only when stale.
. "$(dirname "${BASH_SOURCE[0]}")/lib/pidfile.sh"
if ! remove_stale_pid "$PID_FILE" dockerd; then
  say "dockerd (pid $(cat "$PID_FILE")) is running but not answering yet; waiting for it"
fi
remove_stale_pid "$CONTAINERD_PID_FILE" containerd || true

if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd (--bridge=none --iptables=false --ip6tables=false)"
  nohup setsid dockerd --bridge=none --iptables=false --ip6tables=false \
    >"$DAEMON_LOG" 2>&1 </dev/null &
fi

for _ in $(seq 1 "$DOCKER_WAIT_SECONDS"); do
  if daemon_answers; then
    runsc_registered || die "dockerd answers but has no 'runsc' runtime: restart dockerd so it reads $DAEMON_JSON"
    exit 0
  fi
  sleep 1
done
die "dockerd did not answer within ${DOCKER_WAIT_SECONDS}s: see $DAEMON_LOG (raise SANDBOX_AGENT_DOCKER_WAIT_SECONDS if the host is slow)"
