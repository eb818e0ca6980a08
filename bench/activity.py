#!/usr/bin/env python3
"""Issue 18: the end-to-end latency of a live-activity update on a Linux device, from the start of
`rcadmin activity update --mqtt` to the line `rcagent activity watch --json` prints for it, through a
real mosquitto and a running rcagentd (file source; MQTT is its only push channel here), p50/p99/max
over ROUNDS updates of one activity. The rcadmin call alone (connect, publish, PUBACK) is reported too.

Each update carries its round number in the content state and a timestamp one second newer than the
previous one (the agent ignores a message not newer than the last applied), and the round ends when
the watch prints `activity-updated` with that number: updates never overlap.

Usage: bench/activity.py BIN_DIR [ROUNDS]   (100 rounds by default)
"""
import json, os, queue, shutil, statistics, subprocess, sys, threading, time

from agentsetup import FileAgent, free_port, listening, report, wait_for

bin_dir = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100
token = "bench-queue-display"


agent = FileAgent("rcactivity-")
work = agent.work
with open(agent.remote, "w") as f:
    json.dump({"state": "UPDATE", "templateVersion": "1", "entries": {"greeting": "hello"}}, f)
mqtt_port = free_port()
mqtt = f"mqtt://127.0.0.1:{mqtt_port}"
with open(agent.conf, "a") as f:
    f.write(f"[Push]\nMQTT={mqtt}\nJitter=0\n")
processes = []


def start(arguments, **options):
    process = subprocess.Popen(arguments, **options)
    processes.append(process)
    return process


def rcadmin(event, timestamp, *extra):
    subprocess.run([f"{bin_dir}/rcadmin", "activity", event, "--live-activity-token", token,
                    "--timestamp", str(timestamp), "--mqtt", mqtt, *extra], check=True, capture_output=True)


try:
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous true\n")
    start(["mosquitto", "-c", f"{work}/mosquitto.conf"], stderr=subprocess.DEVNULL)
    wait_for(lambda: subprocess.run(["mosquitto_pub", "-p", str(mqtt_port), "-t", "x", "-n"],
                                    capture_output=True).returncode == 0, "mosquitto did not start")
    log = open(os.environ.get("RCBENCH_LOG", os.devnull), "w")
    start([f"{bin_dir}/rcagentd"], env=agent.env, stderr=log)
    wait_for(lambda: listening(agent.sock), "rcagentd did not start")

    # The watch's lines, each stamped when it was read, handed over by a reader thread.
    lines = queue.Queue()
    watch = start([f"{bin_dir}/rcagent", "activity", "watch", "--json"], env=agent.env, stdout=subprocess.PIPE,
                  text=True, bufsize=1)

    def read():
        for line in watch.stdout:
            lines.put((time.perf_counter(), line))
    threading.Thread(target=read, daemon=True).start()

    def next_event(limit=10):
        """The next activity event of the bench's activity: (time read, event, activity)."""
        deadline = time.perf_counter() + limit
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            try:
                at, line = lines.get(timeout=remaining)
            except queue.Empty:
                return None
            event = json.loads(line)
            # A watch line is the activity itself plus the event's "event" and "at".
            if str(event.get("event", "")).startswith("activity-") and event.get("id") == token:
                return at, event["event"], event

    # Start the activity; repeated (each newer, so an update of it) until the watch shows it: the
    # watch may not be subscribed yet when the first one is applied. Every start waits for the
    # daemon's MQTT session, too.
    timestamp = int(time.time())
    attributes = ["--attributes-type", "QueueAttributes", "--attributes", '{"counter":"3"}']
    for attempt in range(20):
        timestamp += 1
        rcadmin("start", timestamp, *attributes, "--content-state", '{"now":0}')
        if next_event(limit=1):
            break
    else:
        raise SystemExit("the watch never showed the activity: is the daemon on MQTT?")
    while next_event(limit=0.5):
        pass  # the echoes of repeated starts

    calls, latencies = [], []
    for i in range(1, rounds + 1):
        timestamp += 1
        t0 = time.perf_counter()
        rcadmin("update", timestamp, "--content-state", json.dumps({"now": i}))
        t1 = time.perf_counter()
        seen = next_event()
        if seen is None:
            raise SystemExit(f"update {i} never reached the watch")
        at, event, activity = seen
        if event != "activity-updated" or activity.get("contentState", {}).get("now") != i:
            raise SystemExit(f"update {i}: the watch printed {event} {activity}")
        calls.append((t1 - t0) * 1000)
        latencies.append((at - t0) * 1000)
    timestamp += 1
    rcadmin("end", timestamp, "--dismissal-date", "0")

    latencies.sort()
    calls.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"rcadmin activity update -> watch line ({rounds} updates): p50 {statistics.median(latencies):.1f} ms, "
          f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms")
    print(f"rcadmin activity update call alone: p50 {statistics.median(calls):.1f} ms, max {calls[-1]:.1f} ms")
    report("activity", [
        {"id": "activity_update_to_watch_p50", "figure": "rcadmin activity update -> rcagent activity watch line (p50)",
         "value": round(statistics.median(latencies), 1), "unit": "ms", "target": None, "peers": {},
         "note": f"through mosquitto to rcagentd; the rcadmin call alone p50 {statistics.median(calls):.1f} ms"},
        {"id": "activity_update_to_watch_p99", "figure": "rcadmin activity update -> rcagent activity watch line (p99)",
         "value": round(p99, 1), "unit": "ms", "target": None, "peers": {}, "note": f"{rounds} updates"},
    ])
finally:
    for process in reversed(processes):
        process.kill()
        process.wait()
    shutil.rmtree(work, ignore_errors=True)
