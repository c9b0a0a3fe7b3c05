#!/usr/bin/env bash
# Brings up a one-node SLURM on this host for the SLURM end-to-end tests (tests/e2e/slurm_test.cc):
# installs the Debian packages slurm-wlm and munge (once), creates a munge key, writes /etc/slurm/slurm.conf
# (one node = this host, one partition, no accounting), starts munged, slurmctld and slurmd, and waits until the
# node is idle. Idempotent: when the daemons already answer and the node is usable it only checks and returns.
# Must run as root (or with sudo available). Stop everything with tests/slurm/stop_slurm.sh.
#
# Environment: MMIRAGE_SLURM_DIR (default /var/tmp/mmirage-slurm) holds state, spool, logs and pid files.
set -euo pipefail

BASE="${MMIRAGE_SLURM_DIR:-/var/tmp/mmirage-slurm}"
CONF=/etc/slurm/slurm.conf
MARKER="# written by mmirage tests/slurm/start_slurm.sh"
HOST="$(hostname -s)"
NCPU="$(nproc)"
MEM_MB="$(awk '/MemTotal/ {printf "%d", $2 / 1024 / 2}' /proc/meminfo)"  # half the RAM: leave room for the host
log() { printf '[start_slurm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "must run as root (or with sudo): the SLURM test daemons run as root"
  SUDO="sudo"
fi

# ---- 1. packages --------------------------------------------------------------------------------------------------
missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq || die "apt-get update failed"
  # policy-rc.d 101: the packages must not try to start their services through init (we start them ourselves).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
for b in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || die "$b not found after installing slurm-wlm/munge"
done

# ---- 2. configuration -----------------------------------------------------------------------------------------------
if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
  die "$CONF exists and was not written by this script; refusing to replace a real SLURM configuration"
fi
$SUDO mkdir -p "$BASE/state" "$BASE/spool" "$BASE/log" "$BASE/run" /etc/slurm
NEW_CONF="$(cat <<EOF
$MARKER
ClusterName=mmirage-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/slurmd
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MinJobAge=600
KillWait=5
InactiveLimit=0
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
)"
conf_changed=0
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$NEW_CONF" ]; then
  printf '%s\n' "$NEW_CONF" | $SUDO tee "$CONF" >/dev/null
  conf_changed=1
fi

# ---- 3. munge -------------------------------------------------------------------------------------------------------
MUNGE_KEY=/etc/munge/munge.key
if [ ! -s "$MUNGE_KEY" ]; then
  log "creating a munge key"
  $SUDO mkdir -p /etc/munge
  $SUDO dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
fi
$SUDO mkdir -p /run/munge /var/lib/munge /var/log/munge
if id munge >/dev/null 2>&1; then
  $SUDO chown munge:munge "$MUNGE_KEY" /run/munge /var/lib/munge /var/log/munge /etc/munge
fi
$SUDO chmod 0400 "$MUNGE_KEY"
$SUDO chmod 0700 /etc/munge /var/lib/munge /var/log/munge
$SUDO chmod 0755 /run/munge
alive() { [ -f "$1" ] && $SUDO kill -0 "$(cat "$1")" 2>/dev/null; }
if ! alive /run/munge/munged.pid || ! munge -n </dev/null >/dev/null 2>&1; then
  log "starting munged"
  if id munge >/dev/null 2>&1; then
    $SUDO runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  else
    $SUDO /usr/sbin/munged --force || die "munged did not start (see /var/log/munge/munged.log)"
  fi
fi
for _ in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
munge -n </dev/null | unmunge >/dev/null 2>&1 || die "munge does not work (munge -n | unmunge fails)"

# ---- 4. slurmctld and slurmd ------------------------------------------------------------------------------------
if ((conf_changed)); then
  # A new configuration: restart whatever runs (only our own daemons, found through our pid files).
  for d in slurmd slurmctld; do
    if alive "$BASE/run/$d.pid"; then $SUDO kill "$(cat "$BASE/run/$d.pid")" || true; fi
  done
  sleep 1
fi
if ! alive "$BASE/run/slurmctld.pid"; then
  log "starting slurmctld"
  $SUDO /usr/sbin/slurmctld || die "slurmctld did not start; log: $(tail -n 20 "$BASE/log/slurmctld.log" 2>/dev/null)"
fi
for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q "is UP" && break; sleep 0.2; done
scontrol ping 2>/dev/null | grep -q "is UP" \
  || die "slurmctld does not answer; log: $(tail -n 20 "$BASE/log/slurmctld.log" 2>/dev/null)"
if ! alive "$BASE/run/slurmd.pid"; then
  log "starting slurmd"
  $SUDO /usr/sbin/slurmd || die "slurmd did not start; log: $(tail -n 20 "$BASE/log/slurmd.log" 2>/dev/null)"
fi

# ---- 5. wait for the node -----------------------------------------------------------------------------------------
state=""
for i in $(seq 150); do
  state="$(sinfo -h -n "$HOST" -o %t 2>/dev/null | head -n 1)"
  case "$state" in
    idle|mix|alloc) break ;;
    down*|drain*|drng*|fail*)
      if ((i % 10 == 1)); then $SUDO scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true; fi ;;
  esac
  sleep 0.2
done
case "$state" in
  idle|mix|alloc) log "SLURM is up: node $HOST ($NCPU CPUs) is $state in partition debug" ;;
  *) die "node $HOST is '$state' after 30s; slurmd log: $(tail -n 20 "$BASE/log/slurmd.log" 2>/dev/null)" ;;
esac
