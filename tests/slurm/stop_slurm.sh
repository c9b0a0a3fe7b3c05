#!/usr/bin/env bash
# Stops the one-node SLURM started by tests/slurm/start_slurm.sh: slurmd, slurmctld and munged, each through its
# own pid file (never by name). Jobs still queued are cancelled first. Safe to run when nothing runs.
set -uo pipefail

BASE="${MMIRAGE_SLURM_DIR:-/var/tmp/mmirage-slurm}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
log() { printf '[stop_slurm] %s\n' "$*" >&2; }

if [ -f /etc/slurm/slurm.conf ] && ! grep -qF "# written by mmirage tests/slurm/start_slurm.sh" /etc/slurm/slurm.conf; then
  log "/etc/slurm/slurm.conf was not written by start_slurm.sh; leaving SLURM alone"
  exit 0
fi
command -v scancel >/dev/null 2>&1 && $SUDO scancel --quiet --full --user="$(id -un)" >/dev/null 2>&1 || true

stop_pidfile() {  # name pidfile
  local pf="$2"
  [ -f "$pf" ] || return 0
  local pid; pid="$(cat "$pf")"
  if [ -n "$pid" ] && $SUDO kill -0 "$pid" 2>/dev/null; then
    log "stopping $1 (pid $pid)"
    $SUDO kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do $SUDO kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if $SUDO kill -0 "$pid" 2>/dev/null; then $SUDO kill -9 "$pid" 2>/dev/null || true; fi
  fi
  $SUDO rm -f "$pf"
}
stop_pidfile slurmd "$BASE/run/slurmd.pid"
stop_pidfile slurmctld "$BASE/run/slurmctld.pid"
stop_pidfile munged /run/munge/munged.pid
exit 0
