#!/usr/bin/env bash
# A Slurm test cluster on this machine, for benchrun's Slurm tests (issue 19).
#
#   tests/slurm/cluster.sh install   Debian's slurm-wlm and munge (root; apt-get)
#   tests/slurm/cluster.sh start     munged, slurmctld and three slurmd with a config in $STATE
#   tests/slurm/cluster.sh status    sinfo, or exit 1 when the cluster does not answer
#   tests/slurm/cluster.sh stop      stop the daemons started by `start` (its pid files only)
#   tests/slurm/cluster.sh env       the line to source so that sbatch & co find the config
#
# Nodes: this machine as itself (its name from `hostname -s`, its CPUs and memory from
# `slurmd -C`) in two partitions, `alpha` (the default) and `beta`, so that a fleet of
# two "node types" can be tested on one node; and two more nodes `n1` and `n2` played by
# two more slurmd on this host (1 CPU each in the config) in partition `pair` (both),
# `one` (n1) and `two` (n2), for multi-node jobs. No accounting daemon: job states come
# from `scontrol show job` (MinJobAge keeps finished jobs for an hour).
#
# Several clusters can run side by side; each takes its settings from the environment:
#   BENCHRUN_SLURM_STATE     state directory (default /tmp/benchrun-slurm)
#   BENCHRUN_SLURM_CLUSTER   ClusterName (default benchrun-test)
#   BENCHRUN_SLURM_CTLD_PORT slurmctld's port (default 6817)
#   BENCHRUN_SLURM_PORT      the slurmd of this host's node (default 6818); n1 and n2 take
#                            BENCHRUN_SLURM_N1_PORT / BENCHRUN_SLURM_N2_PORT (default +1, +2)
set -euo pipefail
STATE=${BENCHRUN_SLURM_STATE:-/tmp/benchrun-slurm}
CLUSTER=${BENCHRUN_SLURM_CLUSTER:-benchrun-test}
CTLD_PORT=${BENCHRUN_SLURM_CTLD_PORT:-6817}
NODE_PORT=${BENCHRUN_SLURM_PORT:-6818}
N1_PORT=${BENCHRUN_SLURM_N1_PORT:-$((NODE_PORT + 1))}
N2_PORT=${BENCHRUN_SLURM_N2_PORT:-$((NODE_PORT + 2))}
CONF=$STATE/slurm.conf
HOST=$(hostname -s)
NODES=("$HOST" n1 n2)

install_packages() {
    if command -v slurmctld >/dev/null && command -v munged >/dev/null; then return 0; fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_config() {
    local hw
    hw=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]* //")
    mkdir -p "$STATE"/{ctld,log}
    cat >"$CONF" <<CONF
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmctldPort=$CTLD_PORT
SlurmdPort=$NODE_PORT
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool-%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=3600
KillWait=2
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
MpiDefault=none
NodeName=$HOST Port=$NODE_PORT $hw State=UNKNOWN
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N1_PORT CPUs=1 RealMemory=1000 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N2_PORT CPUs=1 RealMemory=1000 State=UNKNOWN
PartitionName=alpha Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=beta Nodes=$HOST MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=pair Nodes=n1,n2 MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=one Nodes=n1 MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=two Nodes=n2 MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}

start() {
    install_packages
    if ! pgrep -x munged >/dev/null; then
        mkdir -p /run/munge /var/log/munge /var/lib/munge
        chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
        su -s /bin/sh munge -c /usr/sbin/munged
    fi
    stop_daemons
    write_config
    slurmctld -f "$CONF"
    for node in "${NODES[@]}"; do slurmd -N "$node" -f "$CONF"; done
    for _ in $(seq 1 60); do
        if [ "$(SLURM_CONF=$CONF sinfo -h -N -o '%N %T' 2>/dev/null | grep -c idle)" -ge 3 ]; then
            echo "slurm: up ($CONF)"
            return 0
        fi
        sleep 0.5
    done
    echo "slurm: did not come up; see $STATE/log" >&2
    SLURM_CONF=$CONF sinfo -N >&2 || true
    tail -5 "$STATE"/log/*.log >&2 || true
    return 1
}

# The pid of a pid file when that process is still the daemon it names (a pid the
# kernel gave to another process since is left alone).
daemon_pid() {
    local pidfile=$1 daemon=$2 pid
    [ -f "$pidfile" ] || return 1
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$daemon" ] || return 1
    echo "$pid"
}

# Stop the daemons of THIS cluster only: those named by the pid files in $STATE (other
# clusters on this host, with their own state directories, keep running).
stop_daemons() {
    local pids=() pid pidfile
    for pidfile in "$STATE"/slurmd-*.pid "$STATE/slurmd.pid"; do
        if pid=$(daemon_pid "$pidfile" slurmd); then pids+=("$pid"); fi
    done
    if pid=$(daemon_pid "$STATE/slurmctld.pid" slurmctld); then pids+=("$pid"); fi
    [ ${#pids[@]} -gt 0 ] || return 0
    kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 40); do
        local alive=()
        for pid in "${pids[@]}"; do
            if kill -0 "$pid" 2>/dev/null; then alive+=("$pid"); fi
        done
        [ ${#alive[@]} -gt 0 ] || return 0
        sleep 0.25
    done
    kill -9 "${alive[@]}" 2>/dev/null || true
}

case "${1:-}" in
    install) install_packages ;;
    start) start ;;
    stop) stop_daemons; echo "slurm: stopped ($STATE)" ;;
    status) SLURM_CONF=$CONF sinfo ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
