#!/usr/bin/env python3
"""Issue 30, item 4: where a 3-node NATS cluster spends an agent's start-up. The fleet benchmark
(bench/fleet.py) times whole agents; this one takes the agent out and asks the cluster for exactly
what an agent's connect asks for, one piece at a time, with Debian's mosquitto clients:

  session       a persistent session (clean session off, MQTT 3.1.1) and nothing else;
  qos1-1topic   the session and one QoS 1 subscription (one JetStream consumer);
                (a client that has no SUBACK within 30 s is stopped and counted as failed)
  qos1-2topics  the session and the agent's two QoS 1 subscriptions, `PUSH_RC` and `PUSH_RC/<id>`
                (two consumers: what every agent asks for);
  qos0-2topics  the same two at QoS 0 (no consumer: a plain NATS subscription);

each for N clients (`-i` a new client id each, so each is a new session), C at a time. Per variant:
wall time, the cluster's CPU (utime + stime of the three nats-server processes from /proc) per
client, and per-client time from exec to SUBACK (mosquitto_sub -E exits once subscribed).

Usage: bench/nats-sessions.py [N] [C]     (N 100 clients per variant, C 10 at a time)
Environment: RCBENCH_NATS_MQTT (more settings for the nodes' mqtt block, as bench/fleet.py's
RCBENCH_FLEET_NATS_MQTT), RCBENCH_KEEP (keep the work directory).
Every process it starts is stopped by its pid on any exit.
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time
import urllib.request

from agentsetup import cpu_ms, free_port, report

clients = int(sys.argv[1]) if len(sys.argv) > 1 else 100
parallel = int(sys.argv[2]) if len(sys.argv) > 2 else 10
nats_mqtt = os.environ.get("RCBENCH_NATS_MQTT", "")
work = tempfile.mkdtemp(prefix="rcnats-")
nodes = []
figures = []

VARIANTS = {
    "session": ["mosquitto_pub", "-n", "-q", "0", "-t", "rcbench/none"],
    "qos1-1topic": ["mosquitto_sub", "-E", "-q", "1", "-t", "PUSH_RC"],
    "qos1-2topics": ["mosquitto_sub", "-E", "-q", "1", "-t", "PUSH_RC", "-t", "PUSH_RC/{id}"],
    "qos0-2topics": ["mosquitto_sub", "-E", "-q", "0", "-t", "PUSH_RC", "-t", "PUSH_RC/{id}"],
}


def monitor(node, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{node['monitor']}{path}", timeout=5) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def formed():
    names = {n["name"] for n in nodes}
    for n in nodes:
        jsz, health = monitor(n, "/jsz"), monitor(n, "/healthz")
        if not (jsz and health) or jsz.get("meta_cluster", {}).get("leader") not in names \
                or health.get("status") != "ok":
            return False
    return True


def start_cluster():
    for i in range(3):
        nodes.append({"name": f"n{i + 1}", "client": free_port(), "mqtt": free_port(), "monitor": free_port(),
                      "route": free_port()})
    routes = ", ".join(f"nats-route://127.0.0.1:{n['route']}" for n in nodes)
    for n in nodes:
        d = os.path.join(work, n["name"])
        os.makedirs(d)
        with open(f"{d}/nats.conf", "w") as f:
            f.write(f"""server_name: {n['name']}
listen: 127.0.0.1:{n['client']}
http: 127.0.0.1:{n['monitor']}
log_file: "{d}/nats.log"
jetstream {{ store_dir: "{d}/jetstream" }}
cluster {{ name: rcbench, listen: 127.0.0.1:{n['route']}, routes: [{routes}] }}
mqtt {{
    listen: 127.0.0.1:{n['mqtt']}
    {nats_mqtt}
}}
""")
        n["process"] = subprocess.Popen(["/usr/sbin/nats-server", "-c", f"{d}/nats.conf"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not formed():
        if time.monotonic() > deadline:
            raise SystemExit("the NATS cluster did not form within 60 s")
        time.sleep(0.1)


def cluster_cpu_ms():
    return sum(cpu_ms(n["process"].pid) for n in nodes)


def run_variant(name, template):
    """N clients of one variant, C at a time, spread over the nodes as the fleet is (client k on
    node k mod 3); returns (wall s, cluster CPU ms per client, per-client seconds, failures)."""
    pending = list(range(clients))
    running = {}
    times, failures = [], 0
    cpu0, t0 = cluster_cpu_ms(), time.monotonic()
    while pending or running:
        while pending and len(running) < parallel:
            k = pending.pop(0)
            node = nodes[k % len(nodes)]
            ident = f"{name}-{k}"
            args = [a.replace("{id}", ident) for a in template]
            args[1:1] = ["-h", "127.0.0.1", "-p", str(node["mqtt"]), "-V", "mqttv311", "-c", "-i", ident]
            running[subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)] = time.monotonic()
        for process in list(running):
            if process.poll() is None and time.monotonic() - running[process] > timeout:
                process.kill()  # no SUBACK in time (a refused filter leaves mosquitto_sub waiting)
                process.wait()
            if process.poll() is not None:
                started = running.pop(process)
                if process.returncode == 0:
                    times.append(time.monotonic() - started)
                else:
                    failures += 1
        time.sleep(0.005)
    wall = time.monotonic() - t0
    # The cluster may still be replicating what the last clients asked for: 3 s more are counted.
    # (Each replicated consumer is a Raft group that keeps beating, so an idle cluster's CPU rate
    # grows with the consumers it holds: that part is printed apart, as the idle rate after.)
    time.sleep(3)
    last = cluster_cpu_ms()
    cpu = (last - cpu0) / clients
    times.sort()
    return wall, cpu, times, failures


def idle_rate(seconds=2.0):
    """The cluster's CPU while no client does anything, in ms per second."""
    before = cluster_cpu_ms()
    time.sleep(seconds)
    return (cluster_cpu_ms() - before) / seconds


def on_signal(number, _frame):
    raise SystemExit(f"stopped by signal {number}")


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, on_signal)

timeout = 30  # seconds a client may take before it counts as a failure


try:
    start_cluster()
    # The first MQTT client makes the cluster create its MQTT streams: not any variant's cost.
    run_variant("warm-up", VARIANTS["session"])
    print(f"NATS cluster of 3 formed; {clients} clients per variant, {parallel} at a time; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for name, template in VARIANTS.items():
        wall, cpu, times, failures = run_variant(name, template)
        p50 = times[len(times) // 2] if times else None
        idle = idle_rate()
        print(f"{name}: {clients} clients in {wall:.2f} s; cluster CPU {cpu:.1f} ms per client, idle after "
              f"{idle:.0f} ms/s; "
              f"exec to SUBACK p50 {p50 or 0:.3f} s, max {times[-1] if times else 0:.3f} s; failures {failures}",
              flush=True)
        figures.append({"id": f"nats_sessions.{name}.cluster_cpu_ms", "figure": f"NATS cluster CPU per client: {name}",
                        "value": round(cpu, 1), "unit": "ms", "target": None, "note": f"{clients} clients, {parallel} at a time",
                        "peers": {"wall_s": round(wall, 2), "idle_cpu_ms_per_s_after": round(idle), "p50_s": round(p50, 3) if p50 else None,
                                  "failures": failures}})
    report("nats-sessions", figures)
finally:
    for n in nodes:
        if n.get("process") and n["process"].poll() is None:
            n["process"].send_signal(signal.SIGTERM)
            try:
                n["process"].wait(timeout=30)
            except subprocess.TimeoutExpired:
                n["process"].kill()
                n["process"].wait()
    if os.environ.get("RCBENCH_KEEP"):
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
