#!/usr/bin/env bash
# quickstart.sh — install what is missing, build, run the default study on 2 ranks,
# and write results.h5 plus the report. usage: scripts/quickstart.sh [OUTDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/out}")
# the output directory first: a bad OUTDIR fails now, not after the build
mkdir -p "$out" || { echo "quickstart: cannot create OUTDIR $out" >&2; exit 2; }
[ -w "$out" ] && [ -x "$out" ] || { echo "quickstart: OUTDIR $out is not writable" >&2; exit 2; }
"$root/scripts/setup.sh"
# (warnings are not errors here, as they are for the tests: another compiler's new
# warning must not stop a user's first run)
cmake --preset default -S "$root" -DRB_WERROR=OFF >/dev/null
cmake --build "$root/build/default" -j"$(nproc)" --target ropebench
start=$(date +%s)
"$root/scripts/mpirun.sh" 2 "$root/build/default/ropebench" run -o "$out/results.h5"
# the report exits 2 when it wrote what it could but not everything (a plot gnuplot
# could not draw): its paths are said either way, then its status
rc=0
"$root/build/default/ropebench" report "$out/results.h5" -o "$out/report" >/dev/null || rc=$?
echo "quickstart: done in $(( $(date +%s) - start )) s"
echo "  results: $out/results.h5"
echo "  report:  $out/report/report.md"
echo "           $out/report/report.html"
[ "$rc" = 0 ] || echo "quickstart: the report exited $rc (its line above says why)" >&2
exit "$rc"
