#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine for tests/test_slurm.py: Debian's slurm-wlm and munge, one node
# named after `hostname` with a fake GPU (gres gpu:fake:1 on /dev/fakegpu0), no accounting database.
# Needs root (a CI container). Writes the daemons' pids to $SLURM_CI_STATE/pids; .ci/slurm/stop.sh stops exactly those.
# Refuses to touch an /etc/slurm/slurm.conf it did not write, so it never reconfigures a real cluster.
set -euo pipefail

STATE=${SLURM_CI_STATE:-/tmp/slurm-ci}
CLUSTER=vocabci # tests/test_slurm.py only submits to a cluster of this name
MARKER="# written by .ci/slurm/start.sh"

if [ "$(id -u)" != 0 ]; then
    echo "start.sh: needs root (installs packages, writes /etc/slurm, runs slurmd)" >&2
    exit 1
fi
if [ -s "$STATE/pids" ]; then
    while read -r name pid; do
        if kill -0 "$pid" 2>/dev/null; then
            echo "start.sh: $name ($pid) of an earlier start is still running; run .ci/slurm/stop.sh first" >&2
            exit 1
        fi
    done <"$STATE/pids"
    rm -f "$STATE/pids" # left by a machine that went down with the daemons
fi
if [ -e /etc/slurm/slurm.conf ] && ! grep -qF "$MARKER" /etc/slurm/slurm.conf; then
    echo "start.sh: /etc/slurm/slurm.conf was not written by this script; refusing to replace it" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null \
    || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge
fi

mkdir -p "$STATE" /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/log/munge \
    /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

# The fake GPU: any character device will do, slurmd only checks that the file exists.
[ -e /dev/fakegpu0 ] || mknod /dev/fakegpu0 c 1 3

HOST=$(hostname)
CPUS=$(nproc)
# Leave the OS some memory; job --mem requests above RealMemory are rejected at submission.
MEM=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)

# MinJobAge: finished jobs stay visible to squeue (the executor's status command here) and to `scontrol show job`
# (the test's evidence) for an hour; there is no accounting database for sacct.
# The executor's job step strips SLURM_CONF, so the default path /etc/slurm/slurm.conf is required.
cat >/etc/slurm/slurm.conf <<EOF
$MARKER
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MinJobAge=3600
# proctrack/linuxproc follows parent links: a process whose parent died (a trainer whose rule shell died of a time
# limit's SIGTERM) is no longer the job's, and its SIGKILL misses it; tests/test_slurm.py ends that one itself. Real
# clusters use proctrack/cgroup, which a container here cannot; proctrack/pgid ends such a job FAILED, not TIMEOUT.
ProctrackType=proctrack/linuxproc
# KillWait: seconds between SIGTERM and SIGKILL at a job's time limit (default 30); tests/test_slurm.py waits them out
# once, for a LAPT job that holds until Slurm kills it.
KillWait=5
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
GresTypes=gpu
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM Gres=gpu:fake:1 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
cat >/etc/slurm/gres.conf <<EOF
$MARKER
NodeName=$HOST Name=gpu Type=fake File=/dev/fakegpu0
EOF

# Foreground daemons started in the background: $! is the daemon itself, so stop.sh can signal it by pid.
nohup setpriv --reuid=munge --regid=munge --init-groups munged --foreground --log-file="$STATE/munged.log" >"$STATE/munged.out" 2>&1 &
MUNGED=$!
echo "munged $MUNGED" >"$STATE/pids"
for _ in $(seq 50); do
    munge -n </dev/null >/dev/null 2>&1 && break
    sleep 0.1
done
munge -n </dev/null >/dev/null || { echo "start.sh: munged did not start, see $STATE/munged.log" >&2; exit 1; }

# -c: a clean start, ignoring jobs saved by an earlier run.
nohup slurmctld -D -c >"$STATE/slurmctld.out" 2>&1 &
echo "slurmctld $!" >>"$STATE/pids"
nohup slurmd -D >"$STATE/slurmd.out" 2>&1 &
echo "slurmd $!" >>"$STATE/pids"

START=$(date +%s%N)
for _ in $(seq 300); do
    if [ "$(sinfo -h -N -o %T 2>/dev/null)" = idle ]; then
        echo "start.sh: Slurm cluster $CLUSTER is up on $HOST ($CPUS CPUs, ${MEM} MB, gres gpu:fake:1)" \
            "in $((($(date +%s%N) - START) / 1000000)) ms; pids in $STATE/pids"
        exit 0
    fi
    sleep 0.1
done
echo "start.sh: the node did not become idle in 30 s; sinfo says: $(sinfo -N 2>&1)" >&2
tail -n 20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
exit 1
