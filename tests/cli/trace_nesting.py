#!/usr/bin/env python3
"""Checks that a Chrome trace nests the way trace readers nest it.

The rule of stackcollapse-chrome-tracing.py (Brendan Gregg's FlameGraph), which speedscope and
Perfetto agree with on exactly nested input: per (pid, tid), complete ("X") events stably sorted
by ts; an event is a child of the innermost open event whose [ts, ts + dur) contains it, open
events that end at or before its ts having closed. Arithmetic in binary floating point, as those
readers do it. Every event must lie inside the event it nests in (siblings must not overlap), and
the names of the events it nests in must be the blocks of its own name: "layer1.0.conv1" nests in
"layer1" > "layer1.0", "conv1" in nothing.

Usage: trace_nesting.py TRACE.json [MIN_OPS]. Exit status 1 with one line per failure.
"""
import json
import sys


def blocks(name, limit=64):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))][:limit]


def failures(trace):
    tracks = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            tracks.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    out, ops = [], 0
    for key, events in tracks.items():
        events.sort(key=lambda e: float(e["ts"]))  # stable: file order breaks ties
        stack = []
        for e in events:
            ts, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack and end > stack[-1][1]:
                out.append("%s overlaps %s by %g us" % (e["name"], stack[-1][0], end - stack[-1][1]))
            path = [name for name, _ in stack]
            if path != blocks(e["name"]):
                out.append("%s nests in [%s]" % (e["name"], " > ".join(path)))
            if e.get("cat") != "block":
                ops += 1
            stack.append((e["name"], end))
    return out, ops


def main():
    trace = json.load(open(sys.argv[1]))
    min_ops = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    bad, ops = failures(trace)
    if ops < min_ops:
        bad.append("%d op events, expected at least %d" % (ops, min_ops))
    for line in bad:
        print("FAIL trace nesting: " + line)
    if bad:
        return 1
    print("trace nests: %d op events under their names' blocks" % ops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
