#!/usr/bin/env bash
# SPEC §9: the daemon idle — proportional set size (smaps_rollup) and CPU time used over 60 s with
# nothing to do (file source, fetched, no pushes). Target: PSS <= 8 MiB; CPU only timers/watchdog.
# Usage: bench/idle.sh BIN_DIR [SECONDS]
set -euo pipefail
bin=${1:?usage: bench/idle.sh BIN_DIR [SECONDS]}
seconds=${2:-60}
work=$(mktemp -d)
cat > "$work/agent.conf" <<CONF
[Agent]
StateDirectory=$work/state
Socket=$work/agent.sock
SocketGroup=
Defaults=$work/defaults.json
[Source]
Type=file
Path=$work/remote.json
CONF
echo '{"kiosk_url": "https://example.com"}' > "$work/defaults.json"
echo '{"state": "UPDATE", "templateVersion": "1", "entries": {"kiosk_url": "https://example.com/remote"}}' > "$work/remote.json"
"$bin/rcagentd" --config "$work/agent.conf" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until RCAGENT_CONFIG="$work/agent.conf" "$bin/rcagent" fetch --wait >/dev/null 2>&1; do sleep 0.1; done
sleep 2
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$seconds"
after=$(ticks)
pss=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup")
rss=$(awk '/^Rss:/ { print $2 }' "/proc/$pid/smaps_rollup")
echo "rcagentd idle: PSS $((pss / 1024)).$(( (pss % 1024) * 10 / 1024 )) MiB (RSS $((rss / 1024)) MiB), CPU $(( (after - before) * 1000 / hz )) ms over ${seconds}s (SPEC §9 target PSS <= 8 MiB)"
