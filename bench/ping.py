#!/usr/bin/env python3
"""Performance target: socket ping -> new value visible to `rcagent get`, p50/p99 over 200 rounds, and the time
for a 3,000-parameter template to be fetched, stored and activated after a ping.

The daemon runs on a `file` source whose configured path is a symlink into another directory: the
daemon's file watcher sees only its own directory, so the ping over the control socket is what
triggers each fetch (not inotify). Each round writes a new version, sends one ping, and runs
`rcagent get` until it prints the new value.

Usage: bench/ping.py BIN_DIR [ROUNDS]
"""
import json, os, socket, statistics, subprocess, sys, time

from agentsetup import FileAgent, listening

bin_dir = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
agent = FileAgent("rcbench-")
work, conf, sock, env = agent.work, agent.conf, agent.sock, agent.env
data = os.path.join(work, "data")
os.makedirs(data)
target = os.path.join(data, "remote.json")
os.symlink(target, agent.remote)


def report(figures):
    """Hands the figures to bench/run.py (RCBENCH_OUT) when it runs this script."""
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], "ping.json"), "w") as f:
            json.dump(figures, f)


def publish(doc):
    tmp = target + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, target)


def ping():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b'{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}\n')
    reply = s.makefile().readline()
    s.close()
    assert '"ok":true' in reply, reply


def get(key):
    return subprocess.run([f"{bin_dir}/rcagent", "get", key], env=env, capture_output=True, text=True).stdout.strip()


def wait_visible(key, expected):
    start = time.perf_counter()
    while get(key) != expected:
        if time.perf_counter() - start > 10:
            raise SystemExit(f"value {expected} never became visible")
    return time.perf_counter()


publish({"state": "UPDATE", "templateVersion": "0", "entries": {"bench": "v0"}})
daemon = subprocess.Popen([f"{bin_dir}/rcagentd", "--config", conf], env=env, stderr=open(os.environ.get("RCBENCH_LOG", os.devnull), "w"))
try:
    deadline = time.time() + 10
    while not listening(sock):
        if time.time() > deadline:
            raise SystemExit("daemon did not start")
        time.sleep(0.01)
    wait_visible("bench", "v0")

    latencies = []
    for i in range(1, rounds + 1):
        publish({"state": "UPDATE", "templateVersion": str(i), "entries": {"bench": f"v{i}"}})
        t0 = time.perf_counter()
        ping()
        latencies.append((wait_visible("bench", f"v{i}") - t0) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"ping -> visible ({rounds} rounds): p50 {p50:.2f} ms, p99 {p99:.2f} ms (target p50 <= 15, p99 <= 50)")

    big = []
    for i in range(10):
        version = rounds + 1 + i
        params = {f"param_{k:04d}": {"defaultValue": {"value": f"value {k} of template {version}"}} for k in range(3000)}
        publish({"parameters": params, "version": {"versionNumber": str(version)}})
        t0 = time.perf_counter()
        ping()
        big.append((wait_visible("param_2999", f"value 2999 of template {version}") - t0) * 1000)
    print(f"3,000-parameter template ping -> active (10 rounds): median {statistics.median(big):.1f} ms, max {max(big):.1f} ms (target <= 50)")
    report([
        {"id": "ping.p50", "figure": f"socket ping -> value visible, p50 ({rounds} rounds)", "value": round(p50, 2),
         "unit": "ms", "target": {"op": "<=", "value": 15}, "peers": {"p90_ms": round(latencies[int(len(latencies) * 0.9)], 2),
         "max_ms": round(latencies[-1], 2), "min_ms": round(latencies[0], 2)}},
        {"id": "ping.p99", "figure": f"socket ping -> value visible, p99 ({rounds} rounds)", "value": round(p99, 2),
         "unit": "ms", "target": {"op": "<=", "value": 50}},
        {"id": "template3000.median", "figure": "3,000-parameter template ping -> active, median of 10",
         "value": round(statistics.median(big), 1), "unit": "ms", "target": {"op": "<=", "value": 50},
         "peers": {"max_ms": round(max(big), 1), "min_ms": round(min(big), 1)}},
    ])
finally:
    daemon.terminate()
    daemon.wait()
    subprocess.run(["rm", "-rf", work])
