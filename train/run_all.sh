#!/usr/bin/env bash
# Trains the three chorale models side by side (same data, size, steps, seed; one thread each), then exports them.
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
mkdir -p runs
pids=()
for m in music shaw absolute; do
  TRAIN_THREADS=1 OMP_NUM_THREADS=1 $PY train.py --method "$m" > "runs/$m.log" 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
$PY export.py
