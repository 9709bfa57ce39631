#!/usr/bin/env bash
# A large fleet's data cache misses a request on the fast path, from
# cachegrind (counts, not times: robust on a shared machine).
#
#   bash benches/cache/misses.sh [INSTANCES]     # default 5334 (16,002 workers)
#
# Runs `throughput scaled:INSTANCES+lazy` for 0.005 h and for 0.02 h under
# `valgrind --tool=cachegrind --cache-sim=yes` and prints the difference a
# request: instructions, first-level data cache misses and data misses of
# a 2 MB, 16-way last level (reads and writes), of the requests alone,
# without the fleet's start (a warm fleet is aged request by request at its
# start: about 70,000 instructions a worker). cachegrind simulates two
# levels; the second is set to the size of this machine's per-core L2
# (`lscpu`: 2 MB), since its 260 MB L3 holds any of these fleets: the L2
# misses are what a large fleet pays in wall time that a small one does
# not. Needs valgrind; builds the `profiling` profile.
set -euo pipefail
cd "$(dirname "$0")/../.."
instances=${1:-5334}
cargo build -q --profile profiling --example throughput
bin=target/profiling/examples/throughput
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in 0.005 0.02; do
  valgrind --tool=cachegrind --cache-sim=yes --LL=2097152,16,64 --cachegrind-out-file="$tmp/cg.$h" \
    "$bin" "scaled:$instances+lazy" "$h" >"$tmp/log.$h" 2>&1
done
python3 - "$tmp" "$instances" <<'PY'
import re, sys
tmp, instances = sys.argv[1], int(sys.argv[2])
def counts(h):
    s = open(f"{tmp}/log.{h}").read()
    req = int(re.search(r"(\d+) requests;", s).group(1))
    ir = int(re.search(r"I\s+refs:\s+([\d,]+)", s).group(1).replace(",", ""))
    d1 = int(re.search(r"D1  misses:\s+([\d,]+)", s).group(1).replace(",", ""))
    l2 = int(re.search(r"LLd misses:\s+([\d,]+)", s).group(1).replace(",", ""))
    return req, ir, d1, l2
a, b = counts("0.005"), counts("0.02")
n = b[0] - a[0]
print(f"{instances * 3} workers, {n} requests between 0.005 h and 0.02 h: "
      f"{(b[1] - a[1]) / n:.1f} instructions, {(b[2] - a[2]) / n:.2f} D1 misses and "
      f"{(b[3] - a[3]) / n:.2f} L2 (2 MB) misses a request")
PY
