#!/usr/bin/env bash
# Fuzz the scenario, atlas, model and chorale data loaders (libFuzzer through cargo-fuzz) for a bounded time per target, then report.
#   scripts/fuzz.sh            # 180 seconds per target
#   FUZZ_SECONDS=3600 scripts/fuzz.sh
# Targets (fuzz/fuzz_targets/): scenario, any bytes as a dropped or passed file; atlas, any bytes as a head
# atlas (an atlas that reads draws its grid, its HTML and its heads' charts, and its captured rows resolve); npy_header, .npy headers of
# any dtype and shape with little or no data (header-only files, huge and zero-size axes), with wasm32's
# 32-bit limits emulated: an array that loads must fit them, so the browser's build cannot panic on it;
# model, any bytes as a trained model's safetensors file (a model that loads runs and steps its cache);
# chorales, any bytes as a chorale data file (JSON; data that parses finds its pieces and writes them as MIDI).
# Keeps each minimized corpus in fuzz/corpus/<target>/ and copies any crash into tests/fuzz_regressions/
# as <target>-<name>, which `cargo test --test fuzz_corpus` replays. cargo-fuzz needs nightly flags:
# RUSTC_BOOTSTRAP lets the machine's stable toolchain accept them; the code is safe Rust, so no sanitizer
# is used.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-180}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
failed=0
for target in scenario atlas npy_header model chorales; do
  log=$(mktemp)
  status=0
  mkdir -p "fuzz/corpus/$target"
  (cd fuzz && cargo fuzz run "$target" --sanitizer none -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1) >"$log" 2>&1 || status=$?
  (cd fuzz && cargo fuzz cmin "$target" --sanitizer none) >/dev/null 2>&1 || true
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  crashes=0
  for f in "fuzz/artifacts/$target"/*; do
    [ -f "$f" ] || continue
    cp "$f" "tests/fuzz_regressions/$target-$(basename "$f")" && crashes=$((crashes + 1))
  done
  echo "fuzzed $target for ${seconds}s: ${runs} executions, ${crashes} crash file(s), corpus $(ls "fuzz/corpus/$target" | wc -l) inputs"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    tail -40 "$log"
    echo "crash inputs copied to tests/fuzz_regressions/ (replayed by cargo test --test fuzz_corpus)"
    failed=1
  fi
done
exit "$failed"
