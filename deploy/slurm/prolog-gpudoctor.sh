#!/bin/bash
# Slurm prolog snippet: record a gpudoctor report on each node when a job starts there.
#
# Install (slurm.conf):  Prolog=/etc/slurm/prolog.d/*   (or call this script from your Prolog)
#   install -m 0755 deploy/slurm/prolog-gpudoctor.sh /etc/slurm/prolog.d/50-gpudoctor.sh
#
# A prolog that exits non-zero DRAINS the node, so this script always exits 0; it only records.
# To take bad nodes out of service, run `gpudoctor fleet` on the collected reports (cron, or the
# sbatch script) and drain the outliers yourself, or use a HealthCheckProgram.
# It runs as root before every job: keep it cheap (no smoke tests, short timeout, at most one
# report per node every GPUDOCTOR_MIN_AGE seconds).

GPUDOCTOR=${GPUDOCTOR:-/opt/gpudoctor/bin/gpudoctor}
GPUDOCTOR_DIR=${GPUDOCTOR_DIR:-/shared/gpudoctor/prolog}
GPUDOCTOR_MIN_AGE=${GPUDOCTOR_MIN_AGE:-3600}

host=$(hostname -s)
out="$GPUDOCTOR_DIR/$host.json"

[ -x "$GPUDOCTOR" ] || exit 0
mkdir -p "$GPUDOCTOR_DIR" 2>/dev/null || exit 0
if [ -f "$out" ]; then
    age=$(( $(date +%s) - $(stat -c %Y "$out" 2>/dev/null || echo 0) ))
    [ "$age" -lt "$GPUDOCTOR_MIN_AGE" ] && exit 0
fi

# -o writes atomically (temporary file + rename): `gpudoctor fleet` never reads a half-written report, and a
# prolog killed mid-check leaves the previous one. --timeout 5 bounds the whole check (a hanging nvcc or
# nvidia-smi is reported, not waited for); the outer timeout is only a last resort.
timeout 20 "$GPUDOCTOR" check --json --no-smoke --timeout 5 -o "$out" 2> "$GPUDOCTOR_DIR/$host.err"
exit 0
