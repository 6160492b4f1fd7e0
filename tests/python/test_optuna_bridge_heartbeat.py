"""The tuner's Optuna bridge (tuner/python/cuvil_optuna.py) sharing one study between two
processes: a trial whose heartbeat is fresh is never taken for interrupted, even when the
heartbeat was written a moment after the other process read the database's clock (Optuna 3.1's
own check read that negative interval as a day old); one whose heartbeat is older than the grace
period is."""
import datetime
import json
import os
import sqlite3
import subprocess

import pytest

BRIDGE = os.path.join(os.path.dirname(__file__), "..", "..", "tuner", "python", "cuvil_optuna.py")


class Bridge:
    def __init__(self):
        self.p = subprocess.Popen(["/usr/bin/python3", BRIDGE], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.call({"op": "hello"})["ok"]

    def call(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.call({"op": "close"})
        self.p.wait(timeout=30)


def open_request(path):
    return {"op": "open", "storage": "sqlite:///" + str(path), "study_name": "s", "space": [],
            "sampler": "random", "pruner": "none", "seed": 1, "attrs": {}, "enqueue": []}


@pytest.mark.parametrize("heartbeat_offset_s,requeued", [(30, False), (-3600, True)])
def test_only_a_heartbeat_older_than_the_grace_period_requeues_a_running_trial(
        tmp_path, heartbeat_offset_s, requeued):
    db = tmp_path / "study.db"
    a = Bridge()
    try:
        assert a.call(open_request(db))["ok"]
        asked = a.call({"op": "ask"})
        assert asked["ok"], asked
        # The heartbeat as another tuner's clock reading would see it: ahead (written after the
        # reading; 30 s, so that the second bridge's start-up cannot catch up with it), or an
        # hour behind (a tuner on another host that died).
        con = sqlite3.connect(str(db))
        now = datetime.datetime.utcnow() + datetime.timedelta(seconds=heartbeat_offset_s)
        con.execute("UPDATE trial_heartbeats SET heartbeat = ?", (now.isoformat(" "),))
        con.execute("UPDATE trial_user_attributes SET value_json = ? WHERE key = 'cuvil_owner'",
                    (json.dumps({"host": "another-host", "pid": 1, "bridge": 1}),))
        con.commit()
        con.close()
        b = Bridge()
        try:
            opened = b.call(open_request(db))
            assert opened["ok"], opened
            assert [q["number"] for q in opened["requeued"]] == ([asked["number"]] if requeued else [])
        finally:
            b.close()
    finally:
        a.close()
