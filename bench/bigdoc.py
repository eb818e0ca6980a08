#!/usr/bin/env python3
"""Peak memory of the daemon for a document at the http source's default size limit (MaxResponseSize=,
4 MiB): fetched from python's http.server and activated (`rcagent fetch --force --wait`). Two shapes
just under 4 MiB: about 40,000 keys of 100 bytes, and one value of 4 MB. Before each, the daemon has
fetched a small document (libcurl loaded) and its peak (VmHWM) is reset through /proc/PID/clear_refs;
the figure is VmHWM after the fetch, beside RSS just before it (what the daemon held already) and the
growth, peak - RSS before. Target (issue 30): the peak under 3x the document.

Usage: bench/bigdoc.py BIN_DIR
"""
import os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import HTTPAgent, report, wait_for

bin_dir = os.path.abspath(sys.argv[1])
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


def fetch():
    done = subprocess.run([f"{bin_dir}/rcagent", "fetch", "--force", "--wait"], env=agent.env, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"rcagent fetch failed: {done.stdout}{done.stderr}")


agent.serve()
daemon = None
figures = []
try:
    # A daemon of its own for each shape: what one left allocated (and malloc kept) is not the next's.
    for version, (name, make) in enumerate([("about 44,000 keys", many_keys), ("one 4 MB value", one_value)], start=2):
        write(envelope(1, '"small":"1"'))
        daemon = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(agent.sock), "the daemon did not start")
        fetch()
        write(envelope(100 + version, '"small":"2"'))
        fetch()
        time.sleep(0.5)
        size = write(make(version))
        before = vm(daemon.pid, "VmRSS")
        with open(f"/proc/{daemon.pid}/clear_refs", "w") as f:
            f.write("5")
        fetch()
        peak = vm(daemon.pid, "VmHWM")
        daemon.terminate()
        daemon.wait()
        daemon = None
        subprocess.run(["rm", "-rf", os.path.join(agent.work, "state")])
        os.unlink(agent.sock) if os.path.exists(agent.sock) else None
        key = "keys" if "keys" in name else "value"
        print(f"{name}: {size / 1048576:.2f} MiB document; daemon VmHWM {peak / 1024:.1f} MiB "
              f"({peak * 1024 / size:.2f}x the document), RSS before {before / 1024:.1f} MiB, "
              f"growth {(peak - before) / 1024:.1f} MiB ({(peak - before) * 1024 / size:.2f}x)")
        figures.append({"id": f"bigdoc.{key}", "figure": f"4 MiB document ({name}) over http: daemon peak RSS / document",
                        "value": round(peak * 1024 / size, 2), "unit": "x", "target": {"op": "<=", "value": 3},
                        "peers": {"peak_mib": round(peak / 1024, 1), "rss_before_mib": round(before / 1024, 1),
                                  "growth_x": round((peak - before) * 1024 / size, 2), "document_bytes": size}})
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    agent.stop()
    subprocess.run(["rm", "-rf", agent.work])
report("bigdoc", figures)
