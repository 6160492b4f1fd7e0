#!/usr/bin/env bash
# cuvil-tune-gen builds the search space for the target the study was tuned for (tune records it
# as the study's user attribute `target`; a study without it, from an older cuvil, means cpu). A
# study whose target is unknown is bad input: one line naming the study and the attribute, exit 2,
# nothing written. The studies are made here with Optuna and hold no trials, so each run that gets
# past the target stops at "no trials".
# Usage: tune_gen_target_test.sh path/to/cuvil-tune-gen
set -u
TUNE_GEN=$1
PY=/usr/bin/python3
if ! "$PY" -c "import optuna" 2>/dev/null; then echo "python3-optuna is not installed"; exit 77; fi
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# make_study FILE TARGET_JSON: an empty study cuvil-resnet50 with tune's suite attribute and, unless
# TARGET_JSON is "none", a target attribute.
make_study() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(storage="sqlite:///" + sys.argv[1], study_name="cuvil-resnet50")
study.set_user_attr("suite", "resnet50")
if sys.argv[2] != "none":
    study.set_user_attr("target", json.loads(sys.argv[2]))
PY
}

# expect_error NAME TARGET_JSON TEXT: tune-gen on a study with that target exits 2 with one line
# containing TEXT, and writes nothing.
expect_error() {
  local name=$1 study="$TMP/$1.db"
  make_study "$study" "$2" || { fail "$name: could not make the study"; return; }
  "$TUNE_GEN" --study "$study" --suite resnet50 -o "$TMP/$name.cuvilpass" --no-verify \
    >"$TMP/stdout" 2>"$TMP/stderr"
  local status=$?
  if [ "$status" -ne 2 ]; then
    fail "$name: exit status $status, expected 2"; cat "$TMP/stdout" "$TMP/stderr"
  elif [ "$(grep -c . "$TMP/stderr")" -ne 1 ]; then
    fail "$name: not a one-line error"; cat "$TMP/stderr"
  elif ! grep -qF -- "$3" "$TMP/stderr"; then
    fail "$name: stderr lacks '$3'"; cat "$TMP/stderr"
  elif [ -e "$TMP/$name.cuvilpass" ]; then
    fail "$name: wrote $TMP/$name.cuvilpass"
  else
    echo "ok   $name: $(cat "$TMP/stderr")"
  fi
}

expect_error unknown '"tpu"' \
  "$TMP/unknown.db: study 'cuvil-resnet50': user attribute 'target': unknown target 'tpu' (expected cpu or cuda)"
expect_error not_a_string '3' \
  "$TMP/not_a_string.db: study 'cuvil-resnet50': user attribute 'target': 3 is not a target name"
# Known targets, and none recorded, get past the target: the empty study then has no trials.
expect_error cpu '"cpu"' "no trials of study 'cuvil-resnet50'"
expect_error no_target none "no trials of study 'cuvil-resnet50'"

finish "failure(s)" "all tune-gen target checks passed"
