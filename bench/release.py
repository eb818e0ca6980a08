#!/usr/bin/env python3
"""The CPU of one idle release (IdlePages.release()) in a daemon with every feature loaded: an http
source (python's http.server), MQTT push and the report on a mosquitto, all started here. perf stat
counts the daemon's task-clock over 4-14 s after its start (the release comes 10 s after its first
round) and over the quiet 10 s after that; the difference is the release. Several builds are run in
turn, REPEATS times.

Usage: bench/release.py BIN_DIR[,BIN_DIR...] [REPEATS]"""
import os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, free_port, port_open, wait_for
bins = sys.argv[1].split(",")
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2

def clock(pid, seconds):
    r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-p", str(pid), "--", "sleep", str(seconds)],
                       capture_output=True, text=True)
    return float(r.stderr.strip().splitlines()[-1].split(",")[0])

def one(bin_dir):
    agent = FileAgent("rcrel-", defaults='{"k": "v"}', source="www/remote.json")
    work, conf, env = agent.work, agent.conf, agent.env
    os.mkdir(os.path.join(work, "www"))
    hp, mp = free_port(), free_port()
    with open(conf) as f: text = f.read().split("[Source]")[0]
    with open(conf, "w") as f:
        f.write(text + f"[Source]\nType=http\nURL=http://127.0.0.1:{hp}/remote.json\n"
                f"[Push]\nMQTT=mqtt://127.0.0.1:{mp}\n[Report]\nMQTTStatusTopic=rcrel/status\n")
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write(f"listener {mp} 127.0.0.1\nallow_anonymous true\n")
    helpers = [subprocess.Popen(["mosquitto", "-c", os.path.join(work, "mosquitto.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
               subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(hp), "--directory", os.path.join(work, "www")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    wait_for(lambda: port_open(hp) and port_open(mp), "helpers")
    with open(agent.remote, "w") as f:
        f.write('{"state": "UPDATE", "templateVersion": "1", "entries": {"k": "w"}}')
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
