#!/usr/bin/env python3
"""Two builds' daemons side by side on the path of bench/fetch.py's template figure: each on its own
http source (python's http.server), each round publishing a changed 3,000-parameter template to both
and timing `{"op":"fetch","force":true,"wait":true}` on each control socket until the answer line
(fetched, evaluated, stored, activated, answered), the two taking turns in a random order so load
from other work on the machine lands on both alike. Also the CPU each daemon used per fetch
(utime + stime over all counted rounds, clock ticks). The first WARMUP rounds are not counted.
Target (issue 30): the new build's median <= 10 ms.

KIND says what changes from round to round: `all` (default) every value; `one` one value of the
3,000 (and the version); `none` nothing: the document is not published again, and each forced fetch
is a conditional request answered 304 (the http source is then nginx, which sends an ETag); `small`
not the template but bench/fetch.py's small document (two values, one changed each round, served by
nginx as there: its p50 target is 3 ms).

Usage: bench/template-ab.py NEW_BIN_DIR OLD_BIN_DIR [ROUNDS [KIND]]   (default 40 each, all)
       (KIND small: default 300 rounds)
"""
import json, os, random, re, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import HTTPAgent, cpu_ms, forced_fetch, listening, report, small_document, wait_for

builds = {"new": os.path.abspath(sys.argv[1]), "old": os.path.abspath(sys.argv[2])}
kind = sys.argv[4] if len(sys.argv) > 4 else "all"
if kind not in ("all", "one", "none", "small"):
    raise SystemExit(f"KIND is all, one, none or small, not {kind!r}")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 300 if kind == "small" else 40
warmup = 5


def template(version):
    if kind == "small":
        return small_document(version)

    def value(k):
        return f"value {k} of template {version if kind == 'all' or k == 0 else 1}"
    params = {f"param_{k:04d}": {"defaultValue": {"value": value(k)}} for k in range(3000)}
    return json.dumps({"version": {"versionNumber": str(version)}, "parameters": params, "conditions": []})


class Side:
    def __init__(self, name):
        self.agent = HTTPAgent(f"rcbench-template-{name}-")
        self.agent.serve("nginx" if kind in ("none", "small") else "python")
        self.agent.publish(template(1))
        self.log_path = os.path.join(self.agent.work, "daemon.log")
        with open(self.log_path, "w") as log:
            self.daemon = subprocess.Popen([f"{builds[name]}/rcagentd"], env=self.agent.env, stdout=log, stderr=log)
        wait_for(lambda: listening(self.agent.sock), "the daemon did not start")
        self.fetch()
        self.times, self.cpu = [], 0

    def fetch(self):
        return forced_fetch(self.agent.sock)

    def round(self, document, counted):
        if kind != "none":
            self.agent.publish(document)
        before = cpu_ms(self.daemon.pid)
        elapsed = self.fetch()
        if counted:
            self.times.append(elapsed)
            self.cpu += cpu_ms(self.daemon.pid) - before

    def stop(self):
        self.daemon.terminate()
        self.daemon.wait()
        # The daemon's own split of each activation: "fetched in" (the http request, reading and
        # evaluating the document) and "stored in" (the one transaction and the reader file).
        text = open(self.log_path).read()
        self.fetched = [float(x) for x in re.findall(r"fetched in ([0-9.]+) ms", text)][warmup + 1:] or [0]
        self.stored = [float(x) for x in re.findall(r"stored in ([0-9.]+) ms", text)][warmup + 1:] or [0]
        self.agent.stop()
        subprocess.run(["rm", "-rf", self.agent.work])


sides = {}
try:
    for name in builds:
        sides[name] = Side(name)
    for version in range(2, rounds + warmup + 2):
        document = template(version)
        for name in random.sample(list(sides), len(sides)):
            sides[name].round(document, version >= warmup + 2)
finally:
    for side in sides.values():
        side.stop()

figures = {}
subject = "small document (two values)" if kind == "small" else "3,000-parameter template"
what = {"all": "every value changed", "one": "one value changed", "none": "unchanged, 304", "small": "one changed"}[kind]
digits = 2 if kind == "small" else 1
target = {"all": 10, "small": 3}.get(kind)
for name, side in sides.items():
    times = sorted(side.times)
    figures[name] = (statistics.median(times), times[len(times) // 10], times[-1 - len(times) // 10],
                     side.cpu / len(times), statistics.median(side.fetched), statistics.median(side.stored))
    f = [f"{x:.{digits}f}" for x in figures[name]]
    print(f"{name} ({builds[name]}): {subject} ({what}), forced fetch over http -> active, answered "
          f"({len(times)} rounds): median {f[0]} ms (p10-p90 {f[1]}-{f[2]}), daemon CPU {f[3]} ms per fetch; "
          f"daemon's log, medians: fetched (http, read, evaluate) {f[4]} ms, stored (transaction, reader file) "
          f"{f[5]} ms" + (f" (target median <= {target})" if name == "new" and target else ""))
new, old = figures["new"], figures["old"]
print(f"new/old: median {new[0] / old[0]:.2f}x, daemon CPU {new[3] / old[3]:.2f}x")
ids = {"all": "fetch.template3000.ab.median", "small": "fetch.small.ab.median"}
report("template-ab" + ("" if kind == "all" else "-" + kind), [
    {"id": ids.get(kind, f"fetch.template3000.{kind}.ab.median"),
     "figure": f"{subject}, {what}: forced fetch -> active, median (A/B)",
     "value": round(new[0], digits), "unit": "ms", **({"target": {"op": "<=", "value": target}} if target else {}),
     "peers": {"old_ms": round(old[0], digits), "cpu_ms": round(new[3], digits), "old_cpu_ms": round(old[3], digits)}},
])
