#!/usr/bin/env bash
# SPEC §9: `rcagent get KEY` on a 3,000-key cache, wall time against `sqlite3 state.db "select ..."`
# doing the same lookup, in the same invocation. Prints both means and the ratio (target ≤ 1.5).
# Usage: bench/get.sh BIN_DIR   (a release build with --static-swift-stdlib)
set -euo pipefail
bin=${1:?usage: bench/get.sh BIN_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/agent.conf" <<CONF
[Agent]
StateDirectory=$work/state
Socket=$work/agent.sock
Defaults=$work/defaults.json
[Source]
Type=file
Path=$work/remote.json
CONF
echo '{}' > "$work/defaults.json"
export RCAGENT_CONFIG="$work/agent.conf"

# Create the schema with the real binary, then fill the active snapshot with 3,000 keys.
"$bin/rcagent" mark-stale --reason bench >/dev/null
{
  echo "BEGIN;"
  for i in $(seq 1 3000); do echo "INSERT INTO active_values VALUES ('key_$i', 'value of key $i');"; done
  echo "COMMIT;"
} | sqlite3 "$work/state/state.db"
# A running daemon checkpoints its WAL; start both readers from the same checkpointed file.
sqlite3 "$work/state/state.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null

key=key_1500
[ "$("$bin/rcagent" get $key)" = "value of key 1500" ] || { echo "rcagent get returned the wrong value" >&2; exit 1; }

hyperfine --warmup 20 --runs 300 -N --export-json "$work/get.json" \
  -n "rcagent get" "$bin/rcagent get $key" \
  -n "sqlite3 select" "sqlite3 $work/state/state.db \"select value from active_values where key='$key'\"" >&2

jq -r '
  (.results[0].mean) as $a | (.results[1].mean) as $b |
  "rcagent get:    \($a * 1000 | . * 1000 | round / 1000) ms\nsqlite3 select: \($b * 1000 | . * 1000 | round / 1000) ms\nratio:          \($a / $b * 1000 | round / 1000) (SPEC §9 target <= 1.5)"
' "$work/get.json"
