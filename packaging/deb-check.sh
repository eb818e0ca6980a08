#!/bin/sh
# The packages as a device and an operator host would get them: builds both twice (the second a
# higher version, for the upgrade), checks their man pages at 80 columns (manpage-check.sh), lints
# them, checks what the binaries link, installs the device package on this machine, runs the daemon
# as the rcagent user against the installed config, upgrades with an edited conffile and state to
# keep, and purges; installs the operator package and runs its relay, as an unprivileged user,
# between a local fake Firebase project and a real mosquitto, then purges it. On the way it proves
# the device's one executable loads no optional library it does not use (the loader's own list for
# `rcagent get`, the running daemon's maps), and runs it in a clean root holding only the package's
# Depends: an MQTT config names the missing libmosquitto, a file source serves. Needs root.
# Usage: packaging/deb-check.sh BIN_DIR
set -eu
# The installed config is the one under test: a RCAGENT_CONFIG left in the shell (as `make run`
# suggests exporting) would point the installed programs at another state directory.
unset RCAGENT_CONFIG
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
work=$(mktemp -d)
daemon=
helpers=
# stop_job JOB WHAT [PID]: SIGTERM to PID (default: the job itself), then waits, 10 s at most, for
# the background job JOB of this script to end, and reaps it.
stop_job() {
    kill "${3:-$1}"
    i=0
    while ps -o stat= -p "$1" | grep -q '^[^Z]'; do
        i=$((i + 1)); [ $i -lt 100 ] || fail "$2 did not stop on SIGTERM"
        sleep 0.1
    done
    wait "$1" || true
}
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    for pid in $helpers; do kill -9 "$pid" 2>/dev/null || true; done
    for package in rcagent rcadmin; do
        dpkg -s $package >/dev/null 2>&1 && dpkg --purge $package >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap cleanup EXIT
