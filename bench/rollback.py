#!/usr/bin/env python3
"""Rollback latency: a health check that fails → the old values visible to `rcagent get`. Each round
publishes a good version (its check passes; the trial commits), then a bad one whose check writes
the wall-clock time and exits 1; the script polls `rcagent get` until the good value is back and
takes the time from the check's exit. HealthTimeout= plays no part (60s here): the verdict is the
exit. Target: <= 50 ms after the check exits.

Usage: bench/rollback.py BIN_DIR [ROUNDS]
"""
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, listening, report

bin_dir = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
agent = FileAgent("rcbench-rollback-")
stamp = os.path.join(agent.work, "exited")
check = os.path.join(agent.work, "check")
with open(check, "w") as f:
    f.write("#!/bin/sh\n[ $(( ${RCAGENT_TEMPLATE_VERSION:-0} % 2 )) = 0 ] || exit 0\n"
            f"date +%s%N > {stamp}.new && mv {stamp}.new {stamp}\nexit 1\n")
os.chmod(check, 0o755)
with open(agent.conf, "a") as f:
    f.write(f"[Activation]\nHealthCheck={check}\nHealthTimeout=60s\n")


def publish(version, value):
    temporary = agent.remote + ".new"
    with open(temporary, "w") as f:
        json.dump({"state": "UPDATE", "templateVersion": str(version), "entries": {"url": value}}, f)
    os.rename(temporary, agent.remote)


def rcagent(*args):
    return subprocess.run([f"{bin_dir}/rcagent", *args], env=agent.env, capture_output=True, text=True)


def wait_until(condition, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
    raise SystemExit("timed out")


def no_trial():
    status = json.loads(rcagent("status", "--json").stdout)
    return status["activation"]["trial"] is None


log_path = os.path.join(agent.work, "daemon.log")
with open(log_path, "w") as log:
    daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=log, stderr=log)
latencies = []
try:
    deadline = time.time() + 10
    while not listening(agent.sock) and time.time() < deadline:
        time.sleep(0.01)
    for index in range(rounds):
        good, bad = 2 * index + 1, 2 * index + 2
        publish(good, f"good {good}")
        rcagent("fetch", "--force", "--wait")
        wait_until(no_trial)
        if os.path.exists(stamp):
            os.unlink(stamp)
        publish(bad, f"bad {bad}")
        rcagent("fetch", "--force", "--wait")
        wait_until(lambda: rcagent("get", "url").stdout == f"good {good}\n")
        visible = time.time_ns()
        exited = int(open(stamp).read())
        latencies.append((visible - exited) / 1e6)
finally:
    daemon.terminate()
    daemon.wait()
subprocess.run(["rm", "-rf", agent.work])
latencies.sort()
p50 = statistics.median(latencies)
print(f"rollback latency ({len(latencies)} rounds): check exits → old value visible to rcagent get: "
      f"p50 {p50:.1f} ms, max {latencies[-1]:.1f} ms (polling with rcagent get adds up to one call's time)")
report("rollback", [
    {"id": "rollback.latency", "figure": "failing health check exits → old values visible to rcagent get, p50",
     "value": round(p50, 1), "unit": "ms", "target": {"op": "<=", "value": 50},
     "peers": {"max_ms": round(latencies[-1], 1), "rounds": len(latencies)}},
])
