#!/usr/bin/env python3
"""The daemon's side of a big activation: a 3,000-parameter document whose every value changes, N
times (default 30), through the file source and `rcagent fetch --force --wait`. Reads the daemon's
own log line for each ("fetched in X ms, stored in Y ms": read and parse, then the one transaction
that stores and activates it) and the daemon's CPU time over all of them. No hooks are installed:
this is the path every device takes.

Usage: bench/activate.py BIN_DIR [ACTIVATIONS]
"""
import json, os, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, cpu_ms, listening, report

bin_dir = os.path.abspath(sys.argv[1])
count = int(sys.argv[2]) if len(sys.argv) > 2 else 30
agent = FileAgent("rcbench-activate-")


def document(version):
    entries = {f"param_{i}": f"value {i} of template {version}" for i in range(3000)}
    return json.dumps({"state": "UPDATE", "templateVersion": str(version), "entries": entries})


def publish(version):
    temporary = agent.remote + ".new"
    with open(temporary, "w") as f:
        f.write(document(version))
    os.rename(temporary, agent.remote)


def fetch(*flags):
    subprocess.run([f"{bin_dir}/rcagent", "fetch", *flags, "--wait"], env=agent.env, capture_output=True, check=True)


publish(1)
log_path = os.path.join(agent.work, "daemon.log")
with open(log_path, "w") as log:
    daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=log, stderr=log)
try:
    deadline = time.time() + 10
    while not listening(agent.sock) and time.time() < deadline:
        time.sleep(0.01)
    fetch()
    cpu_before = cpu_ms(daemon.pid)
    for version in range(2, count + 2):
        publish(version)
        fetch("--force")
    cpu = cpu_ms(daemon.pid) - cpu_before
finally:
    daemon.terminate()
    daemon.wait()
text = open(log_path).read()
subprocess.run(["rm", "-rf", agent.work])
# The first activation (the start-up fetch into an empty database) is left out.
stored = [float(x) for x in re.findall(r"stored in ([0-9.]+) ms", text)][1:]
parsed = [float(x) for x in re.findall(r"fetched in ([0-9.]+) ms", text)][1:]
print(f"3,000-key activation ({len(stored)} times): stored and activated, median {statistics.median(stored):.1f} ms; "
      f"read and parsed, median {statistics.median(parsed):.1f} ms; daemon CPU {cpu / len(stored):.1f} ms each")
report("activate", [
    {"id": "activate3000.store", "figure": "3,000 changed keys: store + activate transaction, median",
     "value": round(statistics.median(stored), 1), "unit": "ms", "target": None,
     "peers": {"read_parse_ms": round(statistics.median(parsed), 1), "max_ms": max(stored)}},
    {"id": "activate3000.cpu", "figure": "3,000 changed keys: daemon CPU per activation",
     "value": round(cpu / len(stored), 1), "unit": "ms", "target": None},
])
