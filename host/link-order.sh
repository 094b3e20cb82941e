#!/usr/bin/env bash
# Writes host/link-order.txt: the functions carapace executes on its common
# paths (a search, a glob, a read through `tool call`; the replay demo
# through `-p`), which host/build.rs has the linker place together at the
# head of the code. A run then maps a few MiB of code where it mapped 14.
#
# The list names symbols as the release and the bench builds spell them;
# those names change with a dependency or toolchain update (never with an
# edit to most of carapace's own code). A stale list costs memory, not
# correctness: run this again after `cargo update` or a new toolchain, then
# rebuild.
#
# Needs valgrind (installed here if missing). Takes a release and a bench
# build; leaves target/release/carapace as the bench build.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
command -v valgrind >/dev/null || apt-get install -y -q valgrind >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/src/nested" "$work/home" "$work/cache"
for i in $(seq 1 40); do
    printf 'fn main() {\n    println!("%s");\n}\n' "$i" >"$work/tree/src/f$i.rs"
    printf 'pub fn helper_%s() {}\n' "$i" >"$work/tree/src/nested/g$i.rs"
done
printf 'target/\n' >"$work/tree/.gitignore"
git -C "$work/tree" init -q

# Prints the mangled names of the functions `binary` executes in the
# workloads, one per line.
executed() {
    local binary=$1 n=0
    trace() { # DIR ARGS...: one workload, compiled natively first so the
        # traced run loads components and never compiles them.
        local dir=$1
        shift
        local -a run=(env -i "PATH=$PATH" "HOME=$work/home" "CARAPACE_CACHE_DIR=$work/cache")
        (cd "$dir" && "${run[@]}" "$binary" "$@" >/dev/null)
        n=$((n + 1))
        (cd "$dir" && "${run[@]}" valgrind -q --tool=callgrind --demangle=no \
            --callgrind-out-file="$work/callgrind.$n" "$binary" "$@" >/dev/null)
    }
    local demo=(-p "Summarise the demo notes" --model replay:examples/demo/replay.json)
    trace "$work/tree" tool call grep Grep --input '{"pattern":"fn main"}'
    trace "$work/tree" tool call grep Grep \
        --input '{"pattern":"println","output_mode":"content","-n":true}'
    trace "$work/tree" tool call grep Grep --input '{"pattern":"helper","output_mode":"count"}'
    trace "$work/tree" tool call glob Glob --input '{"pattern":"**/*.rs"}'
    trace "$work/tree" tool call read Read --input "{\"file_path\":\"$work/tree/src/f1.rs\"}"
    trace "$repo" "${demo[@]}" --output-format json
    trace "$repo" "${demo[@]}" --output-format stream-json --verbose
    # Callgrind names an object or a function once, then by number:
    # `fn=(12) name`, later `fn=(12)`.
    awk '
        function id_of(line) { return substr(line, index(line, "(") + 1, index(line, ")") - index(line, "(") - 1) }
        function name_of(line) { return substr(line, index(line, ")") + 2) }
        /^c?ob=\(/ {
            id = id_of($0); if (name_of($0) != "") objects[id] = name_of($0)
            if ($0 ~ /^ob=/) current = objects[id]
            next
        }
        /^c?fn=\(/ {
            id = id_of($0); if (name_of($0) != "") functions[id] = name_of($0)
            if ($0 ~ /^fn=/ && current ~ /\/carapace$/ && !seen[functions[id]]++)
                print functions[id]
        }
    ' "$work"/callgrind.*
    rm -f "$work"/callgrind.*
}

CARAPACE_KEEP_SYMBOLS=1 cargo build --release --locked --bin carapace
executed "$repo/target/release/carapace" >"$work/release.txt"
# What `cargo bench` builds: its dev-dependencies unify features, which
# renames symbols against a plain `--profile bench` build.
cargo bench --locked --bench carapace --no-run
executed "$repo/target/release/carapace" >"$work/bench.txt"
cat "$work/release.txt" "$work/bench.txt" | awk '!seen[$0]++' >host/link-order.txt
echo "host/link-order.txt: $(wc -l <"$work/release.txt") release and $(wc -l <"$work/bench.txt") bench symbols"
