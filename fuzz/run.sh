#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (libFuzzer through cargo-fuzz),
# growing fuzz/corpus/TARGET/ with what it finds. Exits non-zero when a
# target crashed or failed a check; the input that did it is kept in
# fuzz/artifacts/TARGET/ (add it to the corpus once fixed: `cargo test`
# replays the corpus). Each target's last libFuzzer status line (runs,
# coverage, corpus size) is printed at the end and kept in
# fuzz/stats/TARGET.txt.
#
#   fuzz/run.sh SECONDS [TARGET…]     JOBS=2 runs two targets at once
#
# The stable toolchain runs libFuzzer with RUSTC_BOOTSTRAP=1 (cargo-fuzz
# passes -Z flags). No sanitizer by default: carapace denies unsafe code,
# and AddressSanitizer would cost half the executions for the unsafe code
# of its dependencies only (SANITIZER=address turns it on).
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:?usage: fuzz/run.sh SECONDS [TARGET…]}"
shift
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.1 --locked
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
sanitizer="${SANITIZER:-none}"
cargo fuzz build -s "$sanitizer" --release
mkdir -p stats logs
run_one() {
    local target="$1" seconds="$2" sanitizer="$3"
    mkdir -p "corpus/$target" "artifacts/$target"
    if cargo fuzz run -s "$sanitizer" --release "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 >"logs/$target.log" 2>&1; then
        status=ok
    else
        status=FAILED
    fi
    grep -E '^#[0-9]+' "logs/$target.log" | tail -1 >"stats/$target.txt" || true
    grep -E '^stat::' "logs/$target.log" >>"stats/$target.txt" || true
    echo "$target: $status $(head -1 "stats/$target.txt")"
    [ "$status" = ok ]
}
export -f run_one
printf '%s\n' "${targets[@]}" |
    xargs -P "${JOBS:-1}" -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$sanitizer"
