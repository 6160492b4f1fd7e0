#!/usr/bin/python3
"""cuvil's Optuna side: ask-and-tell over a line-based JSON protocol on stdin/stdout.

One request per line, one reply per line. Every reply has "ok"; a failed request answers
{"ok": false, "error": "..."} and the process keeps serving. Operations:
  hello                         -> optuna version
  open {storage, study_name, sampler, pruner, seed, space, attrs, allow_mismatch, enqueue,
        readonly}              readonly: load an existing study, change nothing
                                -> created, requeued (trials left RUNNING by a killed process,
                                   now FAIL and enqueued again), counts per state
  ask                           -> number, values (resolved: every dimension, fixed ones too)
  report {number, step, value}  -> prune (the pruner's verdict after this intermediate value)
  tell {number, state, value?, reason?, record?}   state: complete | fail | pruned; record (cuvil's
                                trial record, tuner/trial_log.h) is kept as the user attribute
                                "cuvil_record" before the state is set, so the study itself holds
                                everything cuvil-tune-gen reads (the trial log is only a cache)
  record {number, record}       stores a running trial's record without telling it (what a tuner
                                killed between the two leaves; tests use it)
  best                          -> number, value, values
  trials                        -> every trial: number, state, value, values, user_attrs
                                   (a non-finite float is sent as the string "nan", "inf", "-inf")
  fanova {seed}                 -> importances {dimension: value} (complete trials only)
  close
Several tuners may share one study (an RDB URL such as postgresql://...): every asked trial
records its owner (host, tuner pid) and a heartbeat thread refreshes it while the trial runs. A
RUNNING trial is only taken for interrupted when its owner on this host is gone, or when its
heartbeat is older than the grace period (another host that died); then it is failed and its
configuration enqueued again ("requeued" in the open and ask replies), keeping its baseline flag.
A RUNNING trial whose record was already stored (its tuner died between the record and the tell)
is finished in the state the record says instead ("recovered" in the open and ask replies).
Failures are answered on one line; CUVIL_TUNER_DEBUG=1 also prints their tracebacks on stderr.
CUVIL_TEST_KILL_AT=recorded@N (TEST-ONLY) kills the tuner and this process with SIGKILL after
trial N's record is stored, before its state is told.
The space is the list tuner/search_space.cc writes (space_to_json): it is sampled define-by-run;
a power-of-two parameter is sampled as its exponent "NAME~log2", a multiple of another as the
factor "NAME~factor".
"""
import datetime
import json
import math
import os
import signal
import socket
import sys
import threading
import traceback
import warnings

optuna = None
study = None
space = None
running = {}  # number -> optuna Trial (asked in this process)
recovered_pending = []  # records of trials reap_interrupted finished as recorded
storage = None
lock = threading.Lock()  # the heartbeat thread and the request loop share the storage
HEARTBEAT_S = int(os.environ.get("CUVIL_TUNER_HEARTBEAT_S", "15"))
GRACE_S = int(os.environ.get("CUVIL_TUNER_GRACE_S", "120"))
# Heartbeats are recorded by hand (heartbeat_loop) since trials are asked and told, not optimized.
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
# Who runs a trial: the tuner and this bridge; if either is gone, so is the trial.
OWNER = {"host": socket.gethostname(), "pid": os.getppid(), "bridge": os.getpid()}


def fail(message):
    return {"ok": False, "error": message}


