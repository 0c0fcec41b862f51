#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for benchrun's Slurm tests (issue 19).
#
#   tests/slurm/cluster.sh install   Debian's slurm-wlm and munge (root; apt-get)
#   tests/slurm/cluster.sh start     munged, slurmctld and slurmd with a config in $STATE
#   tests/slurm/cluster.sh status    sinfo, or exit 1 when the cluster does not answer
#   tests/slurm/cluster.sh stop      stop the daemons started by `start`
#   tests/slurm/cluster.sh env       the line to source so that sbatch & co find the config
#
# The node is this machine (its name from `hostname -s`, its CPUs and memory from
# `slurmd -C`), in two partitions, `alpha` (the default) and `beta`, so that a fleet of
# two "node types" can be tested on one node. No accounting daemon: job states come from
# `scontrol show job` (MinJobAge keeps finished jobs for an hour).
set -euo pipefail
STATE=${BENCHRUN_SLURM_STATE:-/tmp/benchrun-slurm}
CONF=$STATE/slurm.conf

install_packages() {
    if command -v slurmctld >/dev/null && command -v munged >/dev/null; then return 0; fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_config() {
    local node
    node=$(hostname -s)
    local hw
    hw=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]* //")
    mkdir -p "$STATE"/{spool,ctld,log}
    cat >"$CONF" <<CONF
ClusterName=benchrun-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=3600
KillWait=2
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
MpiDefault=none
NodeName=$node $hw State=UNKNOWN
PartitionName=alpha Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=beta Nodes=$node MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}

start() {
    install_packages
    write_config
    if ! pgrep -x munged >/dev/null; then
        mkdir -p /run/munge /var/log/munge /var/lib/munge
        chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
        su -s /bin/sh munge -c /usr/sbin/munged
    fi
    stop_daemons
    slurmctld -f "$CONF"
    slurmd -f "$CONF"
    for _ in $(seq 1 60); do
        if SLURM_CONF=$CONF sinfo -h -o %T 2>/dev/null | grep -q idle; then
            echo "slurm: up ($CONF)"
            return 0
        fi
        sleep 0.5
    done
    echo "slurm: did not come up; see $STATE/log" >&2
    tail -5 "$STATE"/log/*.log >&2 || true
    return 1
}

stop_daemons() {
    for pidfile in "$STATE/slurmd.pid" "$STATE/slurmctld.pid"; do
        if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
    done
    for _ in $(seq 1 40); do
        pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || return 0
        sleep 0.25
    done
    pkill -9 -x slurmd || true
    pkill -9 -x slurmctld || true
}

case "${1:-}" in
    install) install_packages ;;
    start) start ;;
    stop) stop_daemons; echo "slurm: stopped" ;;
    status) SLURM_CONF=$CONF sinfo ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
