"""The protocol of cuvil's Python workers (bench_suite/python_child.h): one JSON request per line
on stdin, one reply per line on stdout, every failure sent back as {"ok": false, "error"} with
the worker's file and line, {"op": "close"} to stop."""
import json
import os
import sys
import traceback


def serve(handlers):
    """Answers requests with handlers[op](request) -> dict until "close" or the end of stdin."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "close":
                break
            if op not in handlers:
                raise ValueError(f"unknown op {op!r}")
            reply = handlers[op](req)
            reply["ok"] = True
        except Exception as e:  # noqa: BLE001  (every failure goes back as a message)
            last = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
            where = f" ({os.path.basename(last.filename)}:{last.lineno})" if last else ""
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}{where}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
