# Sourced by the browser tests: one policy for a missing Chromium (the test FAILS: a page or
# picture must not pass unseen; scripts/setup.sh installs Debian's chromium) and one set of flags
# for a headless, offline run.
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "FAIL chromium not found: install Debian's chromium package (scripts/setup.sh) or set CHROMIUM"
  exit 1
fi

# headless_chromium PROFILE_DIR ARGS...: Chromium headless with a fresh profile, no network
# (every host unresolvable), logging to stderr; at most 120 s.
headless_chromium() {
  local profile=$1
  shift
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --host-resolver-rules="MAP * ~NOTFOUND" --enable-logging=stderr --v=0 "$@"
}
