#!/usr/bin/env bash
# Stop the Slurm cluster that .ci/slurm/start.sh started: cancel its jobs, then signal exactly the daemons whose pids
# start.sh recorded (never by name), waiting for each to exit. Safe to run twice or after a failed start.
set -uo pipefail

STATE=${SLURM_CI_STATE:-/tmp/slurm-ci}
MARKER="# written by .ci/slurm/start.sh"

if [ -s "$STATE/pids" ] && grep -q '^slurmctld ' "$STATE/pids"; then
    # Jobs still queued or running on the test cluster (a test that failed midway): cancel them while slurmctld lives.
    timeout 10 squeue -h -o %i 2>/dev/null | xargs -r timeout 10 scancel 2>/dev/null || true
fi

# Reverse start order: slurmd, slurmctld, munged.
[ -s "$STATE/pids" ] && tac "$STATE/pids" | while read -r name pid; do
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "stop.sh: $name ($pid) ignored SIGTERM for 10 s; sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
done
rm -f "$STATE/pids"
# Remove the configuration start.sh wrote: with a slurm.conf and no controller, every Slurm client call (and so every
# `snakemake`, whose Slurm plugin runs `scontrol show config` when it is imported) waits about 10 s for a timeout.
for conf in /etc/slurm/slurm.conf /etc/slurm/gres.conf; do
    if [ -f "$conf" ] && grep -qF "$MARKER" "$conf"; then
        rm -f "$conf"
    fi
done
echo "stop.sh: Slurm daemons stopped"
