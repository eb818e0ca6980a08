#!/usr/bin/env python3
"""Memory the daemon spends on a document at the http source's default size limit (MaxResponseSize=,
4 MiB): fetched from python's http.server and activated (`rcagent fetch --force --wait`). Two shapes
just under 4 MiB: about 44,000 keys of 95 bytes, and one value of 4 MB. Before each, the daemon has
fetched a small document (libcurl loaded) and its peak (VmHWM) is reset through /proc/PID/clear_refs.

The figure is the growth, VmHWM after the fetch minus VmRSS just before it, over the document's size
(target, issue 30: at most 3x). The absolute peak is printed beside it but is not the figure: before
the fetch the daemon already holds about 20 MiB of RSS, nearly all of it pages of the binary and of
libcurl, libcrypto, libsqlite3 and the other libraries (RSS counts each mapped page whole, shared or
not), which no document changes; the absolute peak over 4 MiB can never be under 5x.

Usage: bench/bigdoc.py BIN_DIR [BASE_BIN_DIR] [ROUNDS]   (ROUNDS, default 1: a daemon per shape per build
in each; with BASE_BIN_DIR the two builds take turns in a random order and both are printed)
"""
import os, random, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import HTTPAgent, listening, report, wait_for

builds = {"new": os.path.abspath(sys.argv[1])}
if len(sys.argv) > 2:
    builds["base"] = os.path.abspath(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
limit = 4 << 20
agent = HTTPAgent("rcbench-bigdoc-")
write = agent.publish


def envelope(version, entries):
    return f'{{"state":"UPDATE","templateVersion":"{version}","entries":{{{entries}}}}}'


def many_keys(version):
    pad = "x" * 70
    body, n = [], 0
    size = len(envelope(version, ""))
    while True:
        member = f'"param_{n:06d}":"{pad} {version} {n:06d}"'
        if size + len(member) + 1 > limit - 64:
            break
        body.append(member)
        size += len(member) + 1
        n += 1
    return envelope(version, ",".join(body))


def one_value(version):
    head = envelope(version, '"big":""')
    return envelope(version, '"big":"' + "v" * (limit - 64 - len(head)) + '"')


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fetch(bin_dir):
    done = subprocess.run([f"{bin_dir}/rcagent", "fetch", "--force", "--wait"], env=agent.env, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"rcagent fetch failed: {done.stdout}{done.stderr}")


def measure(bin_dir, version, make):
    """One daemon of its own (what one run left allocated, and malloc kept, is not the next's): the
    document's size, RSS before the fetch and the peak during it, in bytes."""
    global daemon
    write(envelope(1, '"small":"1"'))
    daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_for(lambda: listening(agent.sock), "the daemon did not start")
    fetch(bin_dir)
    write(envelope(100 + version, '"small":"2"'))
    fetch(bin_dir)
    time.sleep(0.5)
    size = write(make(version))
    before = vm(daemon.pid, "VmRSS")
    with open(f"/proc/{daemon.pid}/clear_refs", "w") as f:
        f.write("5")
    fetch(bin_dir)
    peak = vm(daemon.pid, "VmHWM")
    daemon.terminate()
    daemon.wait()
    daemon = None
    subprocess.run(["rm", "-rf", os.path.join(agent.work, "state")])
    os.unlink(agent.sock) if os.path.exists(agent.sock) else None
    return size, before * 1024, peak * 1024


shapes = [("keys", "about 44,000 keys", many_keys), ("value", "one 4 MB value", one_value)]
runs = {(build, key): [] for build in builds for key, _, _ in shapes}
agent.serve()
daemon = None
try:
    for _ in range(rounds):
        for version, (key, name, make) in enumerate(shapes, start=2):
            order = list(builds)
            random.shuffle(order)
            for build in order:
                size, before, peak = measure(builds[build], version, make)
                runs[(build, key)].append((size, before, peak))
                print(f"{build:4} {name}: {size / 1048576:.2f} MiB document; growth {(peak - before) / 1048576:.1f} MiB "
                      f"({(peak - before) / size:.2f}x the document); VmHWM {peak / 1048576:.1f} MiB "
                      f"({peak / size:.2f}x), RSS before {before / 1048576:.1f} MiB", flush=True)
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    agent.stop()
    subprocess.run(["rm", "-rf", agent.work])

figures = []
summary = {}
for build in builds:
    for key, name, _ in shapes:
        measured = runs[(build, key)]
        growth = [(peak - before) / size for size, before, peak in measured]
        absolute = [peak / size for size, _, peak in measured]
        summary[(build, key)] = statistics.median(growth)
        print(f"{build:4} {name}: growth / document median {statistics.median(growth):.2f}x "
              f"(range {min(growth):.2f}-{max(growth):.2f}, {len(growth)} runs; target <= 3x); "
              f"VmHWM / document median {statistics.median(absolute):.2f}x "
              f"(RSS before median {statistics.median(b for _, b, _ in measured) / 1048576:.1f} MiB)")
for key, name, _ in shapes:
    measured = runs[("new", key)]
    growth = [(peak - before) / size for size, before, peak in measured]
    peers = {"growth_mib": round(statistics.median(peak - before for _, before, peak in measured) / 1048576, 1),
             "peak_mib": round(statistics.median(peak for _, _, peak in measured) / 1048576, 1),
             "peak_x": round(statistics.median(peak / size for size, _, peak in measured), 2),
             "rss_before_mib": round(statistics.median(before for _, before, _ in measured) / 1048576, 1),
             "growth_range_x": [round(min(growth), 2), round(max(growth), 2)],
             "document_bytes": measured[0][0]}
    if "base" in builds:
        peers["base_growth_x"] = round(summary[("base", key)], 2)
    figures.append({"id": f"bigdoc.{key}",
                    "figure": f"4 MiB document ({name}) over http: daemon peak RSS growth (VmHWM - RSS before) / document",
                    "value": round(statistics.median(growth), 2), "unit": "x", "target": {"op": "<=", "value": 3},
                    "peers": peers})
report("bigdoc", figures)
