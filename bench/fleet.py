#!/usr/bin/env python3
"""Issue 19 fleet benchmark: N real rcagentd processes (1,000 by default) on this machine, each with
its own small state directory and socket, fetching over HTTP from one real nginx (a static file
with nginx's own ETags, as a CDN edge serves it) and pushed over MQTT through (a) one mosquitto and
(b) a 3-node nats-server cluster with its MQTT listener and JetStream (agents spread over the
nodes, each agent's broker list starting with its own node so it fails over to the others).

Everything is measured from outside the agents, never by polling them: one subscriber
(mosquitto_sub on `<topic>/+`, read line by line with monotonic timestamps) sees every retained
report the agents publish (`[Report] MQTTStatusTopic=`), and nginx's access log says which agent
asked for what (each agent's URL carries `?agent=I`) and when.

Per broker:
  - start-up: agents started in batches (the next batch once the last one has reported), time
    until all N report the first template;
  - for each Jitter (0, 5s, 30s): one stale ping (`rcadmin notify-stale --mqtt`, on the first node
    for NATS) -> time until every agent reports the new templateVersion (p50, p99, max), and the
    requests nginx served per agent for it; for Jitter=0 the CPU time each process group used over
    the round and when the first and last fetch reached nginx (where the time goes);
  - memory per agent (PSS from /proc/PID/smaps_rollup, mean and max) once the fleet is idle;
  - the broker restarted under the fleet (SIGTERM, start again): fetches it caused and time until
    every agent reports online again (target: no more fetches than agents);
  - NATS only: one node killed (SIGKILL): time until its agents are connected to the other nodes,
    then one more ping and the time until every agent reports it.

Targets (SPEC 9): with Jitter=30s every agent reports within Jitter + 2 s; <= 1.05 requests per
agent; a broker restart costs no more fetches than agents.

Usage: bench/fleet.py BIN_DIR [AGENTS]
Environment: RCBENCH_FLEET_JITTERS ("0 5s 30s"), RCBENCH_FLEET_BROKERS ("mosquitto nats"),
RCBENCH_FLEET_BATCH (agents started at a time: all on mosquitto, 50 on NATS), RCBENCH_FLEET_NATS_MQTT (more settings for the
nodes' mqtt block; see below), RCBENCH_FLEET_STARTUP_ONLY=1 (only the start-ups, each followed by
where its CPU went), RCBENCH_FLEET_PERF=1 (perf record the Jitter=0 rounds), RCBENCH_KEEP
(keep the work directory).
Every process it starts is stopped by its pid (nginx by its process group) on any exit.
"""
import datetime, json, os, re, resource, shutil, signal, sqlite3, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

from agentsetup import cpu_ms, free_port, report, write_nginx_config

bin_dir = os.path.abspath(sys.argv[1])
agents = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
jitters = os.environ.get("RCBENCH_FLEET_JITTERS", "0 5s 30s").split()
brokers = os.environ.get("RCBENCH_FLEET_BROKERS", "mosquitto nats").split()
# Agents started at a time: on mosquitto all at once (batches of 50 each waited about 1 s for their
# slowest report, the report's own pacing: 200 agents in 11.1-11.2 s in batches of 50, 7.2-8.1 s
# at once, BENCHMARKS.md); on NATS 50, since each subscription is a JetStream consumer and a
# cluster asked for too many at once refuses some.
batch_setting = os.environ.get("RCBENCH_FLEET_BATCH")
BATCHES = {"mosquitto": agents, "nats": 50}
# More settings for the NATS nodes' mqtt block; by default none: nats-server's own defaults, each
# QoS 1 subscription's consumer 3 replicas on disk, which survive a node. Creating 2,000 of them on
# 2 cores times out for some agents' subscriptions at start; the agent retries a refused
# subscription (BENCHMARKS.md). RCBENCH_FLEET_NATS_MQTT="consumer_replicas: 1,
# consumer_memory_storage: true" is the cheaper setting the first runs used, whose consumers die
# with their node.
nats_mqtt = os.environ.get("RCBENCH_FLEET_NATS_MQTT", "")
startup_only = os.environ.get("RCBENCH_FLEET_STARTUP_ONLY") == "1"  # only the start-ups (no rounds)
topic = "rcfleet/status"
work = tempfile.mkdtemp(prefix="rcfleet-")
figures = []
children = []  # (Popen, whole process group?) for everything started, stopped by pid at exit


def spawn(args, group=False, **kwargs):
    """Starts a child and remembers it; `group`: in a process group of its own (nginx's master and
    worker), stopped together by that group's id."""
    process = subprocess.Popen(args, start_new_session=group, **kwargs)
    children.append((process, group))
    return process


def stop(process, sig=signal.SIGKILL):
    """Stops one child by its pid (its group's for a group) and reaps it."""
    for entry in list(children):
        if entry[0] is process:
            children.remove(entry)
            try:
                os.killpg(process.pid, sig) if entry[1] else process.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL) if entry[1] else process.kill()
                process.wait()


def stop_all():
    for process, _ in list(children):
        stop(process)


def on_signal(number, _frame):
    raise SystemExit(f"stopped by signal {number}")


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, on_signal)


def raise_file_limit():
    """Every agent, broker connection and nginx connection is a descriptor in one of our children,
    which inherit this limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(65536, agents * 8)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def wait_for(condition, limit, what, fail=True):
    """Polls `condition` (cheap: it reads what the subscriber or a log collected) every 20 ms; after
    `limit` seconds stops the run (`fail`) or returns False."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            if fail:
                raise SystemExit(f"timed out after {limit} s waiting for {what}")
            return False
        time.sleep(0.02)
    return True


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))]


