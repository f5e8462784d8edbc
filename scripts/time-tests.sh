#!/usr/bin/env bash
# Where `make check && make test` spends its time: a clean clone of this repository's HEAD in a temporary folder,
# then each step of make check and make test in the order make test runs them, timed, and the size of target/
# after each; a markdown table on stdout (the book's Testing chapter, "Where make test's time goes").
#   scripts/time-tests.sh [clone-dir]      (default: a new folder under /tmp; its logs are left for inspection, the
#                                           clone's target/ (about 12 GB) removed at the end)
# What the machine already has (Debian's packages, cargo-installed wasm-bindgen and mdbook, pip's cache) is used
# as the steps find it, as on CI's machine.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d /tmp/relattn-timing.XXXXXX)}
git clone --quiet "$repo" "$dir/relattn"
cd "$dir/relattn"
export CARGO_INCREMENTAL=0 # as .ci/run
rows=()
total=0
step() {
  local name=$1; shift
  local start=$SECONDS
  if ! "$@" > "$dir/$name.log" 2>&1; then
    rm -rf "$dir/relattn/target"
    echo "step '$name' failed: see $dir/$name.log" >&2
    tail -20 "$dir/$name.log" >&2
    exit 1
  fi
  local took=$((SECONDS - start))
  total=$((total + took))
  rows+=("| \`$name\` | $took | $(du -sh target 2>/dev/null | cut -f1) |")
}
step "make check" make check
step "make test-rust" make test-rust
step "make docs" make docs
step "make test-python" make test-python
step "make test-wasm" make test-wasm
step "make test-e2e" make test-e2e
echo "| step | seconds | target/ after |"
echo "|---|---:|---:|"
printf '%s\n' "${rows[@]}"
echo "| total | $total | |"
echo
echo "commit $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, logs in $dir"
rm -rf "$dir/relattn/target"
