#!/usr/bin/env bash
# Beside busy processes, a measuring command re-executes itself with OMP_WAIT_POLICY=passive
# (oneDNN's idle threads then sleep instead of spinning on the CPUs the others need) and says so
# in the run JSON; a user's own OMP_WAIT_POLICY is kept as it is.
set -uo pipefail
BENCH=$(realpath "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TMP"
FAST=(run --suite resnet50 --rungs b1 --no-db --quiet --warmup 0 --warmup-time 0 --min-samples 2
      --max-samples 2 --min-time 0)

# Two spinning processes: more than one CPU busy beside cuvil-bench on any machine.
spinners=()
for _ in 1 2; do
  bash -c 'while :; do :; done' &
  spinners+=($!)
done
trap 'kill "${spinners[@]}" 2>/dev/null; chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 0.3

policy() {  # policy FILE: the run JSON's context.cuvil.openmp_wait_policy
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["context"]["cuvil"]["openmp_wait_policy"])' "$1"
}

if run_bench busy 0 "${FAST[@]}" -o busy.json; then
  got=$(policy busy.json)
  case "$got" in
    "passive (cuvil-bench: other processes were using "*" CPUs at the start)") echo "ok   busy: $got" ;;
    *) fail "busy: openmp_wait_policy is '$got'" ;;
  esac
fi

if OMP_WAIT_POLICY=active run_bench users_choice 0 "${FAST[@]}" -o user.json; then
  got=$(policy user.json)
  [ "$got" = "OMP_WAIT_POLICY=active (set by the user)" ] && echo "ok   user: $got" ||
    fail "users_choice: openmp_wait_policy is '$got'"
fi

finish "openmp wait policy checks failed" "openmp wait policy test ok"