def figure(id, text, value, unit, target=None, note=None, peers=None, verdict=None):
    """One figure; `verdict` for one the script judged itself (a case that did not complete: no value)."""
    figures.append({"id": id, "figure": text, "value": value, "unit": unit, "target": target, "note": note,
                    "peers": peers or {}, **({"verdict": verdict} if verdict else {})})


# ---------------------------------------------------------------- nginx


class Nginx:
    """A real nginx (master + one worker) serving WORK/www; `daemon off` as our child, its pid file,
    logs and temp paths in its directory. Access log: one line per request, `$msec $status
    $request_uri "$http_if_none_match"`."""

    def __init__(self):
        self.dir = os.path.join(work, "nginx")
        self.www = os.path.join(self.dir, "www")
        os.makedirs(os.path.join(self.dir, "temp"))
        os.makedirs(self.www)
        self.port = free_port()
        self.log = os.path.join(self.dir, "access.log")
        self.modified = int(time.time())
        write_nginx_config(
            self.dir, self.port, self.www, connections=max(4096, agents * 2),
            access_log=f"log_format fleet '$msec $status $request_uri \"$http_if_none_match\"';\n    access_log {self.log} fleet;",
            main=f"worker_rlimit_nofile {max(8192, agents * 4)};\n")
        open(self.log, "w").close()
        d = self.dir
        self.process = spawn(["/usr/sbin/nginx", "-p", d, "-e", f"{d}/error.log", "-c", f"{d}/nginx.conf",
                              "-g", "daemon off;"], group=True)
        wait_port(self.port, "nginx")

    def serve(self, version):
        """Replaces config.json atomically (written beside it, renamed over it). nginx's ETag is the
        mtime in whole seconds and the size, so each version gets an mtime at least 1 s after the last."""
        body = json.dumps({"state": "UPDATE", "templateVersion": str(version), "entries": {"banner": f"v{version}"}})
        tmp = os.path.join(self.www, "config.json.tmp")
        with open(tmp, "w") as f:
            f.write(body)
        self.modified = max(int(time.time()), self.modified + 1)
        os.utime(tmp, (self.modified, self.modified))
        os.rename(tmp, os.path.join(self.www, "config.json"))

    def url(self, index):
        return f"http://127.0.0.1:{self.port}/config.json?agent={index}"

    def offset(self):
        return os.path.getsize(self.log)

    def requests(self, since=0):
        """(time, status, agent index) of each request logged after byte `since`."""
        with open(self.log) as f:
            f.seek(since)
            lines = f.read().splitlines()
        result = []
        for line in lines:
            m = re.match(r'^(\d+\.\d+) (\d+) /config\.json\?agent=(\d+) ', line)
            if m:
                result.append((float(m.group(1)), int(m.group(2)), int(m.group(3))))
        return result

    def pids(self):
        return [self.process.pid] + [int(p) for p in subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout.split()]


def wait_port(port, what, limit=20):
    import socket
    deadline = time.monotonic() + limit
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not listen on {port}")
        time.sleep(0.05)


# ---------------------------------------------------------------- brokers


