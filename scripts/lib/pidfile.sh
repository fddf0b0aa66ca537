# Sourced by scripts/ensure-docker.sh (and its tests): no side effects when sourced.

# remove_stale_pid FILE PROGRAM
# Remove FILE unless the pid it names is a running process called PROGRAM (its
# /proc/PID/comm). A pid file outlives its daemon when the daemon is killed, or when a
# machine is restored with /var/run kept; by then its pid may belong to another program,
# and dockerd, finding containerd's pid "alive", waits for a containerd that is not there.
# Returns 0 when FILE is gone (or never was), 1 when PROGRAM is running under it.
remove_stale_pid() {
  local file=$1 program=$2 pid name
  [ -e "$file" ] || return 0
  pid=$(head -c 32 "$file" 2>/dev/null | tr -d '[:space:]' || true)
  if [[ "$pid" =~ ^[0-9]+$ ]] && name=$(cat "/proc/$pid/comm" 2>/dev/null) \
      && [ "$name" = "$program" ]; then
    return 1
  fi
  rm -f "$file"
}
