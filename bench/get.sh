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

# Peers on the same 3,000 keys: jq on a JSON file, and redis-cli against a local redis-server.
seq 1 3000 | awk 'BEGIN { printf "{" } { printf "%s\"key_%d\": \"value of key %d\"", (NR > 1 ? "," : ""), $1, $1 } END { print "}" }' > "$work/values.json"
peers=(-n "jq .key" "jq -r .$key $work/values.json")
if command -v redis-server >/dev/null; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
  redis=$!
  trap 'kill $redis 2>/dev/null; rm -rf "$work"' EXIT
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
  for i in $(seq 1 3000); do printf 'SET key_%d "value of key %d"\n' "$i" "$i"; done | redis-cli -p "$port" >/dev/null
  peers+=(-n "redis-cli GET" "redis-cli -p $port GET $key")
fi

hyperfine --warmup 20 --runs 300 -N --export-json "$work/get.json" \
  -n "rcagent get" "$bin/rcagent get $key" \
  -n "sqlite3 select" "sqlite3 $work/state/state.db \"select value from active_values where key='$key'\"" \
  "${peers[@]}" >&2

jq -r '
  (.results[0].mean) as $a | (.results[1].mean) as $b |
  (.results[] | "\(.command | . + "                " | .[0:16]) \(.mean * 1000 * 1000 | round / 1000) ms"),
  "ratio rcagent/sqlite3: \($a / $b * 1000 | round / 1000) (SPEC §9 target <= 1.5)"
' "$work/get.json"