class Mosquitto:
    """One mosquitto with persistence (a restarted broker keeps sessions and retained reports, as a
    production broker does; it saves them on SIGTERM)."""
    name = "mosquitto"

    def __init__(self):
        self.dir = os.path.join(work, "mosquitto")
        os.makedirs(self.dir)
        self.port = free_port()
        with open(f"{self.dir}/mosquitto.conf", "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nuser root\n"
                    f"persistence true\npersistence_location {self.dir}/\nmax_queued_messages 100000\n"
                    f"max_inflight_messages 0\nlog_dest file {self.dir}/mosquitto.log\n")
        self.start()

    def start(self):
        self.process = spawn(["/usr/sbin/mosquitto", "-c", f"{self.dir}/mosquitto.conf"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, "mosquitto")

    def restart(self):
        """Stops (SIGTERM: it saves its sessions) and starts the broker; returns when it accepts
        connections again."""
        stop(self.process, signal.SIGTERM)
        self.start()
        return time.monotonic()

    def close(self):
        stop(self.process, signal.SIGTERM)

    def urls(self, index):
        return [f"mqtt://127.0.0.1:{self.port}"]

    def ping_port(self):
        return self.port

    def pids(self):
        return [self.process.pid]


class NATSCluster:
    """3 nats-server nodes: MQTT listener, JetStream (own store_dir), routes to each other, unique
    server_name. Ready once every running node routes to the others and sees a running JetStream
    meta leader (its monitoring endpoint says so)."""
    name = "nats"

    def __init__(self, size=3):
        self.dir = os.path.join(work, "nats")
        self.nodes = []
        for i in range(size):
            self.nodes.append({"name": f"n{i + 1}", "client": free_port(), "mqtt": free_port(),
                               "monitor": free_port(), "route": free_port(), "process": None})
        routes = ", ".join(f"nats-route://127.0.0.1:{n['route']}" for n in self.nodes)
        for n in self.nodes:
            d = os.path.join(self.dir, n["name"])
            os.makedirs(d)
            n["conf"] = f"{d}/nats.conf"
            with open(n["conf"], "w") as f:
                f.write(f"""server_name: {n['name']}
listen: 127.0.0.1:{n['client']}
http: 127.0.0.1:{n['monitor']}
log_file: "{d}/nats.log"
max_connections: 65536
jetstream {{ store_dir: "{d}/jetstream" }}
cluster {{ name: rcfleet, listen: 127.0.0.1:{n['route']}, routes: [{routes}] }}
mqtt {{
    listen: 127.0.0.1:{n['mqtt']}
    {nats_mqtt}
}}
""")
        for i in range(size):
            self.start_node(i)
        self.wait_formed()

    def start_node(self, i):
        n = self.nodes[i]
        n["process"] = spawn(["/usr/sbin/nats-server", "-c", n["conf"]],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(n["mqtt"], f"nats-server {n['name']}")

    def kill_node(self, i, sig=signal.SIGKILL):
        stop(self.nodes[i]["process"], sig)
        self.nodes[i]["process"] = None

    def monitor(self, i, path):
        """The JSON of a monitoring endpoint; an error status's body too (`/healthz` answers 503
        with what is wrong), None when the node does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.nodes[i]['monitor']}{path}", timeout=5) as r:
                return json.load(r)
        except urllib.error.HTTPError as error:
            try:
                return json.load(error)
            except ValueError:
                return None
        except (OSError, ValueError):
            return None

    def running(self):
        return [i for i, n in enumerate(self.nodes) if n["process"]]

    def unformed(self):
        """Why the running nodes are not one cluster yet (a node's missing routes or meta leader,
        its health check's error), or None once they are."""
        running = self.running()
        names = {self.nodes[i]["name"] for i in running}
        for i in running:
            name = self.nodes[i]["name"]
            jsz, routez, health = self.monitor(i, "/jsz"), self.monitor(i, "/routez"), self.monitor(i, "/healthz")
            if not (jsz and routez and health):
                return f"{name} does not answer its monitoring endpoints"
            leader = jsz.get("meta_cluster", {}).get("leader")
            if leader not in names:
                return f"{name}: JetStream meta leader {leader!r}"
            if routez.get("num_routes", 0) < len(running) - 1:
                return f"{name}: {routez.get('num_routes', 0)} routes"
            if health.get("status") != "ok":
                return f"{name}: health {health.get('status')!r}: {health.get('error', '')}"
        return None

    def formed(self):
        return self.unformed() is None

    def wait_formed(self, limit=60):
        if not wait_for(self.formed, limit, "the NATS cluster to form", fail=False):
            raise SystemExit(f"timed out after {limit} s waiting for the NATS cluster to form: {self.unformed()}")

    def restart(self):
        """Stops every node (SIGTERM) and starts them again; returns when they accept MQTT
        connections again (agents connect from then on, while the cluster is still forming)."""
        for i in range(len(self.nodes)):
            self.kill_node(i, signal.SIGTERM)
        for i in range(len(self.nodes)):
            self.start_node(i)
        up = time.monotonic()
        self.wait_formed(120)
        return up

    def close(self):
        for i in self.running():
            self.kill_node(i, signal.SIGTERM)

    def consumers(self):
        """The JetStream consumers the cluster holds: each agent's session has one per QoS 1
        subscription (PUSH_RC and PUSH_RC/<id>), created when it subscribes."""
        # Each node counts the consumer replicas it holds: 3 by default, `consumer_replicas:` if set.
        m = re.search(r"consumer_replicas:\s*(\d+)", nats_mqtt)
        replicas = min(int(m.group(1)) if m else 3, len(self.running()))
        return sum((self.monitor(i, "/jsz") or {}).get("consumers", 0) for i in self.running()) // replicas

    def mqtt_clients(self, i):
        """The MQTT client ids connected to node i (its /connz)."""
        connz = self.monitor(i, f"/connz?limit={agents * 2}&subs=0")
        return {c.get("mqtt_client") for c in (connz or {}).get("connections", []) if c.get("mqtt_client")}

    def urls(self, index):
        home = index % len(self.nodes)
        order = [self.nodes[(home + k) % len(self.nodes)] for k in range(len(self.nodes))]
        return [f"mqtt://127.0.0.1:{n['mqtt']}" for n in order]

    def ping_port(self):
        return self.nodes[0]["mqtt"]

    def pids(self):
        return [n["process"].pid for n in self.nodes if n["process"]]


# ---------------------------------------------------------------- the reports


class Reports:
    """One mosquitto_sub on `<topic>/+`: every report, in arrival order, with a monotonic time.
    mosquitto_sub gives up when a reconnect fails (a whole NATS cluster restarting), so it is
    started again when it ends; the broker then sends the retained reports again, which is why
    "reported after X" is judged by the report's own `at`."""

    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.latest = {}  # deviceId -> (time, report)
        self.events = []  # (time, deviceId, report)
        self.bad = 0
        self.closing = False
        self.subscribe()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def subscribe(self):
        self.process = spawn(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-q", "1", "-v",
                              "-t", f"{topic}/+"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             bufsize=1)

    def close(self):
        self.closing = True
        stop(self.process)

    def read(self):
        while True:
            for line in self.process.stdout:
                now = time.monotonic()
                name, _, payload = line.rstrip("\n").partition(" ")
                try:
                    body = json.loads(payload)
                    device = body["deviceId"]
                except (ValueError, KeyError, TypeError):
                    self.bad += 1
                    continue
                with self.lock:
                    self.latest[device] = (now, body)
                    self.events.append((now, device, body))
            if self.closing:
                return
            stop(self.process)
            time.sleep(0.2)
            self.subscribe()

    def count(self, predicate):
        with self.lock:
            return sum(1 for _, body in self.latest.values() if predicate(body))

    def since(self, start):
        with self.lock:
            return [e for e in self.events if e[0] >= start]


# ---------------------------------------------------------------- the fleet


def write_configs(broker, jitter, reports_on):
    for i in range(agents):
        d = f"{work}/a{i}"
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(f"{d}/defaults.json"):
            with open(f"{d}/defaults.json", "w") as f:
                f.write("{}")
        report_section = f"[Report]\nMQTTStatusTopic={topic}\n" if reports_on else ""
        with open(f"{d}/agent.conf", "w") as f:
            f.write(f"[Agent]\nStateDirectory={d}/state\nSocket={d}/agent.sock\nSocketGroup=\nDefaults={d}/defaults.json\n"
                    f"MinimumFetchInterval=1d\n"
                    f"[Source]\nType=http\nURL={nginx.url(i)}\n"
                    f"[Push]\nMQTT={' '.join(broker.urls(i)[:broker_urls])}\nJitter={jitter}\n{report_section}")


def accepts_config(text):
    """Whether this build's rcagent takes a config (a newer key or value form)."""
    d = f"{work}/probe"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/agent.conf", "w") as f:
        f.write(f"[Agent]\nStateDirectory={d}/state\nSocket={d}/agent.sock\nSocketGroup=\nDefaults={d}/d.json\n" + text)
    result = subprocess.run([f"{bin_dir}/rcagent", "--config", f"{d}/agent.conf", "status"],
                            capture_output=True, text=True)
    return "agent.conf:" not in result.stderr


def start_fleet(broker, jitter, expected_version):
    """Starts every agent in batches, each batch once the one before has reported (or, without
    reports, fetched); returns the pids, the start-up time, the batch size and, when a batch was
    still not all there after 120 s, how many agents were of how many started (else None): the
    start-up then stops there."""
    write_configs(broker, jitter, reports_on)
    pids = []
    others = {"broker": broker.pids(), "nginx": nginx.pids(), "subscriber": [reports.process.pid] if reports_on else []}
    cpu_before = {name: cpu_of(group) for name, group in others.items()}
    self_before, machine_before = own_cpu_ms(), machine_jiffies()
    t0 = time.monotonic()
    offset = nginx.offset()
    waits = []
    stuck = None
    batch = int(batch_setting) if batch_setting else BATCHES[broker.name]
    for start in range(0, agents, batch):
        spawned = time.monotonic()
        for i in range(start, min(agents, start + batch)):
            log = open(f"{work}/a{i}/daemon.log", "ab")
            pids.append(spawn([f"{bin_dir}/rcagentd", "--config", f"{work}/a{i}/agent.conf"], stdout=log, stderr=log))
            log.close()
        done = min(agents, start + batch)
        if reports_on:
            def there():
                # The ids once per poll: asked per report, this loop over every agent made the
                # script's own CPU O(agents^2) per poll, 10-22 s of a 1,000-agent start-up.
                ids = fleet_ids(pids)
                return reports.count(lambda r: r.get("online") and r.get("templateVersion") == expected_version
                                     and r["deviceId"] in ids)
        else:
            def there():
                return len({i for _, _, i in nginx.requests(offset)})
        if not wait_for(lambda: there() >= done, 120, f"{done} agents there", fail=False) and there() < done:
            stuck = (there(), done)
            print(f"  only {stuck[0]} of {done} agents {'reporting' if reports_on else 'fetching'} template "
                  f"{expected_version} 120 s after batch {start // batch + 1} started: the start-up stops here",
                  flush=True)
            waits.append(time.monotonic() - spawned)
            break
        if isinstance(broker, NATSCluster):
            # A subscription is a consumer created through the JetStream meta leader; a batch that
            # has not got them all yet is not done (the next would only pile onto the same queue).
            if not wait_for(lambda: broker.consumers() >= 2 * done, 60, f"{2 * done} consumers", fail=False):
                print(f"  only {broker.consumers()} of {2 * done} consumers after 60 s: some subscriptions failed",
                      flush=True)
        waits.append(time.monotonic() - spawned)
    elapsed = time.monotonic() - t0
    startup_cpu(broker, jitter, pids, others, cpu_before, self_before, machine_before, elapsed, waits)
    return pids, elapsed, batch, stuck


def own_cpu_ms():
    """The CPU this script and its finished children used (the bench's own share of the machine)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


def machine_jiffies():
    """(busy, idle) clock ticks of all CPUs from /proc/stat: whether the machine was saturated."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, idle


def startup_cpu(broker, jitter, processes, others, cpu_before, self_before, machine_before, elapsed, waits):
    """Where a start-up's time went: the CPU the agents used from exec to now (each started fresh), the
    broker's, nginx's, the subscriber's and this script's over the same time, and how much of the
    machine stayed idle (idle CPU while agents wait to start: the batching, not the agents, is the
    limit). Printed, and kept as the start-up figure's peers."""
    agents_ms = cpu_of([p.pid for p in processes])
    cpu = {name: (cpu_of(group) - cpu_before[name]) / 1000 for name, group in others.items()}
    cpu["agents"] = agents_ms / 1000
    cpu["bench"] = (own_cpu_ms() - self_before) / 1000
    busy, idle = (now - before for now, before in zip(machine_jiffies(), machine_before))
    idle_share = idle / max(1, busy + idle)
    waits = sorted(waits)
    print(f"  start-up CPU ({elapsed:.1f} s wall, 2 cores = {2 * elapsed:.1f} s): "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in cpu.items())
          + f"; {agents_ms / len(processes):.1f} ms per agent; machine idle {100 * idle_share:.0f}%; "
          f"batch waits median {waits[len(waits) // 2]:.2f} s, max {waits[-1]:.2f} s", flush=True)
    startup_peers[(broker.name, jitter)] = {
        "cpu_s": {k: round(v, 2) for k, v in cpu.items()}, "agent_cpu_ms": round(agents_ms / len(processes), 1),
        "machine_idle_percent": round(100 * idle_share), "batch_wait_median_s": round(waits[len(waits) // 2], 2)}


startup_peers = {}  # (broker, jitter) -> where that start-up's time went
STARTUP_TARGETS = {"mosquitto": 15, "nats": 30}  # seconds for 1,000 agents started fresh (issue 30, item 4)


device_ids = {}  # agent index -> device id (from its state database, read once)


def fleet_ids(processes):
    """The device ids of the agents started so far (read from each new agent's database once it exists)."""
    for i in range(len(processes)):
        if i not in device_ids:
            try:
                db = sqlite3.connect(f"file:{work}/a{i}/state/state.db?mode=ro", uri=True, timeout=0.2)
                row = db.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()
                db.close()
                if row:
                    device_ids[i] = row[0]
            except sqlite3.Error:
                pass
    return set(device_ids.values())


def stop_fleet(processes):
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        stop(p, signal.SIGTERM)


def cpu_of(pids):
    total = 0
    for pid in pids:
        try:
            total += cpu_ms(pid)
        except OSError:
            pass
    return total


def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return int(re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M).group(1))


def ping(broker, version):
    """`rcadmin notify-stale` on the broker (the first node for NATS). Right after a node of the
    cluster died its surviving nodes refuse MQTT connections until the streams it led have new
    leaders: an operator would try again, so does this (10 times, 0.5 s apart). Returns when the
    attempt the broker took began, as time.time() and time.monotonic() (the round is timed from
    there), and the seconds since the first attempt (the refused ones, each printed)."""
    first = time.monotonic()
    for attempt in range(10):
        wall, began = time.time(), time.monotonic()
        result = subprocess.run([f"{bin_dir}/rcadmin", "notify-stale", "--mqtt",
                                 f"mqtt://127.0.0.1:{broker.ping_port()}", "--template-version", str(version)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode == 0:
            if attempt:
                print(f"  the broker took the ping {began - first:.2f} s after the first attempt", flush=True)
            return wall, began, began - first
        print(f"  the ping failed after {time.monotonic() - began:.2f} s ({result.stderr.strip()}); again in 0.5 s",
              flush=True)
        time.sleep(0.5)
    raise SystemExit("the ping could not be published")


def converge(broker, processes, version, jitter_seconds, label, log_sizes=None, since="during the round"):
    """One ping for `version`: times until each agent reports it (or, without reports, fetches it),
    requests per agent, and the CPU split. Returns the per-agent delays. The agents' connections are
    counted from `log_sizes` (``agent_logs_sizes()``, by default taken now), which `since` names."""
    nginx.serve(version)
    groups = {"agents": [p.pid for p in processes], "nginx": nginx.pids(), "broker": broker.pids(),
              "subscriber": [reports.process.pid] if reports_on else []}
    cpu_before = {name: cpu_of(pids) for name, pids in groups.items()}
    offset = nginx.offset()
    log_sizes = log_sizes or agent_logs_sizes()
    profile = start_perf(label) if jitter_seconds == 0 else None
    start = time.monotonic()
    wall0, t0, refused_s = ping(broker, version)
    limit = jitter_seconds + 60
    if reports_on:
        wait_for(lambda: reports.count(lambda r: r.get("templateVersion") == str(version)) >= agents, limit,
                 f"{agents} agents reporting template {version}", fail=False)
        first = {}
        # An agent a reconnect made fetch the new version before the broker took the ping: 0 s.
        for t, device, body in reports.since(start):
            if body.get("templateVersion") == str(version) and device not in first:
                first[device] = max(0.0, t - t0)
        delays = sorted(first.values())
    else:
        wait_for(lambda: len({i for _, s, i in nginx.requests(offset) if s == 200}) >= agents, limit,
                 f"{agents} agents fetching template {version}", fail=False)
        first = {}
        for t, status, i in nginx.requests(offset):
            if status == 200 and i not in first:
                first[i] = max(0.0, t - wall0)
        delays = sorted(first.values())
    elapsed = time.monotonic() - start
    time.sleep(1)  # requests still on their way are counted too
    requests = nginx.requests(offset)
    cpu_after = {name: cpu_of(pids) for name, pids in groups.items()}
    profiled = stop_perf(profile, groups) if profile else {}
    per_agent = {}
    for _, _, i in requests:
        per_agent[i] = per_agent.get(i, 0) + 1
    # More than one fetch for the ping: an agent that reconnected during the round refetched (one
    # per connection), or one that fetched twice for one ping (a flaw of the agent).
    connections = connections_since(log_sizes)
    twice = [i for i, n in per_agent.items() if n > 1]
    reconnected = sum(c > 0 for c in connections)
    unexplained = sum(per_agent[i] > 1 + connections[i] for i in twice if 0 <= i < agents)
    fetch_times = [t - wall0 for t, _, _ in requests]
    source = "reports" if reports_on else "nginx log (200 of the new version; no reports in this build)"
    missing = agents - len(delays)
    if not delays:
        raise SystemExit(f"{label}: no agent got template {version} within {limit} s")
    p50, p99, worst = percentile(delays, 50), percentile(delays, 99), delays[-1]
    if missing:
        print(f"{label}: {missing} AGENTS NEVER GOT template {version} within {limit} s", flush=True)
    print(f"{label}: {len(delays)} agents have template {version} (from {source}): p50 {p50:.2f} s, "
          f"p99 {p99:.2f} s, max {worst:.2f} s; nginx served {len(requests)} requests "
          f"({len(requests) / agents:.3f} per agent, most by one agent {max(per_agent.values())}); "
          f"fetches reached nginx from {min(fetch_times):.2f} to {max(fetch_times):.2f} s", flush=True)
    if twice or reconnected:
        print(f"{label}: {reconnected} agents reconnected {since} ({sum(connections)} connections); "
              f"{len(twice)} fetched more than once, {unexplained} of them more often than once plus their "
              "connections", flush=True)
    cpu = {name: cpu_after[name] - cpu_before[name] for name in groups}
    print(f"{label}: CPU over the round ({elapsed:.2f} s wall, 2 cores = {2 * elapsed:.1f} s): "
          + ", ".join(f"{name} {ms / 1000:.2f} s" for name, ms in cpu.items()), flush=True)
    key = label.replace(" ", "_").replace("=", "_")
    target = {"op": "<=", "value": jitter_seconds + 2} if jitter_seconds == 30 else None
    figure(f"fleet.{key}.max", f"{label}: ping -> all {agents} report the new version, max",
           None if missing else round(worst, 2), "s", target,
           f"p50 {p50:.2f} s, p99 {p99:.2f} s, from {source}"
           + (f"; timed from the attempt the broker took, {refused_s:.1f} s after the first" if refused_s else "")
           + (f"; {missing} agents never got it within {limit} s" if missing else ""),
           {"missing": missing, "max_of_those_that_did_s": round(worst, 2), "p50_s": round(p50, 2), "p99_s": round(p99, 2), "first_fetch_s": round(min(fetch_times), 2),
            "last_fetch_s": round(max(fetch_times), 2), "ping_refused_s": round(refused_s, 2), "cpu_s": {k: v / 1000 for k, v in cpu.items()},
            "perf": profiled}, verdict="missed" if missing else None)
    figure(f"fleet.{key}.requests_per_agent", f"{label}: nginx requests per agent for the ping",
           round(len(requests) / agents, 3), "", {"op": "<=", "value": 1.05},
           f"{reconnected} agents reconnected {since}; {len(twice)} fetched more than once, "
           f"{unexplained} beyond one per ping and connection" if twice or reconnected else None,
           {"requests": len(requests), "max_by_one_agent": max(per_agent.values()),
            "agents_without_request": agents - len(per_agent), "agents_reconnected": reconnected,
            "connections": sum(connections), "agents_beyond_ping_and_connections": unexplained})
    return delays


def start_perf(label):
    """`perf record` of the whole machine (cpu-clock: this VM has no hardware counters) over a
    Jitter=0 round, with RCBENCH_FLEET_PERF=1 only: here perf gave the agents a few percent of the
    samples while /proc said they used 70% of both cores (not explained yet; the agents' work runs
    on short-lived dispatch threads), so the per-group CPU times from /proc are the figure."""
    if os.environ.get("RCBENCH_FLEET_PERF") != "1" or not shutil.which("perf"):
        return None
    path = os.path.join(work, f"perf-{len(figures)}.data")
    process = spawn(["perf", "record", "-e", "cpu-clock", "-F", "499", "-a", "-o", path],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # perf opens its per-CPU buffers before the ping goes out
    return process, path


def stop_perf(profile, groups):
    """Stops perf and prints the share of all samples each process group had, the libraries the
    agents' samples fell in, and the busiest processes on the machine (other builders included)."""
    process, path = profile
    stop(process, signal.SIGINT)

    def top(args, lines, limit="0.5"):
        out = subprocess.run(["perf", "report", "-i", path, "--stdio", "--percent-limit", limit] + args,
                             capture_output=True, text=True).stdout
        rows = [line.strip() for line in out.splitlines() if line.strip() and not line.startswith("#")]
        return [re.sub(r"\s+", " ", row) for row in rows[:lines]]

    shares = {}
    for name, pids in groups.items():
        if pids:
            rows = top(["--pid", ",".join(map(str, pids)), "--sort", "pid"], 100000, "0")
            shares[name] = round(sum(float(r.split("%")[0]) for r in rows if "%" in r), 1)
    result = {"share_of_samples_percent": shares,
              "agents_by_library": top(["--pid", ",".join(map(str, groups["agents"])), "--sort", "dso"], 10),
              "agents_by_symbol": top(["--pid", ",".join(map(str, groups["agents"])), "--sort", "dso,sym"], 12),
              "machine_by_command": top(["--sort", "comm"], 8)}
    print("  perf, share of all samples: " + ", ".join(f"{k} {v}%" for k, v in shares.items()))
    print("  agents' samples by library: " + "; ".join(result["agents_by_library"]))
    print("  agents' samples by symbol: " + "; ".join(result["agents_by_symbol"]))
    print("  the machine by command: " + "; ".join(result["machine_by_command"]), flush=True)
    return result


def memory(processes, label):
    values = []
    for p in processes:
        try:
            values.append(pss_kib(p.pid))
        except OSError:
            pass
    mean, worst = sum(values) / len(values), max(values)
    total_broker = 0
    print(f"{label}: PSS per agent mean {mean / 1024:.2f} MiB, max {worst / 1024:.2f} MiB "
          f"(all {len(values)} agents: {sum(values) / 1024:.0f} MiB)", flush=True)
    figure(f"fleet.{label.replace(' ', '_')}.pss_mean", f"{label}: PSS per agent, mean (max {worst / 1024:.2f} MiB)",
           round(mean / 1024, 2), "MiB", None, "smaps_rollup of every agent, idle", {"max_mib": round(worst / 1024, 2)})


def agent_logs_sizes():
    """Each agent's log size now: where `connections_since` starts counting."""
    sizes = []
    for i in range(agents):
        try:
            sizes.append(os.path.getsize(f"{work}/a{i}/daemon.log"))
        except OSError:
            sizes.append(0)
    return sizes


def agent_log_since(i, size):
    """What agent i logged after its log was `size` bytes long (b"" when it cannot be read)."""
    try:
        with open(f"{work}/a{i}/daemon.log", "rb") as f:
            f.seek(size)
            return f.read()
    except OSError:
        return b""


def connections_since(sizes):
    """Per agent, the push channel's MQTT connections it logged since `agent_logs_sizes()` said
    `sizes`. Each connection the broker accepts refetches once (a ping may have come while the
    device was away), so these bound the fetches a broker's trouble may cost."""
    return [agent_log_since(i, since).count(b"MQTT connected to ") for i, since in enumerate(sizes)]


def fetches_per_agent(requests):
    counts = [0] * agents
    for _, _, index in requests:
        if 0 <= index < agents:
            counts[index] += 1
    return counts


def restart_case(broker, processes, version):
    """The broker restarted under the idle fleet: fetches it causes (forced re-fetches after the
    reconnect, answered 304) and the time until every agent reports online again."""
    offset = nginx.offset()
    log_sizes = agent_logs_sizes()
    t0 = time.monotonic()
    wall = datetime.datetime.now(datetime.timezone.utc)
    up = broker.restart()

    def made_after_restart(d):
        entry = reports.latest.get(d)
        if not entry or not entry[1].get("online"):
            return False
        try:
            return datetime.datetime.fromisoformat(entry[1]["at"].replace("Z", "+00:00")) >= wall
        except (KeyError, ValueError, AttributeError):
            return False

    # A cluster that does not take its agents back within the limit (a recovering NATS cluster whose
    # JetStream times out persisting the sessions of 1,000 reconnecting agents) is a figure too: how
    # many were back, not the end of the run.
    online = not reports_on or wait_for(lambda: all(made_after_restart(d) for d in list(device_ids.values())),
                                        300, "every agent reporting online after the restart", fail=False)
    back = time.monotonic() - up
    if not online:
        back_count = sum(made_after_restart(d) for d in list(device_ids.values()))
        print(f"{broker.name} restart: only {back_count} of {len(device_ids)} agents report online "
              f"{back:.0f} s after it was up", flush=True)
        # What the first few missing agents last said, what reached the subscriber from them since the
        # restart, and their own log since: whether the report was lost, stale or never sent.
        missing = [(i, d) for i, d in sorted(device_ids.items()) if not made_after_restart(d)]
        for i, d in missing[:5]:
            entry = reports.latest.get(d)
            last = entry[1] if entry else {}
            arrived = [body for when, device, body in reports.since(t0) if device == d]
            lines = agent_log_since(i, log_sizes[i]).decode(errors="replace").splitlines()
            print(f"  a{i} ({d}): latest report online={last.get('online')} at={last.get('at')}; "
                  f"{len(arrived)} reports since the restart ({', '.join(str(b.get('online')) for b in arrived)}); "
                  f"its log since: {len(lines)} lines, the last: {' | '.join(lines[-3:])[:600]}", flush=True)
    # Each agent re-fetches once when it has reconnected (libmosquitto's reconnect delay grows while
    # the broker is down, and the fetch waits out Jitter): wait for one per agent, then until they
    # stop coming, so that more than one per agent would be seen.
    wait_for(lambda: len(nginx.requests(offset)) >= agents, 180, "a re-fetch per agent", fail=False)
    reconnected = time.monotonic() - up
    quiet = 0
    count = len(nginx.requests(offset))
    while quiet < 3:
        time.sleep(1)
        now = len(nginx.requests(offset))
        quiet = quiet + 1 if now == count else 0
        count = now
    requests = nginx.requests(offset)
    statuses = {}
    for _, s, _ in requests:
        statuses[s] = statuses.get(s, 0) + 1
    print(f"{broker.name} restart: down and up again in {up - t0:.2f} s; "
          + (f"every agent reports online {back:.2f} s after it was up" if online else "not every agent came back")
          + f"; {len(requests)} fetches (statuses {statuses}) for {agents} agents, "
          f"the last {reconnected:.2f} s after it was up", flush=True)
    # The target is one conditional request per agent and reconnect: each connection the broker
    # accepts may have come after a ping the device missed, so it refetches once. An agent's
    # connections are the "MQTT connected to" lines its log gained since the restart began; a
    # cluster that accepts a connection and drops it while it recovers costs a fetch each time.
    connections = connections_since(log_sizes)
    over = sum(f > c for f, c in zip(fetches_per_agent(requests), connections))
    print(f"{broker.name} restart: the agents connected {sum(connections)} times "
          f"(at most {max(connections)} for one agent); {over} agents fetched more often than they connected",
          flush=True)
    # Fewer fetches than agents because agents never came back is no success.
    figure(f"fleet.{broker.name}.restart.fetches",
           f"{broker.name} restarted under {agents} agents: fetches (agents' connections since: {sum(connections)})",
           len(requests), "", {"op": "<=", "value": sum(connections)},
           f"statuses {statuses}; agents that fetched more often than they connected: {over}"
           + ("" if online else "; not every agent came back"),
           {"last_refetch_after_up_s": round(reconnected, 2), "down_and_up_s": round(up - t0, 2),
            "connections": sum(connections), "agents_over": over},
           verdict=None if online and over == 0 else "missed")
    figure(f"fleet.{broker.name}.restart.online_s", f"{broker.name} restarted: every agent reports online again",
           round(back, 2) if reports_on and online else None, "s", None,
           "from the broker accepting connections again" if online
           else f"not within {back:.0f} s: {back_count} of {len(device_ids)} agents online")


def node_kill_case(broker, processes, version):
    """Kills the second node: its agents move to the others; then one ping converges the fleet."""
    victim = 1
    moved = broker.mqtt_clients(victim)
    # Counted from the kill: a moved agent's refetch after its reconnect waits out Jitter, and so
    # may land in the round that follows (where a ping that came meanwhile makes a second fetch).
    log_sizes = agent_logs_sizes()
    t0 = time.monotonic()
    broker.kill_node(victim)
    others = [i for i in broker.running()]
    wait_for(lambda: len(set().union(*(broker.mqtt_clients(i) for i in others)) & moved) >= len(moved), 300,
             "the killed node's agents connecting to the other nodes")
    reconnected = time.monotonic() - t0
    print(f"nats node {broker.nodes[victim]['name']} killed: its {len(moved)} agents connected to the other nodes "
          f"within {reconnected:.2f} s", flush=True)
    figure("fleet.nats.node_kill.reconnect_s", f"NATS node killed: its {len(moved)} agents on the other nodes",
           round(reconnected, 2), "s", None, "from the kill, by the surviving nodes' /connz")
    broker.wait_formed()
    delays = converge(broker, processes, version, seconds_of(jitters[-1]), f"nats one node down Jitter={jitters[-1]}",
                      log_sizes, "since the node was killed")
    broker.start_node(victim)
    if not wait_for(broker.formed, 120, "the node back in the cluster", fail=False):
        print(f"  {broker.nodes[victim]['name']} restarted but the cluster had not formed again within 120 s: "
              f"{broker.unformed()}", flush=True)
    return delays


def seconds_of(jitter):
    m = re.match(r"^(\d+)(s?)$", jitter)
    return int(m.group(1)) if m else 0


try:
    limit = raise_file_limit()
    print(f"{agents} agents, descriptor limit {limit}, load average {os.getloadavg()[0]:.1f}", flush=True)
    nginx = Nginx()
    version = 1
    nginx.serve(version)
    # An unknown section is only warned about, so the daemon itself says whether it reports.
    with open(f"{bin_dir}/rcagentd", "rb") as f:
        reports_on = b"MQTTStatusTopic" in f.read()
    failover = accepts_config("[Push]\nMQTT=mqtt://127.0.0.1:1 mqtt://127.0.0.1:2\n")
    broker_urls = 3 if failover else 1
    if not reports_on:
        print("this build has no [Report] MQTTStatusTopic=: times come from nginx's log (when each agent fetched)")
    if not failover:
        print("this build takes one [Push] MQTT= broker: NATS agents cannot fail over to another node")
    for broker_name in brokers:
        # Each broker's fleet starts fresh: new state databases, new device ids, new sessions.
        for i in range(agents):
            shutil.rmtree(f"{work}/a{i}/state", ignore_errors=True)
        device_ids.clear()
        broker = Mosquitto() if broker_name == "mosquitto" else NATSCluster()
        reports = Reports(broker.ping_port()) if reports_on else None
        for jitter in jitters:
            processes, started, batch, stuck = start_fleet(broker, jitter, str(version))
            # Issue 30's targets are for 1,000 agents started fresh (the first start; a restart of
            # the fleet keeps its state databases).
            fresh = jitter == jitters[0]
            target = STARTUP_TARGETS[broker.name] if agents == 1000 and fresh else None
            text = (f"{broker.name}: {agents} agents started {'fresh' if fresh else 'again'} (batches of {batch}) "
                    "until all report")
            if stuck is not None:
                # Measured, not a crash of the script: the broker lost the fleet. Its later cases
                # would only measure the same loss.
                note = f"not all there: {stuck[0]} of {stuck[1]} agents after 120 s; this broker's later cases not run"
                print(f"{broker.name}, Jitter={jitter}: {note}", flush=True)
                figure(f"fleet.{broker.name}.jitter_{jitter}.startup_s", text, None, "s",
                       {"op": "<=", "value": target} if target else None, note,
                       startup_peers.get((broker.name, jitter)), verdict="missed")
                stop_fleet(processes)
                break
            print(f"{broker.name}, Jitter={jitter}: {agents} agents started {'fresh' if fresh else 'again'} in batches "
                  f"of {batch}, all reporting in {started:.1f} s"
                  + (f" (target <= {target} s: {'met' if started <= target else 'missed'})" if target else ""),
                  flush=True)
            figure(f"fleet.{broker.name}.jitter_{jitter}.startup_s", text, round(started, 1), "s",
                   {"op": "<=", "value": target} if target else None, None, startup_peers.get((broker.name, jitter)))
            if startup_only:
                stop_fleet(processes)
                continue
            time.sleep(2)  # the start-up fetches settle
            version += 1
            converge(broker, processes, version, seconds_of(jitter), f"{broker.name} Jitter={jitter}")
            if jitter == jitters[-1]:
                time.sleep(12)  # idle: the daemon gives back its fetch's pages 10 s after a round
                memory(processes, f"{broker.name} idle")
                restart_case(broker, processes, version)
                if broker.name == "nats" and failover:
                    version += 1
                    node_kill_case(broker, processes, version)
            stop_fleet(processes)
        if reports:
            reports.close()
        broker.close()
finally:
    report("fleet", figures)  # what was measured, should a later case stop the run
    stop_all()
    if os.environ.get("RCBENCH_KEEP"):
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