step() { printf '== %s\n' "$*"; }
fail() { printf 'deb-check: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (installs the package on this machine)"
for package in rcagent rcadmin; do
    dpkg -s $package >/dev/null 2>&1 && fail "$package is already installed here; refusing to touch it"
done

step "build"
"$root/packaging/build-deb.sh" "$bin" "$work/v1" > "$work/v1.list"
deb=$(sed -n 1p "$work/v1.list")
admin=$(sed -n 2p "$work/v1.list")
version=$(dpkg-deb -f "$deb" Version)
deb2=$("$root/packaging/build-deb.sh" "$bin" "$work/v2" "$version+rebuild1" | sed -n 1p)
ls -l "$deb" "$admin" | awk '{print "package size: " $5 " bytes " $9}'

step "man pages read at 80 columns: no troff warning, no line over 80 columns"
"$root/packaging/manpage-check.sh"

step "lintian"
lintian --fail-on error,warning "$deb" "$admin"

step "binaries link nothing from the Swift toolchain; the device package has no operator tool"
mkdir "$work/extract"
dpkg-deb -x "$deb" "$work/extract"
dpkg-deb -x "$admin" "$work/extract"
dpkg-deb -c "$deb" | grep -q 'usr/bin/rcadmin' && fail "the device package carries rcadmin"
# The update check's settings ship commented, as a conffile: an edit survives an upgrade.
[ -f "$work/extract/etc/default/rcagent-update-check" ] || fail "no /etc/default/rcagent-update-check"
dpkg-deb -I "$deb" conffiles | grep -qx /etc/default/rcagent-update-check ||
    fail "/etc/default/rcagent-update-check is not a conffile"
[ "$(readlink "$work/extract/usr/bin/rcagentd")" = rcagent ] || fail "rcagentd is not a link to rcagent"
for program in rcagent rcagentd rcadmin; do
    file=$work/extract/usr/bin/$program
    [ -L "$file" ] && size="a link to $(readlink "$file")" || size="$(stat -c %s "$file") bytes"
    echo "$program: $size; needs: $(readelf -d "$file" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    if readelf -d "$file" | grep -E 'NEEDED.*(swift|Foundation|dispatch|BlocksRuntime|_Testing)'; then fail "$program needs a toolchain library"; fi
    if ldd "$file" | grep -E '/opt/swift|not found'; then fail "$program resolves libraries outside Debian"; fi
done
# The libraries only some features need are loaded on first use (Sources/CLazyLibraries), by both programs.
for program in rcagent rcadmin; do
    if readelf -d "$work/extract/usr/bin/$program" | grep -E 'NEEDED.*(curl|mosquitto|crypto|pcre2|systemd)'; then
        fail "$program links a library it should load on first use"
    fi
done
# libgcc's unwinder is linked in (-static-libgcc, Makefile): loading libgcc_s cost `rcagent get` 4%.
# The daemon still needs the library (pthread_exit): the control file names libgcc-s1 itself.
if readelf -d "$work/extract/usr/bin/rcagent" | grep -E 'NEEDED.*libgcc_s'; then fail "rcagent loads libgcc_s"; fi

step "no library search path in the binaries: a library beside a copy of them is never loaded"
# DT_RUNPATH=$ORIGIN (SwiftPM's default) made the loader look beside the executable first, for
# libsqlite3 at start and for every library loaded on first use: whoever can write to the directory
# of a copy (here one anyone can write to) would run code in it. The Makefile links with
# --disable-local-rpath; Sources/CLazyLibraries loads by soname.
for program in rcagent rcadmin; do
    if readelf -d "$work/extract/usr/bin/$program" | grep -E 'RPATH|RUNPATH'; then fail "$program carries a library search path"; fi
done
beside=$work/beside
mkdir "$beside"
chmod 1777 "$beside"
cp "$work/extract/usr/bin/rcagent" "$work/extract/usr/bin/rcadmin" "$beside/"
# Each fake announces itself and ends the program the moment it is loaded.
printf '#include <unistd.h>\n__attribute__((constructor)) static void loaded(void) { write(2, "FAKE LIBRARY LOADED\\n", 20); _exit(97); }\n' > "$work/fake.c"
for soname in libsqlite3.so.0 libcurl.so.4 libcrypto.so.3 libmosquitto.so.1 libpcre2-8.so.0; do
    cc -shared -fPIC -o "$beside/$soname" "$work/fake.c" || fail "cannot build the fake $soname"
done
"$beside/rcagent" --version >/dev/null 2>"$work/beside.log" || fail "the copy beside a fake libsqlite3 failed: $(cat "$work/beside.log")"
# A Google call signs with libcrypto and sends with libcurl, both loaded on first use; the token
# endpoint refuses the connection. LD_DEBUG shows both were loaded, from the system.
openssl genrsa -out "$work/beside-key.pem" 2048 2>/dev/null
python3 -c 'import json, sys; print(json.dumps({"type": "service_account", "project_id": "deb-check", "private_key_id": "k", "private_key": open(sys.argv[1]).read(), "client_email": "deb-check@deb-check.iam.gserviceaccount.com", "token_uri": "http://127.0.0.1:1/token"}))' \
    "$work/beside-key.pem" > "$work/beside-key.json"
chmod 0600 "$work/beside-key.json"
status=0
LD_DEBUG=files "$beside/rcadmin" template get --service-account "$work/beside-key.json" --endpoint http://127.0.0.1:1 \
    >/dev/null 2>"$work/beside.log" || status=$?
if grep 'FAKE LIBRARY LOADED' "$work/beside.log" || [ $status = 97 ]; then fail "a library beside rcadmin was loaded"; fi
for soname in libcrypto.so.3 libcurl.so.4; do
    grep -q "calling init: /.*/$soname" "$work/beside.log" || fail "rcadmin did not load $soname from the system: $(grep -v 'file=' "$work/beside.log" | tail -3)"
done
if grep "calling init: $beside" "$work/beside.log"; then fail "a library beside rcadmin was loaded"; fi

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
for page in rcagent.1 rcagentd.8 agent.conf.5; do
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

step "rcagent get loads no libcurl, libmosquitto, optional library or toolchain library; nor does the idle daemon"
# LD_DEBUG=files: the loader lists every object it loads, at start-up or by dlopen later.
LD_DEBUG=files rcagent get kiosk_url 2>"$work/get.loaded" >/dev/null
grep -q 'file=libsqlite3' "$work/get.loaded" || fail "LD_DEBUG listed nothing: $(head -3 "$work/get.loaded")"
if grep 'file=' "$work/get.loaded" | grep -E 'curl|mosquitto|crypto|pcre2|systemd|swift|Foundation|dispatch|BlocksRuntime'; then
    fail "rcagent get loads a library it does not need"
fi
# The daemon is runuser's child (or runuser itself, had it exec'd); with no source configured it has no use for any optional library.
daemon_pid=$(ps -o pid= --ppid "$daemon" | tr -d ' ')
[ -n "$daemon_pid" ] || daemon_pid=$daemon
grep -q libsqlite3 "/proc/$daemon_pid/maps" || fail "cannot read the daemon's maps"
if grep -E 'curl|mosquitto|crypto|pcre2|swift|Foundation' "/proc/$daemon_pid/maps"; then
    fail "the idle daemon maps a library it does not use"
fi
rcagent mark-stale --reason "deb-check" >/dev/null
device=$(rcagent status --json | sed -n 's/.*"deviceId":"\([^"]*\)".*/\1/p')
[ -n "$device" ] || fail "no device id"
stop_daemon

step "a device with only the Depends: MQTT configured names libmosquitto, a file source serves"
jail=$work/jail
# libgcc_s: a Depends no executable names (-static-libgcc), which glibc loads when the daemon's main
# thread exits into dispatchMain (pthread_exit unwinds it); without it the daemon aborts there.
sh "$root/Tests/Fixtures/clean_root.sh" "$jail" /usr/bin/rcagent libpcre2-8.so.0 libcrypto.so.3 libgcc_s.so.1
mkdir -p "$jail/proc" "$jail/etc/rc"
printf '{"kiosk_url": "https://example.com/jail"}' > "$jail/etc/rc/defaults.json"
printf '[Agent]\nStateDirectory=/tmp/state\nSocket=/tmp/agent.sock\nSocketGroup=\nDefaults=/etc/rc/defaults.json\n' > "$jail/etc/rc/file.conf"
cp "$jail/etc/rc/file.conf" "$jail/etc/rc/mqtt.conf"
printf '[Push]\nMQTT=mqtt://127.0.0.1:1\n' >> "$jail/etc/rc/mqtt.conf"
# /proc mounted for it in a mount namespace that ends with the program. `in_jail_exec` replaces the
# calling shell with unshare, so that a background `(in_jail_exec ...) &` leaves $! the pid of unshare
# itself: killing it ends the program (--kill-child). Killing a subshell around it would not, and the
# jailed daemon would outlive deb-check.
in_jail_exec() { exec unshare --mount --fork --kill-child=SIGTERM sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$jail" "$@"; }
in_jail() { (in_jail_exec "$@"); }
if in_jail /usr/bin/rcagentd --config /etc/rc/mqtt.conf 2>"$work/jail-mqtt.log"; then fail "rcagentd started with MQTT and no libmosquitto"; fi
cat "$work/jail-mqtt.log"
grep -q 'MQTT needs libmosquitto.so.1.*apt install libmosquitto1' "$work/jail-mqtt.log" || fail "no clear error for the missing libmosquitto"
(in_jail_exec /usr/bin/rcagentd --config /etc/rc/file.conf) 2>"$work/jail-file.log" &
jailed=$!
helpers="$helpers $jailed"
i=0
until [ "$(in_jail /usr/bin/rcagent --config /etc/rc/file.conf get kiosk_url 2>/dev/null)" = "https://example.com/jail" ]; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/jail-file.log"; fail "the daemon without the recommended libraries does not serve"; }
    sleep 0.1
done
# unshare --fork blocks SIGTERM while it waits for its child: the daemon itself is stopped, and
# unshare ends with it (the cleanup's SIGKILL of unshare takes the daemon along: --kill-child).
daemon_in_jail=$(ps -o pid= --ppid "$jailed" | tr -d ' ')
[ -n "$daemon_in_jail" ] || fail "no daemon under unshare"
stop_job "$jailed" "the daemon in the clean root" "$daemon_in_jail"

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

step "the operator package: install, man page, unit"
dpkg -i "$admin"
rcadmin --version | grep -qx "rcadmin $version" || fail "rcadmin --version"
man -w 1 rcadmin >/dev/null 2>&1 || fail "man page rcadmin.1 is not installed"
systemd-analyze verify /lib/systemd/system/rcadmin-relay.service

step "the relay, as an unprivileged user, pings a real mosquitto for a template published on a fake project"
fake=$work/firebase
mkdir -p "$fake" "$work/relay-state"
chmod 0755 "$work"  # the relay's user reads its config here
chown nobody "$work/relay-state"
printf '{"template": {"version": 7, "entries": {}}}' > "$fake/mode.json"
python3 "$root/Tests/Fixtures/firebase_server.py" "$fake" > "$work/firebase.port" &
helpers="$helpers $!"
mqtt_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\n' "$mqtt_port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" 2>"$work/mosquitto.log" &
helpers="$helpers $!"
i=0
until [ -s "$work/firebase.port" ] && mosquitto_pub -p "$mqtt_port" -t deb-check -n 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the fake Firebase project or mosquitto did not start"
    sleep 0.1
done
sed -e "s|^ProjectId=.*|ProjectId=deb-check|" -e "s|^APIKey=.*|APIKey=deb-check-key\nEndpoint=http://127.0.0.1:$(cat "$work/firebase.port")|" \
    -e "s|^MQTT=.*|MQTT=mqtt://127.0.0.1:$mqtt_port|" -e "s|^StateDirectory=.*|StateDirectory=$work/relay-state|" \
    /usr/share/doc/rcadmin/examples/relay.conf > "$work/relay.conf"
# A persistent session subscribed before the relay starts (-E: exit once the broker acknowledged
# the subscription), read after it (-W: a bound for a failing check only).
session="-p $mqtt_port -t PUSH_RC -q 1 -c -i deb-check"
mosquitto_sub $session -E
mosquitto_sub $session -C 1 -W 30 > "$work/ping" &
subscriber=$!
helpers="$helpers $subscriber"
# setpriv execs the relay as nobody (runuser would stay its parent, and a kill of runuser would
# leave the relay running): $! is the relay.
setpriv --reuid=nobody --regid=nogroup --clear-groups rcadmin relay --config "$work/relay.conf" 2>"$work/relay.log" &
relay=$!
helpers="$helpers $relay"
wait "$subscriber" || { cat "$work/relay.log"; fail "no stale ping reached the broker"; }
grep -qx '{"data":{"CONFIG_STATE":"STALE","templateVersion":"7"}}' "$work/ping" || fail "unexpected ping: $(cat "$work/ping")"
# The relay records the version once the broker acknowledged the ping, which can be after the
# subscriber got it: wait for the record (the bound is for a failing check only).
i=0
until grep -q '"relayed":{"mqtt mqtt://127.0.0.1:'"$mqtt_port"' PUSH_RC":7}' "$work/relay-state/relay.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/relay.log"; fail "the relay did not record version 7"; }
    sleep 0.1
done
stop_job "$relay" "the relay"
dpkg --purge rcadmin
[ ! -e /usr/bin/rcadmin ] || fail "purge left /usr/bin/rcadmin"
echo "deb-check: passed"
