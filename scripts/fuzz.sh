#!/usr/bin/env bash
# Fuzz the scenario loader (libFuzzer through cargo-fuzz) for a bounded time, then report.
#   scripts/fuzz.sh            # 180 seconds
#   FUZZ_SECONDS=3600 scripts/fuzz.sh
# Keeps the minimized corpus in fuzz/corpus/scenario/ and copies any crash into tests/fuzz_regressions/,
# which `cargo test --test fuzz_corpus` replays. cargo-fuzz needs nightly flags: RUSTC_BOOTSTRAP lets the
# machine's stable toolchain accept them; the code is safe Rust, so no sanitizer is used.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-180}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
log=$(mktemp)
status=0
(cd fuzz && cargo fuzz run scenario --sanitizer none -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1) >"$log" 2>&1 || status=$?
(cd fuzz && cargo fuzz cmin scenario --sanitizer none) >/dev/null 2>&1 || true
runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
crashes=0
for f in fuzz/artifacts/scenario/*; do
  [ -f "$f" ] || continue
  cp "$f" tests/fuzz_regressions/ && crashes=$((crashes + 1))
done
echo "fuzzed the scenario loader for ${seconds}s: ${runs} executions, ${crashes} crash file(s), corpus $(ls fuzz/corpus/scenario | wc -l) inputs"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  tail -40 "$log"
  echo "crash inputs copied to tests/fuzz_regressions/ (replayed by cargo test --test fuzz_corpus)"
  exit 1
fi
