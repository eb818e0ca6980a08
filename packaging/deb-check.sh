#!/bin/sh
# The package as a device would get it (issue: "installs cleanly on a device without Swift").
# Builds it twice (the second a higher version, for the upgrade), lints it, checks what the
# binaries link, installs it on this machine, runs the daemon as the rcagent user against the
# installed config, upgrades with an edited conffile and state to keep, and purges. Needs root.
# Usage: packaging/deb-check.sh BIN_DIR
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
work=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    dpkg -s rcagent >/dev/null 2>&1 && dpkg --purge rcagent >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
step() { printf '== %s\n' "$*"; }
fail() { printf 'deb-check: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (installs the package on this machine)"
dpkg -s rcagent >/dev/null 2>&1 && fail "rcagent is already installed here; refusing to touch it"

step "build"
deb=$("$root/packaging/build-deb.sh" "$bin" "$work/v1")
version=$(dpkg-deb -f "$deb" Version)
deb2=$("$root/packaging/build-deb.sh" "$bin" "$work/v2" "$version+rebuild1")
ls -l "$deb" | awk '{print "package size: " $5 " bytes"}'

step "lintian"
lintian --fail-on error,warning "$deb"

step "binaries link nothing from the Swift toolchain"
mkdir "$work/extract"
dpkg-deb -x "$deb" "$work/extract"
for program in rcagent rcagentd rcadmin; do
    file=$work/extract/usr/bin/$program
    echo "$program: $(stat -c %s "$file") bytes; needs: $(readelf -d "$file" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    if readelf -d "$file" | grep -E 'NEEDED.*(swift|Foundation|dispatch|BlocksRuntime|_Testing)'; then fail "$program needs a toolchain library"; fi
    if ldd "$file" | grep -E '/opt/swift|not found'; then fail "$program resolves libraries outside Debian"; fi
done
if readelf -d "$work/extract/usr/bin/rcagent" | grep -E 'NEEDED.*(curl|mosquitto)'; then fail "rcagent links libcurl or libmosquitto"; fi

step "install"
dpkg -i "$deb"
getent passwd rcagent >/dev/null || fail "postinst did not create the rcagent user"
rcagent --version | grep -qx "rcagent $(sed -n 's/.*version = "\(.*\)".*/\1/p' "$root/Sources/RCCore/BuildInfo.swift")" || fail "rcagent --version"
for dir in /var/lib/rcagent /run/rcagent; do
    [ "$(stat -c %U:%G:%a "$dir" 2>/dev/null)" = rcagent:rcagent:755 ] || fail "postinst did not create $dir (rcagent:rcagent 0755)"
done

step "postinst creates /run/rcagent without systemd-tmpfiles (a container or chroot without systemd)"
# A systemd-tmpfiles that fails stands in for one that is missing: postinst must not rely on it.
mkdir "$work/no-tmpfiles"
printf '#!/bin/sh\nexit 1\n' > "$work/no-tmpfiles/systemd-tmpfiles"
chmod 0755 "$work/no-tmpfiles/systemd-tmpfiles"
rmdir /run/rcagent
PATH="$work/no-tmpfiles:$PATH" /var/lib/dpkg/info/rcagent.postinst configure >/dev/null
[ "$(stat -c %U:%G:%a /run/rcagent 2>/dev/null)" = rcagent:rcagent:755 ] || fail "postinst without systemd-tmpfiles did not create /run/rcagent"
for page in rcagent.1 rcagentd.8 agent.conf.5 rcadmin.1; do
    name=${page%.*} section=${page##*.}
    man -w "$section" "$name" >/dev/null 2>&1 || fail "man page $page is not installed"
done
man 5 agent.conf 2>/dev/null | grep -q 'MinimumFetchInterval' || fail "agent.conf(5) lacks the documented keys"

step "systemd-analyze verify"
systemd-analyze verify /lib/systemd/system/rcagentd.service /lib/systemd/system/rcagent-update-check.service

step "run rcagentd as the rcagent user with the installed config"
start_daemon() {
    runuser -u rcagent -- /usr/bin/rcagentd 2>"$work/daemon.log" &
    daemon=$!
    i=0
    until rcagent status --json 2>/dev/null | grep -q '"running":true'; do
        i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/daemon.log"; fail "the daemon did not come up"; }
        sleep 0.1
    done
}
stop_daemon() { kill "$daemon"; wait "$daemon" || true; daemon=; }
start_daemon
[ "$(rcagent get kiosk_url)" = "https://example.com/kiosk" ] || fail "the default value is not served"
rcagent mark-stale --reason "deb-check" >/dev/null
device=$(rcagent status --json | sed -n 's/.*"deviceId":"\([^"]*\)".*/\1/p')
[ -n "$device" ] || fail "no device id"
stop_daemon

step "upgrade keeps state and an edited conffile"
printf '\n# edited by deb-check\n[Agent]\nMinimumFetchInterval=6h\n' >> /etc/rcagent/agent.conf
dpkg -i "$deb2"
grep -q 'edited by deb-check' /etc/rcagent/agent.conf || fail "the edited conffile was replaced"
[ "$(dpkg-query -W -f='${Version}' rcagent)" = "$version+rebuild1" ] || fail "not upgraded"
start_daemon
[ "$(rcagent status --json | sed -n 's/.*"deviceId":"\([^"]*\)".*/\1/p')" = "$device" ] || fail "the device id changed"
rcagent status --json | grep -q '"stale":{"set":true,"reason":"deb-check"' || fail "the stale flag was lost"
[ "$(rcagent get kiosk_url)" = "https://example.com/kiosk" ] || fail "values lost in the upgrade"

step "a source added in a drop-in serves after a reload, as the unit's ExecReload runs it"
printf '{"state":"UPDATE","templateVersion":"1","entries":{"kiosk_url":"https://example.com/reloaded"}}' \
    > /var/lib/rcagent/remote.json
printf '[Source]\nPath=/var/lib/rcagent/remote.json\n' > /etc/rcagent/agent.conf.d/50-deb-check.conf
reload=$(sed -n 's/^ExecReload=//p' /lib/systemd/system/rcagentd.service)
runuser -u rcagent -- $reload | grep -qx 'reloaded: Source.Path changed' || fail "$reload did not apply the drop-in"
i=0
until [ "$(rcagent get kiosk_url)" = "https://example.com/reloaded" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/daemon.log"; fail "the reloaded source is not served"; }
    sleep 0.1
done
rm /etc/rcagent/agent.conf.d/50-deb-check.conf
stop_daemon

step "purge"
dpkg --purge rcagent
[ ! -e /var/lib/rcagent ] || fail "purge left /var/lib/rcagent"
[ ! -e /etc/rcagent/agent.conf ] || fail "purge left /etc/rcagent/agent.conf"
[ ! -e /usr/bin/rcagent ] || fail "purge left /usr/bin/rcagent"
echo "deb-check: passed"
