#!/usr/bin/env bash
# Trains the six chorale models with three seeds each, one run at a time on every core (same data, size, budget
# and recipe), then exports them. Finished runs (train/results/<name>.json) are skipped and an interrupted run
# continues from its checkpoint, so this can be stopped and started again at any time.
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
mkdir -p runs results
for seed in ${SEEDS:-0 1 2}; do
  for m in ${METHODS:-music rope alibi t5 shaw absolute}; do
    if [ ! -f "results/$m-seed$seed.json" ]; then
      $PY train.py --method "$m" --seed "$seed" >> "runs/$m-seed$seed.log" 2>&1
    fi
  done
done
$PY export.py
