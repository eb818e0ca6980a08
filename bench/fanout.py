#!/usr/bin/env python3
"""Issue 8 fan-out: N agents (own state dir, socket and MQTT client id each) on one mosquitto broker
and one HTTP config server; one stale ping published; how long until every agent serves the new
value, and how many fetch requests the config server received for it. Run with Jitter=0 and 3s.

The time is measured by polling `rcagent get` on every agent in turn until all show the new
value, so it is an upper bound that includes one polling sweep (N CLI runs) of slack.

Usage: bench/fanout.py BIN_DIR [AGENTS]
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

bin_dir = sys.argv[1]
agents = int(sys.argv[2]) if len(sys.argv) > 2 else 50
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="rcfanout-")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def document(version):
    return json.dumps({"state": "UPDATE", "templateVersion": str(version), "entries": {"banner": f"v{version}"}})


def serve(version):
    tmp = os.path.join(server_dir, "mode.tmp")
    with open(tmp, "w") as f:
        json.dump({"kind": "document", "body": document(version), "etag": f'"v{version}"'}, f)
    os.rename(tmp, os.path.join(server_dir, "mode.json"))


def requests():
    with open(os.path.join(server_dir, "requests.log")) as f:
        return sum(1 for _ in f)


def value(i):
    env = dict(os.environ, RCAGENT_CONFIG=f"{work}/a{i}/agent.conf")
    return subprocess.run([f"{bin_dir}/rcagent", "get", "banner"], env=env, capture_output=True, text=True).stdout.strip()


def wait_all(expected, limit=60):
    start = time.perf_counter()
    pending = set(range(agents))
    while pending:
        pending = {i for i in pending if value(i) != expected}
        if time.perf_counter() - start > limit:
            raise SystemExit(f"{len(pending)} agents never showed {expected}")
    return time.perf_counter() - start


processes = []
figures = []
try:
    server_dir = os.path.join(work, "server")
    os.makedirs(server_dir)
    open(os.path.join(server_dir, "requests.log"), "w").close()
    serve(1)
    server = subprocess.Popen([sys.executable, f"{root}/Tests/Fixtures/config_server.py", server_dir], stdout=subprocess.PIPE, text=True)
    processes.append(server)
    url = f"http://127.0.0.1:{server.stdout.readline().strip()}/config.json"
    mqtt_port = free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\nmax_queued_messages 1000\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", f"{work}/mosquitto.conf"], stderr=subprocess.DEVNULL)
    processes.append(broker)
    time.sleep(0.5)

    for jitter in os.environ.get("RCBENCH_JITTERS", "0 3s").split():
        serve(1)
        daemons = []
        for i in range(agents):
            d = f"{work}/a{i}"
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            with open(f"{d}/defaults.json", "w") as f:
                f.write("{}")
            with open(f"{d}/agent.conf", "w") as f:
                f.write(f"[Agent]\nStateDirectory={d}/state\nSocket={d}/agent.sock\nSocketGroup=\nDefaults={d}/defaults.json\n"
                        f"[Source]\nType=http\nURL={url}\n[Push]\nMQTT=mqtt://127.0.0.1:{mqtt_port}\nJitter={jitter}\n")
            log = open(f"{work}/daemon-{i}-{jitter}.log", "w")
            daemons.append(subprocess.Popen([f"{bin_dir}/rcagentd", "--config", f"{d}/agent.conf"], stderr=log))
        processes.extend(daemons)
        wait_all("v1")
        time.sleep(1)  # let the start-up fetches (start and first MQTT connect) settle
        serve(2)
        before = requests()
        t0 = time.perf_counter()
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(mqtt_port), "-q", "1", "-t", "PUSH_RC",
                        "-m", '{"data":{"CONFIG_STATE":"STALE","templateVersion":"2"}}'], check=True)
        wait_all("v2")
        elapsed = time.perf_counter() - t0
        time.sleep(0.5)
        fetched = requests() - before
        print(f"{agents} agents, Jitter={jitter}: all serve the new value {elapsed * 1000:.0f} ms after the ping; "
              f"{fetched} fetch requests reached the config server")
        figures.append({"id": f"fanout.jitter_{jitter}.seconds", "figure": f"fan-out, {agents} agents, Jitter={jitter}: all updated",
                        "value": round(elapsed, 2), "unit": "s", "target": None,
                        "note": "upper bound: includes one polling sweep of rcagent get over every agent"})
        figures.append({"id": f"fanout.jitter_{jitter}.requests", "figure": f"fan-out, {agents} agents, Jitter={jitter}: fetch requests",
                        "value": fetched, "unit": "", "target": None})
        for p in daemons:
            p.terminate()
        for p in daemons:
            p.wait()
            processes.remove(p)
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], "fanout.json"), "w") as f:
            json.dump(figures, f)
finally:
    for p in processes:
        p.kill()
        p.wait()
    if os.environ.get("RCBENCH_KEEP"):
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
