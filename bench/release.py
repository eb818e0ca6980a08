#!/usr/bin/env python3
"""The CPU of one idle release (IdlePages.release()) in a daemon with every feature loaded: an http
source (python's http.server), MQTT push and the report on a mosquitto, all started here. perf stat
counts the daemon's task-clock over 4-14 s after its start (the release comes 10 s after its first
round) and over the quiet 10 s after that; the difference is the release. Several builds are run in
turn, REPEATS times.

Usage: bench/release.py BIN_DIR[,BIN_DIR...] [REPEATS]"""
import os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import full_agent
bins = sys.argv[1].split(",")
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2

def clock(pid, seconds):
    r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-p", str(pid), "--", "sleep", str(seconds)],
                       capture_output=True, text=True)
    return float(r.stderr.strip().splitlines()[-1].split(",")[0])

def one(bin_dir):
    agent, helpers = full_agent("rcrel-", "rcrel/status")
    conf, env = agent.conf, agent.env
    d = subprocess.Popen([f"{bin_dir}/rcagentd", "--config", conf], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4)
        with_release = clock(d.pid, 10)   # +4..+14: the +10 s release
        quiet = clock(d.pid, 10)          # +14..+24: nothing
        return with_release - quiet
    finally:
        d.terminate(); d.wait()
        for h in helpers: h.terminate(); h.wait()

for r in range(repeats):
    print(" ".join(f"{b}: {one(b):.1f} ms" for b in bins), flush=True)
