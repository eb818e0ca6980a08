#!/usr/bin/env python3
"""Memory per request: the daemon's anonymous memory (RssAnon) grown per control request, by kind.

For each kind, an rcagentd of its own on a file source and one control connection: a warm-up of WARMUP requests
(allocator arenas, SQLite's page cache, the hooks' and the report's buffers reach their size), then
RssAnon is read, N requests of that kind are sent one at a time (each answered before the next),
and RssAnon is read again: (after - before) / N is the figure, in bytes per request. A daemon that
keeps nothing per request shows about 0 (page granularity: 4 KiB over N requests).

Kinds: ping, status (read only), fetch (forced, finds nothing new), activation (a new template
version each time, fetched forced and activated), stale (a socket message with CONFIG_STATE, waiting
for its fetch), stale-ignored (a message for an old template version), mark-stale (the flag already
set), activity (a live-activity update, each newer than the last), reload (nothing changed).

Usage: bench/soak.py BIN_DIR [N] [KIND...]   (N = 5,000 by default; every kind by default)
Environment: RCBENCH_SOAK_WARMUP (3,000 requests of each kind before measuring).
"""
import json, os, shutil, socket, subprocess, sys, time

from agentsetup import FileAgent, listening, report, wait_for

KINDS = ["ping", "status", "fetch", "activation", "stale", "stale-ignored", "mark-stale", "activity", "reload"]
bin_dir = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000
kinds = sys.argv[3:] or KINDS
warmup = int(os.environ.get("RCBENCH_SOAK_WARMUP", "3000"))
# The state on tmpfs: the figure is memory, and fsync on a loaded disk would only make it slow.
agent = FileAgent("rcsoak-")
state = os.path.join("/dev/shm", os.path.basename(agent.work) + "-state")
with open(agent.conf) as f:
    conf = f.read().replace(f"StateDirectory={agent.work}/state", f"StateDirectory={state}")
with open(agent.conf, "w") as f:
    f.write(conf + "[Agent]\nMinimumFetchInterval=0\n")
version = 1


def publish():
    global version
    version += 1
    tmp = agent.remote + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"state": "UPDATE", "templateVersion": str(version),
                   "entries": {"greeting": f"hello {version}", "count": str(version % 7)}}, f)
    os.rename(tmp, agent.remote)


def rss_anon(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("RssAnon:"))


class Connection:
    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        self.reader = self.socket.makefile("rb")

    def ask(self, request):
        self.socket.sendall(json.dumps(request).encode() + b"\n")
        line = self.reader.readline()
        if b'"ok":true' not in line:
            raise SystemExit(f"{request['op']}: {line!r}")
        return line


activity_time = int(time.time())


def activity(event):
    global activity_time
    activity_time += 1
    aps = {"event": event, "timestamp": activity_time, "content-state": {"step": activity_time % 100}}
    if event == "start":
        aps.update({"attributes-type": "SoakAttributes", "attributes": {"name": "soak"}})
    return {"op": "message", "message": {"message": {"apns": {
        "live_activity_token": "soak-activity", "payload": {"aps": aps}}}}}


def request(kind):
    if kind == "activation":
        publish()
    return {
        "ping": lambda: {"op": "ping"},
        "status": lambda: {"op": "status"},
        "fetch": lambda: {"op": "fetch", "force": True, "wait": True},
        "activation": lambda: {"op": "fetch", "force": True, "wait": True},
        "stale": lambda: {"op": "message", "message": {"data": {"CONFIG_STATE": "STALE"}}, "wait": True},
        "stale-ignored": lambda: {"op": "message", "message": {"data": {"CONFIG_STATE": "STALE",
                                                                          "templateVersion": "1"}}},
        "mark-stale": lambda: {"op": "mark-stale", "reason": "soak"},
        "activity": lambda: activity("update"),
        "reload": lambda: {"op": "reload"},
    }[kind]()


def measure(kind):
    """(bytes per request, requests per second) of `kind` on a daemon of its own: memory freed by
    one kind would otherwise be reused by the next and hide what it keeps."""
    global activity_time
    shutil.rmtree(state, ignore_errors=True)
    log = open(os.environ.get("RCBENCH_LOG", os.devnull), "a")
    daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stderr=log)
    try:
        wait_for(lambda: listening(agent.sock), "rcagentd did not start")
        connection = Connection(agent.sock)
        connection.ask({"op": "fetch", "force": True, "wait": True})
        connection.ask(activity("start"))
        for _ in range(warmup):
            connection.ask(request(kind))
        before = rss_anon(daemon.pid)
        started = time.perf_counter()
        for _ in range(count):
            connection.ask(request(kind))
        elapsed = time.perf_counter() - started
        after = rss_anon(daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait()
    print(f"{kind:14} {(after - before) / count:8.1f} B/request  (RssAnon {before / 1024:,.0f} -> "
          f"{after / 1024:,.0f} KiB over {count:,} requests, {count / elapsed:,.0f}/s)", flush=True)
    return (after - before) / count


try:
    publish()
    figures = []
    for kind in kinds:
        per_request = measure(kind)
        figures.append({"id": f"soak_{kind.replace('-', '_')}_bytes_per_request",
                        "figure": f"daemon anonymous memory per request: {kind}", "value": round(per_request, 1),
                        "unit": "B", "target": {"op": "<=", "value": 64}, "peers": {},
                        "note": f"RssAnon over {count:,} requests after {warmup:,} of warm-up, a daemon per kind"})
    report("soak", figures)
finally:
    shutil.rmtree(agent.work, ignore_errors=True)
    shutil.rmtree(state, ignore_errors=True)
