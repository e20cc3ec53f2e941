#!/bin/sh
# The installed unit must be one systemd accepts: systemd-analyze verify on
# the generated domprof.service, pointed at the daemon just built (the
# installed path does not exist yet).  Skipped (77) without systemd-analyze.
set -e
command -v systemd-analyze >/dev/null 2>&1 || { echo "no systemd-analyze: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|^ExecStart=[^ ]*/oprofiled |ExecStart=$OPROFILED |" domprof.service >"$tmp/domprof.service"
grep -q "^ExecStart=$OPROFILED --foreground" "$tmp/domprof.service"
grep -q '^After=.*libvirtd.service' "$tmp/domprof.service"
grep -q '^EnvironmentFile=-.*/domprof.conf$' "$tmp/domprof.service"
SYSTEMD_LOG_LEVEL=err systemd-analyze verify --man=no "$tmp/domprof.service"
echo "domprof.service verified"
