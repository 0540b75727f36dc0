#!/bin/sh
# run.sh — build the libFuzzer harness of the study-file parser (fuzz_config.c) with
# clang (ASan + UBSan) against the default build's libraries, and run it for SECONDS
# (default 300) from tests/data/*.ini; crashes land in OUTDIR/crash. Not part of CI
# (its result depends on the time given); run by hand after changing bench/config.c.
# usage: tests/fuzz/run.sh [SECONDS [OUTDIR]]   (after cmake --build --preset default)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-300}
out=${2:-${TMPDIR:-/tmp}/ropebench-fuzz}
b=$root/build/default
[ -f "$b/librb_kernels.a" ] || { echo "run.sh: build the default preset first" >&2; exit 2; }
command -v clang >/dev/null || { echo "run.sh: clang is needed (apt-get install clang)" >&2; exit 2; }
mkdir -p "$out/corpus" "$out/crash"
cp "$root"/tests/data/*.ini "$out/corpus/"
cd "$root"
# shellcheck disable=SC2046
clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -std=c17 -fopenmp \
  -I bench -I kernels -I datasets -I mpi -I reports -I "$b/generated" \
  $(mpicc --showme:compile) $(pkg-config --cflags hdf5-openmpi) \
  tests/fuzz/fuzz_config.c bench/config.c \
  -Dmain=rb_unused_main bench/main.c bench/cmd_bench.c bench/cmd_tools.c bench/metrics.c \
  bench/results_hdf5.c bench/study.c mpi/*.c reports/*.c \
  "$b/librb_kernels.a" "$b/librb_datasets.a" $(mpicc --showme:link) \
  -L/usr/lib/x86_64-linux-gnu/hdf5/openmpi -lhdf5 -lopenblas -lhwloc -lm -o "$out/fuzz_config"
exec "$out/fuzz_config" "$out/corpus" -max_len=2048 -rss_limit_mb=4096 -timeout=10 \
  -max_total_time="$secs" -artifact_prefix="$out/crash/" -print_final_stats=1
