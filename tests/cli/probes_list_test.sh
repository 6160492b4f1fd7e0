#!/usr/bin/env bash
# cuvil-bench probes lists each generic event as countable or with the reason it is not (never a
# bare "no"), the PMUs, sampling and CUPTI status; --json says the same for machines; requested
# unknown events are reported, not fatal. Usage: probes_list_test.sh path/to/cuvil-bench
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# It starts at all: nothing links the CUDA driver or CUPTI (loaded with dlopen when present).
if ldd "$BENCH" | grep -qE 'libcuda\.so|libcupti'; then
  fail "cuvil-bench links libcuda or libcupti: $(ldd "$BENCH" | grep -E 'libcuda|libcupti')"
else
  ok "links neither libcuda nor libcupti"
fi

if ! "$BENCH" probes --events MEM_LOAD_RETIRED.L3_MISS,bogus-event-xyz >"$TMP/text" 2>"$TMP/err"; then
  fail "probes exited $?: $(cat "$TMP/err")"
fi
for heading in "Counters" "PMUs libpfm4 recognises" "Clocks" "Stack sampling" "GPU (CUPTI)"; do
  if grep -qF "$heading" "$TMP/text"; then ok "text has '$heading'"; else fail "text lacks '$heading'"; fi
done
# Every event row says yes, or no with a footnote that is printed.
bare_no=0
while read -r note; do
  grep -qF "  $note " "$TMP/text" || bare_no=$((bare_no + 1))
done < <(grep -oE '^  [A-Za-z0-9-]+ +(hardware|software|cache) +no .*' "$TMP/text" | grep -oE '\[[0-9]+\]$')
bare=$(grep -cE '^  [A-Za-z0-9-]+ +(hardware|software|cache) +no *$' "$TMP/text")
if [ "$bare_no" -eq 0 ] && [ "$bare" -eq 0 ]; then ok "every unsupported event has its reason"; else fail "$bare_no missing footnotes, $bare bare 'no' rows"; fi
if grep -qE '^  task-clock +software +(yes|no .+)' "$TMP/text"; then ok "task-clock listed"; else fail "task-clock row missing"; fi
if grep -qF "unknown event 'bogus-event-xyz'" "$TMP/text"; then
  ok "a requested unknown event is reported by name"
else
  fail "requested bogus event not reported"; cat "$TMP/text"
fi

if ! "$BENCH" probes --json --no-clocks --events bogus-event-xyz >"$TMP/json" 2>"$TMP/err"; then
  fail "probes --json exited $?: $(cat "$TMP/err")"
fi
if python3 - "$TMP/json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
events = {e["name"]: e for e in doc["events"]}
for name in ["cycles", "instructions", "cache-misses", "LLC-load-misses", "task-clock",
             "context-switches", "cpu-migrations", "page-faults"]:
    assert name in events, name
for e in doc["events"]:
    assert e["supported"] or e.get("reason"), e
assert any(p["name"] == "perf" for p in doc["pmus"]), doc["pmus"]
assert doc["sampling"]["method"] in ("perf_event callchain", "perf_event+unwind",
                                    "setitimer+unwind"), doc["sampling"]
assert doc["cupti"]["available"] or doc["cupti"]["reason"], doc["cupti"]
assert "clocks" not in doc
bogus = doc["requested_events"][0]
assert bogus["name"] == "bogus-event-xyz" and not bogus["supported"] and bogus["reason"], bogus
PY
then ok "--json: every event supported or with a reason; PMUs, sampling, CUPTI status"
else fail "--json content"; cat "$TMP/json"
fi

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all ok"
