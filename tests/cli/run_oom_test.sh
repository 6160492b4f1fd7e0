#!/usr/bin/env bash
# A rung that runs out of memory (an address-space limit a little above what b1 needs) ends the
# run with exit 3 and a message naming the rung, its size and the stage; the rung measured
# before it is still written, with a "run incomplete" warning. A first rung out of memory writes
# nothing and exits 3 too.
set -euo pipefail
BENCH=$(realpath "$1")
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
FAST=(run --suite resnet50 --no-db --quiet --warmup 0 --warmup-time 0 --min-samples 2
      --max-samples 2 --min-time 0)

# The address space b1 peaks at, read from /proc while it runs (VmPeak only grows).
peak_kib=$("$PY" - "$BENCH" "${FAST[@]}" --rungs b1 <<'PY'
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
while p.poll() is None:
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("VmPeak:"):
                peak = max(peak, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.01)
assert p.returncode == 0 and peak > 0, (p.returncode, peak)
print(peak)
PY
)
limit_kib=$((peak_kib + 150 * 1024))  # b64's activations need about 1 GiB more

set +e
(ulimit -v "$limit_kib"; "$BENCH" "${FAST[@]}" --rungs b1,b64 -o run.json > out.txt 2> err.txt)
status=$?
set -e
cat out.txt err.txt
[ "$status" -eq 3 ] || { echo "expected exit 3 under a ${limit_kib} KiB limit, got $status"; exit 1; }
grep -q "cuvil-bench: error: resnet50/b64 (batch=64, image=224): out of memory while " err.txt
grep -q "address space limited to" err.txt
"$PY" - run.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
names = {b["run_name"].split("/")[1] for b in doc["benchmarks"]}
assert names == {"b1"}, names
assert any(w.startswith("run incomplete: resnet50/b64") for w in doc["context"]["cuvil"]["warnings"]), doc["context"]["cuvil"]["warnings"]
PY

# Out of memory in the first rung: nothing to keep, nothing written.
set +e
(ulimit -v "$limit_kib"; "$BENCH" "${FAST[@]}" --rungs b64 -o first.json > out.txt 2> err.txt)
status=$?
set -e
[ "$status" -eq 3 ] || { cat err.txt; echo "expected exit 3, got $status"; exit 1; }
grep -q "resnet50/b64 (batch=64, image=224): out of memory while " err.txt
test ! -e first.json
echo "run out-of-memory test ok (limit ${limit_kib} KiB)"
