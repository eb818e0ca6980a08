#!/usr/bin/env python3
"""Two builds' daemons side by side, each activating the same 3,000-key document whose every value
changes (bench/activate.py's path: file source, `rcagent fetch --force --wait`, no hooks), taking
turns in a random order each round, so load from other work on the machine lands on both alike.
Reads each daemon's own "stored in" log line per activation (the one transaction that stores and
activates) and the CPU time each daemon used over its activations, once its History= entries are
full (the first 25 activations are warm-up: trimming history starts at the 21st).

CHANGED (default 3,000): how many of the 3,000 values change each time; the others stay.

Usage: bench/activate-ab.py NEW_BIN_DIR OLD_BIN_DIR [ACTIVATIONS [CHANGED]]   (default 40 each)
"""
import json, os, random, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, cpu_ms, listening

builds = {"new": os.path.abspath(sys.argv[1]), "old": os.path.abspath(sys.argv[2])}
count = int(sys.argv[3]) if len(sys.argv) > 3 else 40
changed = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
warmup = 25


def document(version):
    entries = {f"param_{i}": f"value {i} of template {version if i < changed else 1}" for i in range(3000)}
    return json.dumps({"state": "UPDATE", "templateVersion": str(version), "entries": entries})


class Side:
    def __init__(self, name):
        self.bin = builds[name]
        self.agent = FileAgent(f"rcbench-activate-{name}-")
        self.log_path = os.path.join(self.agent.work, "daemon.log")
        self.publish(1)
        with open(self.log_path, "w") as log:
            self.daemon = subprocess.Popen([f"{self.bin}/rcagentd"], env=self.agent.env, stdout=log, stderr=log)
        deadline = time.time() + 10
        while not listening(self.agent.sock) and time.time() < deadline:
            time.sleep(0.01)
        self.fetch()
        self.cpu = 0

    def publish(self, version):
        temporary = self.agent.remote + ".new"
        with open(temporary, "w") as f:
            f.write(document(version))
        os.rename(temporary, self.agent.remote)

    def fetch(self, *flags):
        subprocess.run([f"{self.bin}/rcagent", "fetch", *flags, "--wait"], env=self.agent.env, capture_output=True,
                       check=True)

    def activate(self, version, counted):
        self.publish(version)
        before = cpu_ms(self.daemon.pid)
        self.fetch("--force")
        if counted:
            self.cpu += cpu_ms(self.daemon.pid) - before

    def finish(self):
        self.daemon.terminate()
        self.daemon.wait()
        text = open(self.log_path).read()
        subprocess.run(["rm", "-rf", self.agent.work])
        # The first activation (the start-up fetch into an empty database) and the warm-up go.
        return [float(x) for x in re.findall(r"stored in ([0-9.]+) ms", text)][1 + warmup:]


sides = {name: Side(name) for name in builds}
try:
    for version in range(2, warmup + count + 2):
        names = list(sides)
        random.shuffle(names)
        for name in names:
            sides[name].activate(version, version >= warmup + 2)
finally:
    stored = {name: side.finish() for name, side in sides.items()}
for name in builds:
    s = stored[name]
    print(f"{name}: stored and activated, median {statistics.median(s):.1f} ms (max {max(s):.1f}); "
          f"daemon CPU {sides[name].cpu / len(s):.1f} ms each ({len(s)} activations)")
print(f"new / old: stored {statistics.median(stored['new']) / statistics.median(stored['old']):.2f}, "
      f"CPU {sides['new'].cpu / max(sides['old'].cpu, 1):.2f}")
