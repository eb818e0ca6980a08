#!/usr/bin/env python3
"""Fetch -> active over a local http source, answered over the control socket: each round publishes
a changed document on python's http.server, sends `{"op":"fetch","force":true,"wait":true}` to the
daemon's socket and times until the answer line (the daemon answers after the fetch, the store and
the activation have committed). No CLI process in the figure. Two documents: a small one (ROUNDS
rounds, default 100) and a 3,000-parameter template (ROUNDS / 10, at least 10).
Targets (issue 30): small p50 <= 3 ms; template median <= 10 ms. Beside the small one's p50, the
daemon's CPU time per fetch (utime + stime over the timed rounds): the wall clock on a shared machine
moves with its load, the CPU time much less.

Usage: bench/fetch.py BIN_DIR [ROUNDS]
"""
import json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import HTTPAgent, cpu_ms, forced_fetch, report, wait_for

bin_dir = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
agent = HTTPAgent("rcbench-fetch-")


def publish(doc):
    agent.publish(json.dumps(doc))


def small(version):
    return {"state": "UPDATE", "templateVersion": str(version), "entries": {"bench": f"v{version}", "other": "same"}}


def template(version):
    params = {f"param_{k:04d}": {"defaultValue": {"value": f"value {k} of template {version}"}} for k in range(3000)}
    return {"version": {"versionNumber": str(version)}, "parameters": params, "conditions": []}


def fetch():
    return forced_fetch(agent.sock)


agent.serve()
daemon = None
try:
    publish(small(0))
    daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_for(lambda: os.path.exists(agent.sock), "the daemon did not start")
    fetch()
    for version in range(1, 11):  # warm-up
        publish(small(version))
        fetch()
    times = []
    cpu_before = cpu_ms(daemon.pid)
    for version in range(11, rounds + 11):
        publish(small(version))
        times.append(fetch())
    small_cpu = (cpu_ms(daemon.pid) - cpu_before) / rounds  # steadier than the wall clock on a loaded machine
    for version in range(rounds + 11, rounds + 13):  # warm-up
        publish(template(version))
        fetch()
    big = []
    cpu_before = cpu_ms(daemon.pid)
    for version in range(rounds + 13, rounds + 13 + max(10, rounds // 10)):
        publish(template(version))
        big.append(fetch())
    big_cpu = (cpu_ms(daemon.pid) - cpu_before) / len(big)
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    agent.stop()
    subprocess.run(["rm", "-rf", agent.work])
p50, p99 = statistics.median(times), statistics.quantiles(times, n=100)[98]
print(f"small changed document, forced fetch over http -> active, answered ({len(times)} rounds): "
      f"p50 {p50:.2f} ms, p99 {p99:.2f} ms (target p50 <= 3); the daemon's CPU {small_cpu:.2f} ms a fetch")
print(f"3,000-parameter template ({len(big)} rounds): median {statistics.median(big):.1f} ms, "
      f"max {max(big):.1f} ms (target <= 10); the daemon's CPU {big_cpu:.1f} ms a fetch")
report("fetch", [
    {"id": "fetch.small.p50", "figure": "small changed document: forced fetch over http -> active, answered, p50",
     "value": round(p50, 2), "unit": "ms", "target": {"op": "<=", "value": 3}, "peers": {"p99_ms": round(p99, 2), "daemon_cpu_ms_per_fetch": round(small_cpu, 2)}},
    {"id": "fetch.template3000.median", "figure": "3,000-parameter template: forced fetch over http -> active, median",
     "value": round(statistics.median(big), 1), "unit": "ms", "target": {"op": "<=", "value": 10},
     "peers": {"max_ms": round(max(big), 1), "daemon_cpu_ms_per_fetch": round(big_cpu, 1)}},
])