def suggest(trial, dims):
    """Samples every dimension whose condition holds; returns the resolved values."""
    values = {}
    for d in dims:
        name = d["name"]
        cond = d.get("condition")
        if cond is not None and not values.get(cond, False):
            continue
        if "fixed" in d:
            values[name] = d["fixed"]
            continue
        kind = d["kind"]
        if kind == "bool":
            values[name] = trial.suggest_categorical(name, [True, False])
        elif kind == "choice":
            values[name] = trial.suggest_categorical(name, list(d["choices"]))
        elif kind == "float":
            values[name] = trial.suggest_float(name, d["low"], d["high"], log=d.get("log", False))
        elif d.get("power_of_two"):
            lo = math.ceil(math.log2(d["low"]))
            hi = math.floor(math.log2(d["high"]))
            values[name] = 2 ** trial.suggest_int(name + "~log2", lo, hi)
        elif d.get("multiple_of"):
            base = values.get(d["multiple_of"])
            k = trial.suggest_int(name + "~factor", d["factor_low"], d["factor_high"])
            if base is None:
                base = 1
            value = k * base
            # The factor's range is static (so samplers see one distribution); the product is
            # brought back into [low, high] on the base's grid.
            if value > d["high"]:
                value = max(base, (d["high"] // base) * base)
            if value < d["low"]:
                value = -(-d["low"] // base) * base
            values[name] = value
        else:
            log = d.get("log", False)
            step = d.get("step", 1)
            if log and step != 1:
                log = False
            values[name] = trial.suggest_int(name, d["low"], d["high"], step=step, log=log)
    return values


def internal_params(values, dims):
    """Resolved values -> the sampler's parameters (for enqueue_trial)."""
    params = {}
    present = set()
    for d in dims:
        name = d["name"]
        cond = d.get("condition")
        if cond is not None and not values.get(cond, False):
            continue
        if name not in values:
            continue
        present.add(name)
        if "fixed" in d:
            continue
        v = values[name]
        if d["kind"] == "int" and d.get("power_of_two"):
            params[name + "~log2"] = int(round(math.log2(max(1, v))))
        elif d["kind"] == "int" and d.get("multiple_of"):
            base = values.get(d["multiple_of"], 1) or 1
            k = max(d["factor_low"], min(d["factor_high"], int(round(v / base))))
            params[name + "~factor"] = k
        else:
            params[name] = v
    return params


def make_sampler(name, seed):
    s = optuna.samplers
    if name == "tpe":
        return s.TPESampler(multivariate=True, group=True, seed=seed, n_startup_trials=5,
                            warn_independent_sampling=False)
    if name == "cmaes":
        return s.CmaEsSampler(seed=seed, n_startup_trials=5, warn_independent_sampling=False)
    if name == "random":
        return s.RandomSampler(seed=seed)
    if name == "qmc":
        return s.QMCSampler(seed=seed, warn_independent_sampling=False)
    raise ValueError("unknown sampler '%s' (tpe, cmaes, random, qmc)" % name)


def make_pruner(name):
    p = optuna.pruners
    if name == "median":
        return p.MedianPruner(n_startup_trials=3, n_warmup_steps=0)
    if name in ("sha", "successive-halving"):
        return p.SuccessiveHalvingPruner()
    if name == "none":
        return p.NopPruner()
    raise ValueError("unknown pruner '%s' (median, successive-halving, none)" % name)


def counts():
    out = {}
    for t in study.get_trials(deepcopy=False):
        out[t.state.name.lower()] = out.get(t.state.name.lower(), 0) + 1
    return out


def stale_trial_ids():
    """Ids of this study's RUNNING trials whose last heartbeat is older than GRACE_S by the
    database's clock. Optuna 3.1's own check (RDBStorage._get_stale_trial_ids) reads
    timedelta.seconds: a heartbeat another tuner wrote just after this check read the clock is a
    negative interval, whose .seconds is 86399, so a live tuner's trial was failed under it
    ("Trial#9 has already finished and can not be updated" in that tuner, seen in CI)."""
    import sqlalchemy
    from optuna.storages._rdb import models

    session = storage.scoped_session()
    try:
        now = session.execute(sqlalchemy.func.now()).scalar().replace(tzinfo=None)
        rows = (session.query(models.TrialModel)
                .filter(models.TrialModel.state == optuna.trial.TrialState.RUNNING)
                .filter(models.TrialModel.study_id == study._study_id).all())
        stale = [r.trial_id for r in rows
                 if r.heartbeats and (now - r.heartbeats[0].heartbeat).total_seconds() > GRACE_S]
        session.commit()
        return stale
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()


def owner_gone(t, stale_ids):
    """True when the tuner that runs trial t is known to be gone."""
    if t._trial_id in stale_ids:
        return True  # no heartbeat for longer than the grace period: its host or tuner died
    owner = t.user_attrs.get("cuvil_owner")
    if owner is None:
        # Just asked by another tuner that has not recorded itself yet, or left by an old one.
        start = t.datetime_start
        return start is None or (datetime.datetime.now() - start).total_seconds() > GRACE_S
    if owner.get("host") != OWNER["host"]:
        return False  # another machine's: its heartbeat says whether it lives
    for key in ("pid", "bridge"):
        try:
            os.kill(int(owner.get(key, 0)), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, ValueError, OverflowError):
            pass
    return False


def finish_recorded(t, record):
    """Finishes a RUNNING trial in the state its stored record says; False if it cannot."""
    TrialState = optuna.trial.TrialState
    state = record.get("state")
    value = record.get("value")
    if state == "complete" and isinstance(value, (int, float)) and math.isfinite(value):
        return study._storage.set_trial_state_values(t._trial_id, TrialState.COMPLETE,
                                                     [float(value)])
    if state == "pruned":
        return study._storage.set_trial_state_values(t._trial_id, TrialState.PRUNED)
    if state == "fail":
        return study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    return False


def reap_interrupted():
    """Fails the RUNNING trials whose tuner is gone and enqueues their configurations again; one
    whose record was stored is finished as recorded (returned in "recovered")."""
    TrialState = optuna.trial.TrialState
    requeued = []
    global recovered_pending
    with lock:
        stale_ids = set(stale_trial_ids())
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if t.number in running or not owner_gone(t, stale_ids):
                continue
            record = t.user_attrs.get("cuvil_record")
            if isinstance(record, dict):
                try:
                    if finish_recorded(t, record):
                        recovered_pending.append(record)
                        continue
                except Exception:  # another tuner finished it first
                    continue
            try:
                study._storage.set_trial_user_attr(t._trial_id, "fail_reason",
                                                   "interrupted (the tuning process died)")
                if not study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL):
                    continue
            except Exception:  # another tuner reaped it first
                continue
            # A retried baseline (the default configuration, enqueued first) stays the baseline.
            attrs = {"retry_of": t.number}
            baseline = bool(t.user_attrs.get("baseline", False))
            if baseline:
                attrs["baseline"] = True
            study.enqueue_trial(t.params, user_attrs=attrs, skip_if_exists=False)
            requeued.append({"number": t.number, "baseline": baseline,
                             "values": t.user_attrs.get("cuvil_values", {})})
    return requeued


def take_recovered():
    global recovered_pending
    out, recovered_pending = recovered_pending, []
    return out


def heartbeat_loop():
    """Keeps this tuner's running trials alive for other tuners sharing the study."""
    while True:
        threading.Event().wait(HEARTBEAT_S)
        with lock:
            for trial in list(running.values()):
                try:
                    storage.record_heartbeat(trial._trial_id)
                except Exception:  # a busy database: the next beat retries
                    pass


def op_open(req):
    global study, space
    TrialState = optuna.trial.TrialState
    space = req["space"]
    seed = req.get("seed")
    global storage
    readonly = req.get("readonly", False)
    url = req["storage"]
    if readonly and url.startswith("sqlite:///"):
        # A reader never creates the file (SQLite would, empty) nor reads what is not a database.
        path = url[len("sqlite:///"):]
        if not os.path.isfile(path):
            return fail("%s: no such study file" % path)
        with open(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                return fail("%s: not an Optuna study (not an SQLite database)" % path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # heartbeats are "experimental" in Optuna 3
            storage = optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_S,
                                                 grace_period=GRACE_S)
        existing = [s.study_name for s in optuna.study.get_all_study_summaries(storage)]
    except Exception as e:
        return fail("cannot open the study storage %s: %s" % (url, one_line(e)))
    created = req["study_name"] not in existing
    if readonly:
        # Readers (cuvil-tune-gen) must not touch trials another process may be running.
        if created:
            return fail("no trials of study '%s': it is not in %s (studies there: %s)"
                        % (req["study_name"], url, ", ".join(existing) or "none"))
        study = optuna.load_study(study_name=req["study_name"], storage=storage)
        return {"ok": True, "created": False, "requeued": [], "recovered": [],
                "counts": counts(), "attrs": study.user_attrs}
    # Seeds mix in the trial count so a resumed study does not replay the same samples.
    n_before = 0
    if not created:
        n_before = len(optuna.load_study(study_name=req["study_name"], storage=storage).trials)
    sampler = make_sampler(req.get("sampler", "tpe"), None if seed is None else seed + n_before)
    study = optuna.create_study(storage=storage, study_name=req["study_name"], sampler=sampler,
                                pruner=make_pruner(req.get("pruner", "median")),
                                direction="minimize", load_if_exists=True)
    attrs = req.get("attrs", {})
    if created:
        for k, v in attrs.items():
            study.set_user_attr(k, v)
    elif not req.get("allow_mismatch", False):
        for k, v in attrs.items():
            have = study.user_attrs.get(k)
            if have != v:
                return fail("study '%s' was made with %s=%s, this run has %s=%s (pass "
                            "--allow-study-mismatch to use it anyway)"
                            % (req["study_name"], k, json.dumps(have), k, json.dumps(v)))
    requeued = reap_interrupted()
    if created:
        for values in req.get("enqueue", []):
            study.enqueue_trial(internal_params(values, space), user_attrs={"baseline": True})
    return {"ok": True, "created": created, "requeued": requeued,
            "recovered": take_recovered(), "counts": counts(), "attrs": study.user_attrs}


def op_ask(req):
    requeued = reap_interrupted()
    with lock:
        trial = study.ask()
        trial.set_user_attr("cuvil_owner", OWNER)
        storage.record_heartbeat(trial._trial_id)
        running[trial.number] = trial
        values = suggest(trial, space)
        trial.set_user_attr("cuvil_values", values)
    return {"ok": True, "number": trial.number, "values": values,
            "baseline": bool(trial.user_attrs.get("baseline", False)),
            "retry_of": trial.user_attrs.get("retry_of"), "requeued": requeued,
            "recovered": take_recovered()}


def op_report(req):
    trial = running[req["number"]]
    trial.report(float(req["value"]), int(req["step"]))
    return {"ok": True, "prune": bool(trial.should_prune())}


def op_tell(req):
    TrialState = optuna.trial.TrialState
    number = req["number"]
    with lock:
        trial = running.pop(number)
    if req.get("reason"):
        trial.set_user_attr("fail_reason", req["reason"])
    if isinstance(req.get("record"), dict):
        trial.set_user_attr("cuvil_record", req["record"])
        test_kill("recorded", number)
    state = req["state"]
    if state == "complete":
        study.tell(trial, float(req["value"]))
    elif state == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, state=TrialState.FAIL)
    return {"ok": True}


def op_record(req):
    with lock:
        trial = running[req["number"]]
        trial.set_user_attr("cuvil_record", req["record"])
    return {"ok": True}


def json_safe(v):
    """JSON without NaN or Infinity (which the C++ side cannot parse): such floats as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def trial_json(t):
    return json_safe({"number": t.number, "state": t.state.name.lower(), "value": t.value,
                      "values": t.user_attrs.get("cuvil_values", {}), "user_attrs": t.user_attrs,
                      "intermediate": {str(k): v for k, v in t.intermediate_values.items()}})


def one_line(e):
    """An exception as one line: SQLAlchemy's own message (its cause), without the SQL."""
    cause = getattr(e, "orig", None) or e
    text = str(cause).strip().splitlines()
    return "%s: %s" % (type(cause).__name__, text[0] if text else "")


def test_kill(point, number):
    """TEST-ONLY (CUVIL_TEST_KILL_AT=POINT@N,...): kills the tuner and this bridge at a point."""
    spec = os.environ.get("CUVIL_TEST_KILL_AT", "")
    for item in filter(None, spec.split(",")):
        name, _, at = item.partition("@")
        if name == point and (at == "" or at == str(number)):
            sys.stderr.write("TEST: killed at %s of trial %d\n" % (point, number))
            sys.stderr.flush()
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(137)


def op_best(req):
    try:
        t = study.best_trial
    except ValueError:
        return fail("the study has no complete trial yet")
    return dict(trial_json(t), ok=True)


def op_trials(req):
    return {"ok": True, "trials": [trial_json(t) for t in study.get_trials(deepcopy=False)]}


def op_fanova(req):
    try:
        import sklearn  # noqa: F401  fANOVA's forest comes from scikit-learn
    except ImportError:
        return fail("fANOVA needs scikit-learn (python3-sklearn)")
    ev = optuna.importance.FanovaImportanceEvaluator(seed=req.get("seed", 0))
    imp = optuna.importance.get_param_importances(study, evaluator=ev)
    out = {}
    for k, v in imp.items():
        name = k.split("~")[0]
        out[name] = out.get(name, 0.0) + float(v)
    return {"ok": True, "importances": out}


def main():
    global optuna
    threading.Thread(target=heartbeat_loop, daemon=True).start()
    handlers = {"open": op_open, "ask": op_ask, "report": op_report, "tell": op_tell,
                "record": op_record, "best": op_best, "trials": op_trials, "fanova": op_fanova}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "hello":
                try:
                    import optuna as _optuna
                    _optuna.logging.set_verbosity(_optuna.logging.WARNING)
                    # TPE's multivariate/group options are "experimental": not the user's concern.
                    warnings.filterwarnings("ignore", category=_optuna.exceptions.ExperimentalWarning)
                    optuna = _optuna
                except ImportError as e:
                    reply = fail("optuna is not importable by %s: %s (install python3-optuna)"
                                 % (sys.executable, e))
                else:
                    reply = {"ok": True, "optuna": optuna.__version__}
            elif op == "close":
                print(json.dumps({"ok": True}), flush=True)
                return
            elif op in handlers:
                if op != "open" and study is None:
                    reply = fail("no study is open")
                else:
                    reply = handlers[op](req)
            else:
                reply = fail("unknown op '%s'" % op)
        except Exception as e:  # every failure is reported, the loop keeps serving
            reply = fail(one_line(e))
            if os.environ.get("CUVIL_TUNER_DEBUG"):
                traceback.print_exc(file=sys.stderr)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
