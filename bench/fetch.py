#!/usr/bin/env python3
"""Fetch -> active over a local http source, answered over the control socket: each round publishes
a changed document, sends `{"op":"fetch","force":true,"wait":true}` to the daemon's socket and times
until the answer line (the daemon answers after the fetch, the store and the activation have
committed). No CLI process in the figure. Two documents: a small one (ROUNDS rounds, default 100)
and a 3,000-parameter template (ROUNDS / 10, at least 10), the template three ways: every value
changed at each round (the figure with the target), one value changed, and not changed at all (not
published again: each forced fetch is a conditional request, answered 304).

The document is served by nginx, as a CDN edge serves a static file: the figure is the agent's, not
the server's. Beside it, in the same run, the small document from python's http.server (HTTP/1.0, a
thread per request: about 1 ms of its own a request), the server earlier runs used: two daemons of
the same build, one per server, taking turns round by round so the machine's load lands on both alike.
Targets (issue 30): small p50 <= 3 ms; template median <= 10 ms. Beside each, the daemon's CPU time
per fetch (utime + stime over the timed rounds): the wall clock on a shared machine moves with its
load, the CPU time much less.

Usage: bench/fetch.py BIN_DIR [ROUNDS]
"""
import json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import HTTPAgent, cpu_ms, forced_fetch, listening, report, small_document as small, wait_for

bin_dir = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100


def template(version, changed=3000):
    """Template `version`: its first `changed` values name the version, the others are always the same."""
    def value(k):
        return f"value {k} of template {version if k < changed else 0}"
    params = {f"param_{k:04d}": {"defaultValue": {"value": value(k)}} for k in range(3000)}
    return json.dumps({"version": {"versionNumber": str(version)}, "parameters": params, "conditions": []})


class Side:
    """One http server and a daemon fetching from it."""

    def __init__(self, server):
        self.agent = HTTPAgent(f"rcbench-fetch-{server}-")
        self.daemon = None
        self.agent.serve(server)
        self.agent.publish(small(0))
        self.daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=self.agent.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        wait_for(lambda: listening(self.agent.sock), "the daemon did not start")
        self.fetch()

    def fetch(self):
        return forced_fetch(self.agent.sock)

    def round(self, document):
        self.agent.publish(document)
        return self.fetch()

    def stop(self):
        if self.daemon:
            self.daemon.terminate()
            self.daemon.wait()
        self.agent.stop()
        subprocess.run(["rm", "-rf", self.agent.work])


sides = {}
try:
    for server in ("nginx", "python"):
        sides[server] = Side(server)
    nginx, python = sides["nginx"], sides["python"]
    for version in range(1, 11):  # warm-up
        for side in sides.values():
            side.round(small(version))
    times = {name: [] for name in sides}
    cpu_before = {name: cpu_ms(side.daemon.pid) for name, side in sides.items()}
    for version in range(11, rounds + 11):
        order = list(sides.items()) if version % 2 else list(reversed(sides.items()))
        for name, side in order:
            times[name].append(side.round(small(version)))
    # Each daemon only works during its own fetches: steadier than the wall clock on a loaded machine.
    small_cpu = {name: (cpu_ms(side.daemon.pid) - cpu_before[name]) / rounds for name, side in sides.items()}
    for name, side in sides.items():  # each round activated a new version (not a 304: see publish)
        value = subprocess.run([f"{bin_dir}/rcagent", "get", "bench"], env=side.agent.env, capture_output=True,
                               text=True).stdout.strip()
        if value != f"v{rounds + 10}":
            raise SystemExit(f"{name}: the last small document is not active ({value!r})")
    for version in range(rounds + 11, rounds + 13):  # warm-up
        nginx.round(template(version))
    big = []
    cpu_before = cpu_ms(nginx.daemon.pid)
    template_rounds = max(10, rounds // 10)
    for version in range(rounds + 13, rounds + 13 + template_rounds):
        big.append(nginx.round(template(version)))
    big_cpu = (cpu_ms(nginx.daemon.pid) - cpu_before) / len(big)
    # The same template, one value changed at each round; then not changed (a 304 at each round).
    one, unchanged = [], []
    cpu_before = cpu_ms(nginx.daemon.pid)
    for version in range(rounds + 13 + template_rounds, rounds + 13 + 2 * template_rounds):
        one.append(nginx.round(template(version, changed=1)))
    one_cpu = (cpu_ms(nginx.daemon.pid) - cpu_before) / len(one)
    cpu_before = cpu_ms(nginx.daemon.pid)
    for _ in range(template_rounds):
        unchanged.append(nginx.fetch())
    unchanged_cpu = (cpu_ms(nginx.daemon.pid) - cpu_before) / len(unchanged)
finally:
    for side in sides.values():
        side.stop()
p50 = {name: statistics.median(t) for name, t in times.items()}
p99 = {name: statistics.quantiles(t, n=100)[98] for name, t in times.items()}
print(f"small changed document, forced fetch over http (nginx) -> active, answered ({rounds} rounds): "
      f"p50 {p50['nginx']:.2f} ms, p99 {p99['nginx']:.2f} ms (target p50 <= 3); "
      f"the daemon's CPU {small_cpu['nginx']:.2f} ms a fetch")
print(f"  the same from python's http.server, interleaved: p50 {p50['python']:.2f} ms, p99 {p99['python']:.2f} ms; "
      f"the daemon's CPU {small_cpu['python']:.2f} ms a fetch")
print(f"3,000-parameter template (nginx, {len(big)} rounds): median {statistics.median(big):.1f} ms, "
      f"max {max(big):.1f} ms (target <= 10); the daemon's CPU {big_cpu:.1f} ms a fetch")
print(f"  one value of the 3,000 changed: median {statistics.median(one):.1f} ms; the daemon's CPU {one_cpu:.1f} ms; "
      f"not changed (304): median {statistics.median(unchanged):.1f} ms; the daemon's CPU {unchanged_cpu:.1f} ms")
report("fetch", [
    {"id": "fetch.small.p50",
     "figure": "small changed document: forced fetch over http (nginx) -> active, answered, p50",
     "value": round(p50["nginx"], 2), "unit": "ms", "target": {"op": "<=", "value": 3},
     "peers": {"p99_ms": round(p99["nginx"], 2), "daemon_cpu_ms_per_fetch": round(small_cpu["nginx"], 2)}},
    {"id": "fetch.small.python.p50",
     "figure": "  the same from python's http.server (interleaved), p50",
     "value": round(p50["python"], 2), "unit": "ms",
     "peers": {"p99_ms": round(p99["python"], 2), "daemon_cpu_ms_per_fetch": round(small_cpu["python"], 2)}},
    {"id": "fetch.template3000.median",
     "figure": "3,000-parameter template: forced fetch over http (nginx) -> active, median",
     "value": round(statistics.median(big), 1), "unit": "ms", "target": {"op": "<=", "value": 10},
     "peers": {"max_ms": round(max(big), 1), "daemon_cpu_ms_per_fetch": round(big_cpu, 1)}},
    {"id": "fetch.template3000.one.median",
     "figure": "  the same, one value of the 3,000 changed, median",
     "value": round(statistics.median(one), 1), "unit": "ms",
     "peers": {"daemon_cpu_ms_per_fetch": round(one_cpu, 1)}},
    {"id": "fetch.template3000.unchanged.median",
     "figure": "  the same, not changed (a 304), median",
     "value": round(statistics.median(unchanged), 1), "unit": "ms",
     "peers": {"daemon_cpu_ms_per_fetch": round(unchanged_cpu, 1)}},
])
