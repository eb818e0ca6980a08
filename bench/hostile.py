#!/usr/bin/env python3
"""What the worst hostile inputs cost the daemon: CPU time (utime + stime from /proc/PID/stat) and
the wall time to its answer, for each input, against an ordinary request sent in the same run (the
peer). Every hostile input must leave the daemon running and serving its last good values.

Inputs (the shapes that crashed the daemon or cost it seconds before the one JSON reader):
  - a control-socket line of 64 KiB of '[' (the most nesting one line can hold);
  - an 8 KB stale ping nesting 500 levels (cost 5.9 s of daemon CPU before);
  - a file document of 20 values nested 509 levels, about 20 KB (40 s to fetch before);
  - a 4 MiB file document of 100,000 distinct keys (the sort and duplicate check at size);
  - a 60 KB request line written one byte at a time, and 10,000 ping lines in one write (the
    socket's line reader at its worst: each byte searched once, lines taken without moving the rest);
  - peers: one ordinary ping line, and a 3,000-parameter template fetch.

Then, per channel (hostile_channels.py): the control socket, the file and http sources, MQTT push
through mosquitto and the realtime stream each get the worst contents (long runs of combining marks
as names and values, the most a string may hold, huge values, deep and wide documents), reported as
daemon CPU per MB (target: at most 1 s) and peak memory.

Usage: bench/hostile.py BIN_DIR [ROUNDS]
Environment: RCBENCH_HOSTILE_CHANNELS (space-separated: socket file http mqtt realtime; "none" for
only the inputs above; default all), RCBENCH_HOSTILE_BOUND (s an input may keep the daemon busy
before it is reported as still busy and the daemon restarted; 120).
"""
import json, os, socket, statistics, subprocess, sys, time

import hostile_channels
from agentsetup import FileAgent, cpu_ms

bin_dir = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
agent = FileAgent("rcbench-hostile-")
work, remote, conf, sock, env = agent.work, agent.remote, agent.conf, agent.sock, agent.env


def publish(text):
    tmp = remote + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, remote)


