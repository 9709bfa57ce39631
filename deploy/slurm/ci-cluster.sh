#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for CI and for trying
# the job array by hand: Debian's slurm-wlm and munge, with munged,
# slurmctld and slurmd started directly as daemons (a container has no
# systemd). Idempotent: `start` installs only what is missing, reuses
# daemons that are already up and answer, and waits (bounded) for the node
# to be idle; `stop` ends the daemons it started, by their pid files.
#
#   bash deploy/slurm/ci-cluster.sh start    # install if missing, start, wait for the node
#   bash deploy/slurm/ci-cluster.sh status   # exit 0 when the node takes jobs
#   bash deploy/slurm/ci-cluster.sh stop     # scancel our jobs, stop the daemons
#
# It writes /etc/slurm/slurm.conf only when there is none or when it is the
# one this script wrote (first line below): a machine with a Slurm of its
# own is refused, never reconfigured.
set -euo pipefail

STATE=${FLEETSIM_SLURM_STATE:-/var/lib/fleetsim-ci-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by fleetsim deploy/slurm/ci-cluster.sh"
MUNGE_RUN=/run/munge
WAIT_S=60

log() { echo "ci-cluster: $*" >&2; }
die() {
    log "$*"
    exit 1
}

alive() { # alive PIDFILE NAME: the pid file's process runs and is NAME (not a reused pid)
    [[ -s "$1" ]] || return 1
    local pid
    pid=$(cat "$1")
    kill -0 "$pid" 2>/dev/null && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ]]
}

install_missing() {
    local need=()
    command -v munged >/dev/null || need+=(munge)
    for c in slurmctld slurmd sbatch; do
        command -v "$c" >/dev/null || { need+=(slurm-wlm); break; }
    done
    ((${#need[@]} == 0)) && return 0
    log "installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

write_conf() {
    if [[ -e "$CONF" ]] && [[ "$(head -n 1 "$CONF")" != "$MARK" ]]; then
        die "$CONF exists and is not this script's: a Slurm of this machine's own; not touching it"
    fi
    local cpus mem_mb
    cpus=$(nproc)
    mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 / 2))
    mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d"
    cat >"$CONF.tmp" <<EOF
$MARK
# One node, this machine, on loopback; everything runs as root.
ClusterName=fleetsim-ci
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=ci Nodes=localhost Default=YES MaxTime=60 State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0
    fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        log "creating /etc/munge/munge.key"
        mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p "$MUNGE_RUN" /var/log/munge /var/lib/munge
    chown munge:munge "$MUNGE_RUN" /var/log/munge /var/lib/munge
    chmod 755 "$MUNGE_RUN"
    rm -f "$MUNGE_RUN/munge.socket.2" "$MUNGE_RUN/munged.pid"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 1 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "munged does not answer (see /var/log/munge/munged.log)"
}

node_state() {
    sinfo -h -n localhost -o %T 2>/dev/null | head -n 1
}

up() {
    scontrol ping 2>/dev/null | grep -q 'is UP' && [[ "$(node_state)" =~ ^(idle|mixed|allocated) ]]
}

start() {
    install_missing
    write_conf
    start_munge
    if ! alive "$STATE/slurmctld.pid" slurmctld; then
        # -c: a clean start, no jobs of an earlier run come back.
        slurmctld -c || die "slurmctld did not start: $(tail -n 5 "$STATE/slurmctld.log" 2>/dev/null)"
    fi
    if ! alive "$STATE/slurmd.pid" slurmd; then
        slurmd -N localhost || die "slurmd did not start: $(tail -n 5 "$STATE/slurmd.log" 2>/dev/null)"
    fi
    local deadline=$((SECONDS + WAIT_S))
    while ! up; do
        if ((SECONDS > deadline)); then
            log "slurmctld.log:"
            tail -n 20 "$STATE/slurmctld.log" >&2 || true
            log "slurmd.log:"
            tail -n 20 "$STATE/slurmd.log" >&2 || true
            die "the node is not idle after ${WAIT_S} s (state: $(node_state))"
        fi
        # A node that came back down from an earlier run is resumed.
        [[ "$(node_state)" =~ ^down ]] && scontrol update nodename=localhost state=resume 2>/dev/null || true
        sleep 1
    done
    log "up: $(sinfo -h -o '%P %D %T %c' | head -n 1) ($(sbatch --version))"
}

stop_pid() { # stop_pid PIDFILE NAME
    alive "$1" "$2" || return 0
    local pid
    pid=$(cat "$1")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    log "$2 (pid $pid) did not stop on TERM; killing it"
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    if alive "$STATE/slurmctld.pid" slurmctld; then
        scancel --quiet --partition=ci 2>/dev/null || true
    fi
    stop_pid "$STATE/slurmd.pid" slurmd
    stop_pid "$STATE/slurmctld.pid" slurmctld
    stop_pid "$MUNGE_RUN/munged.pid" munged
    log "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) up ;;
*) die "usage: $0 start|stop|status" ;;
esac
