#!/usr/bin/env python3
"""One new agent's start: an agent with a new state directory, an http source (python's http.server),
MQTT push and the report on a mosquitto, all started here, run under perf stat and stopped 2.5 s
after its exec (well after its first report): its task-clock, page faults and context switches. A
fleet's start-up is a thousand of these at once. Several builds are run in turn, REPEATS times.

Usage: bench/agent-start.py BIN_DIR[,BIN_DIR...] [REPEATS]"""
import os, signal, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import full_agent
bins = sys.argv[1].split(","); repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
def one(bin_dir):
    agent, helpers = full_agent("rcss-", "rcss/status")
    work, conf, env = agent.work, agent.conf, agent.env
    out = f"{work}/perf.txt"
    p = subprocess.Popen(["perf", "stat", "-x,", "-o", out, "-e", "task-clock,page-faults,context-switches",
                          f"{bin_dir}/rcagentd", "--config", conf], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.5)
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            os.kill(int(f.read().split()[0]), signal.SIGTERM)  # the daemon; perf prints when it exits
        p.wait()
        counts = {}
        with open(out) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[0] and not line.startswith("#") and not fields[0].startswith("<"):
                    counts[fields[2]] = float(fields[0])
        return "task-clock %.1f ms, page faults %d, context switches %d" % (
            counts.get("task-clock", 0), counts.get("page-faults", 0), counts.get("context-switches", 0))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for h in helpers:
            h.terminate()
            h.wait()


for r in range(repeats):
    print(" | ".join(f"{os.path.basename(b)}: {one(b)}" for b in bins), flush=True)