def request(line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(line.encode() + b"\n")
    reply = s.makefile().readline()
    s.close()
    return reply


def drip(line):
    """Writes `line` one byte per send, then reads the answer."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    for byte in (line + "\n").encode():
        s.send(bytes([byte]))
    reply = s.makefile().readline()
    s.close()
    return reply


def pipelined(line, count):
    """Writes `count` copies of `line` at once while a thread reads every answer."""
    import threading
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    answers = []
    replies = s.makefile()
    reader = threading.Thread(target=lambda: answers.extend(replies.readline() for _ in range(count)))
    reader.start()
    s.sendall((line + "\n").encode() * count)
    reader.join()
    s.close()
    assert all('"ok":true' in a for a in answers), answers[-1:]


def cli(*args):
    return subprocess.run([f"{bin_dir}/rcagent", *args], env=env, capture_output=True, text=True)


def nested(depth, open_="[", close="]", inner="0"):
    return open_ * depth + inner + close * depth


deep_document = json.dumps({"state": "UPDATE", "templateVersion": "9"})[:-1] + ', "entries": {' + ",".join(
    f'"k{i}": ' + nested(509) for i in range(20)) + "}}"
wide_document = json.dumps({"state": "UPDATE", "templateVersion": "8",
                            "entries": {f"key_{i:06d}_{'x' * 16}": f"value {i}" for i in range(100_000)}})
template = json.dumps({"parameters": {f"param_{k:04d}": {"defaultValue": {"value": f"value {k}"}} for k in range(3000)},
                       "version": {"versionNumber": "7"}})
ping_8k = '{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"},"x":' + nested(500, '{"a":', "}") + "}}"
ping_8k = ping_8k + " " * max(0, 8192 - len(ping_8k))

cases = [
    ("ordinary ping line (peer)", "socket", '{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}'),
    ("socket line: 64 KiB of '['", "socket", "[" * (64 * 1024 - 2)),
    ("socket line: 8 KB ping nesting 500 levels", "socket", ping_8k),
    ("socket: 60 KB line written a byte at a time", "drip", '{"op":"ping","x":"' + "y" * 60_000 + '"}'),
    ("socket: 10,000 ping lines in one write", "pipeline", '{"op":"ping"}'),
    ("3,000-parameter template fetch (peer)", "file", template),
    ("file: 20 values nesting 509 levels (20 KB)", "file", deep_document),
    ("file: 100,000 keys (4 MiB)", "file", wide_document),
]

def start():
    """Starts the daemon on a good config and waits until it serves it."""
    publish(json.dumps({"state": "UPDATE", "templateVersion": "1", "entries": {"bench": "good"}}))
    process = subprocess.Popen([f"{bin_dir}/rcagentd", "--config", conf], env=env,
                               stderr=open(os.environ.get("RCBENCH_LOG", os.devnull), "a"))
    deadline = time.time() + 10
    while cli("get", "bench").stdout.strip() != "good" or not os.path.exists(sock):
        if time.time() > deadline or process.poll() is not None:
            raise SystemExit("daemon did not start")
        time.sleep(0.02)
    return process


daemon = start()
figures = []
try:
    for name, channel, payload in cases:
        cpu, wall = [], []
        for round_ in range(rounds):
            before = cpu_ms(daemon.pid)
            t0 = time.perf_counter()
            try:
                if channel == "socket":
                    request(payload)
                elif channel == "drip":
                    drip(payload)
                elif channel == "pipeline":
                    pipelined(payload, 10_000)
                else:
                    # Different bytes each round (trailing spaces), so every round reads the whole
                    # document instead of finding it unchanged.
                    publish(payload + " " * round_)
                    cli("fetch", "--force", "--wait")
            except (OSError, AssertionError) as error:
                print(f"{name}: {error!r}")
            if daemon.poll() is not None:
                # Measured against an older build, whose daemon this may kill: say so and go on.
                print(f"{name}: THE DAEMON DIED (exit status {daemon.returncode}); restarting it")
                figures.append({"id": "hostile.died", "figure": f"daemon died: {name}", "value": None,
                                "unit": "", "target": None})
                daemon = start()
                break
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append(cpu_ms(daemon.pid) - before)
        if not cpu:
            continue
        size = len(payload.encode()) * (10_000 if channel == "pipeline" else 1)
        print(f"{name}: {size:,} bytes, daemon CPU median {statistics.median(cpu):.0f} ms (max {max(cpu):.0f}), "
              f"answer median {statistics.median(wall):.1f} ms (max {max(wall):.1f})")
        figures.append({"id": "hostile." + "".join(c if c.isalnum() else "_" for c in name)[:40].strip("_"),
                        "figure": f"daemon CPU: {name}", "value": round(statistics.median(cpu), 1), "unit": "ms",
                        "target": None, "peers": {"bytes": size, "answer_ms_median": round(statistics.median(wall), 1),
                                                  "answer_ms_max": round(max(wall), 1), "cpu_ms_max": round(max(cpu), 1)}})
    publish(json.dumps({"state": "UPDATE", "templateVersion": "10", "entries": {"bench": "after"}}))
    cli("fetch", "--force", "--wait")
    assert cli("get", "bench").stdout.strip() == "after", "the daemon no longer fetches"
finally:
    daemon.terminate()
    daemon.wait()
    subprocess.run(["rm", "-rf", work])

channels = os.environ.get("RCBENCH_HOSTILE_CHANNELS", "").split() or None
if channels != ["none"]:
    hostile_channels.run(bin_dir, figures, channels)
if os.environ.get("RCBENCH_OUT"):
    with open(os.path.join(os.environ["RCBENCH_OUT"], "hostile.json"), "w") as f:
        json.dump(figures, f)
