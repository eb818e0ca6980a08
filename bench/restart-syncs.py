#!/usr/bin/env python3
"""A daemon's restart: the syncs (fsync, fdatasync) and reader-file installs (renames) from exec until
it has answered a fetch, for a device that restarts with the same defaults file and the same document.
A daemon on a `file` source with two defaults is started once untraced (the database made, the
document fetched), then twice under `strace -f` (two lines; both should agree).

Usage: bench/restart-syncs.py BIN_DIR [BIN_DIR...]      (several: each in turn, for a before/after)
"""
import collections, os, re, shutil, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, listening, wait_for


def start(bin_dir, agent, trace):
    """Starts the daemon (under strace when `trace`), waits for it to answer a fetch, stops it, and
    returns strace's log (or None)."""
    log = f"{agent.work}/strace.txt"
    command = [f"{bin_dir}/rcagentd", "--config", agent.conf]
    if trace:
        command = ["strace", "-f", "-e", "trace=fsync,fdatasync,rename,renameat2", "-o", log] + command
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    wait_for(lambda: listening(agent.sock), "the daemon never listened on its socket")
    subprocess.run([f"{bin_dir}/rcagent", "fetch", "--wait"], env=agent.env, capture_output=True)
    time.sleep(1)  # what the start does after its first answer (the reader file, the fetch's commit)
    if trace:  # the daemon, not strace: strace would detach and leave it running
        for child in open(f"/proc/{process.pid}/task/{process.pid}/children").read().split():
            os.kill(int(child), 15)
    else:
        process.terminate()
    process.wait()
    return open(log).read() if trace else None


for bin_dir in map(os.path.abspath, sys.argv[1:]):
    agent = FileAgent("rcrestart-", defaults='{"k": "v", "d": "x"}')
    with open(agent.remote, "w") as f:
        f.write('{"state": "UPDATE", "templateVersion": "1", "entries": {"k": "w"}}')
    start(bin_dir, agent, trace=False)
    for _ in range(2):
        calls = collections.Counter(re.findall(r"^\d+\s+(\w+)\(", start(bin_dir, agent, trace=True), re.M))
        print(f"{bin_dir}: a restart with the same defaults and document: "
              f"{calls['fsync'] + calls['fdatasync']} syncs, "
              f"{calls['rename'] + calls['renameat2']} renames (reader file installs)")
    shutil.rmtree(agent.work, ignore_errors=True)
