#!/usr/bin/env python3
"""Publish -> device: the time from `rcadmin set-update` starting to a device's `rcagent
check-update` reporting the new required version, through the relay.

The path is the one a fleet uses: `rcadmin set-update` (token, read with ETag, edit, publish) against
the fake Google backend (Tests/Fixtures/firebase_server.py: Remote Config REST, the client fetch and
the realtime stream, on loopback), `rcadmin relay` following the project's realtime stream and
pinging a real mosquitto, and a real rcagentd that listens to MQTT only (no realtime stream of its
own) with Jitter=0, fetching and activating the new template. Each round publishes the next version
and polls `rcagent check-update --format env` until it names it. The figure is split into the
set-update call and the propagation after it returned. A production daemon waits a random 0 to
`Jitter=` (3 s by default) more before fetching, on purpose, so that a fleet does not fetch at once.

Usage: bench/relay.py BIN_DIR [ROUNDS]
"""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, here)
from agentsetup import listening
bin_dir = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
work = tempfile.mkdtemp(prefix="rcbench-relay-")
fake = os.path.join(work, "firebase")
os.makedirs(fake)
processes = []


def start(args, **kwargs):
    process = subprocess.Popen(args, **kwargs)
    processes.append(process)
    return process


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what, bound=20):
    deadline = time.time() + bound  # a bound for a failing run only
    while not condition():
        if time.time() > deadline:
            raise SystemExit(f"relay bench: {what}")
        time.sleep(0.01)


def report(figures):
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], "relay.json"), "w") as f:
            json.dump(figures, f)


try:
    # The fake project and its service account (the fake verifies JWTs with the public key).
    project = "rcbench"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                    f"{fake}/service-account-private.pem"], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", f"{fake}/service-account-private.pem", "-pubout", "-out",
                    f"{fake}/service-account-public.pem"], check=True, capture_output=True)
    with open(f"{fake}/mode.json", "w") as f:
        json.dump({"adminTemplate": {"parameters": {"greeting": {"defaultValue": {"value": "hello"}}}}}, f)
    server = start([sys.executable, f"{root}/Tests/Fixtures/firebase_server.py", fake], stdout=subprocess.PIPE, text=True)
    endpoint = f"http://127.0.0.1:{server.stdout.readline().strip()}"
    with open(f"{fake}/service-account.json", "w") as f:
        json.dump({"type": "service_account", "project_id": project, "private_key_id": "bench",
                   "private_key": open(f"{fake}/service-account-private.pem").read(),
                   "client_email": f"bench@{project}.iam.gserviceaccount.com", "token_uri": endpoint + "/token"}, f)

    mqtt_port = free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous true\n")
    start(["mosquitto", "-c", f"{work}/mosquitto.conf"], stderr=subprocess.DEVNULL)
    wait_for(lambda: subprocess.run(["mosquitto_pub", "-p", str(mqtt_port), "-t", "x", "-n"],
                                    capture_output=True).returncode == 0, "mosquitto did not start")

    firebase = f"""[Source]
Type=firebase
ProjectId={project}
AppId=1:1234567890:linux:abcdef
APIKey=bench-key
Endpoint={endpoint}
[Push]
MQTT=mqtt://127.0.0.1:{mqtt_port}
"""
    with open(f"{work}/agent.conf", "w") as f:
        f.write(firebase + f"Realtime=no\nJitter=0\n[App]\nVersion=1.0.0\n[Agent]\nStateDirectory={work}/state\n"
                f"Socket={work}/agent.sock\nDefaults={work}/none.json\nMinimumFetchInterval=0\n")
    with open(f"{work}/relay.conf", "w") as f:
        f.write(firebase + f"[Agent]\nStateDirectory={work}/relay-state\n")
    env = dict(os.environ, RCAGENT_CONFIG=f"{work}/agent.conf", GOOGLE_APPLICATION_CREDENTIALS=f"{fake}/service-account.json",
               RCADMIN_ENDPOINT=endpoint)
    log = open(os.environ.get("RCBENCH_LOG", os.devnull), "w")
    start([f"{bin_dir}/rcagentd"], env=env, stderr=log)
    wait_for(lambda: listening(f"{work}/agent.sock"), "rcagentd did not start")
    relay_log = f"{work}/relay.log"
    start([f"{bin_dir}/rcadmin", "relay", "--config", f"{work}/relay.conf"], env=env, stderr=open(relay_log, "w"))
    wait_for(lambda: "Relayed template version 1" in open(relay_log).read(), "the relay did not start")

    def offered():
        out = subprocess.run([f"{bin_dir}/rcagent", "check-update", "--format", "env"], env=env,
                             capture_output=True, text=True).stdout
        return next((line.split("=", 1)[1].strip("'\"") for line in out.splitlines()
                     if line.startswith("RCAGENT_UPDATE_VERSION=")), None)

    calls, propagation, total = [], [], []
    for i in range(1, rounds + 1):
        version = f"2.0.{i}"
        t0 = time.perf_counter()
        subprocess.run([f"{bin_dir}/rcadmin", "set-update", "--required", "--platform", "linux", "--version", version,
                        "--download", f"https://dl.example/app_{version}.deb"], env=env, check=True,
                       capture_output=True)
        t1 = time.perf_counter()
        wait_for(lambda: offered() == version, f"version {version} never reached check-update")
        t2 = time.perf_counter()
        calls.append((t1 - t0) * 1000)
        propagation.append((t2 - t1) * 1000)
        total.append((t2 - t0) * 1000)
    for name, values in [("set-update call", calls), ("relay + MQTT + fetch + activate", propagation),
                         ("publish -> check-update", total)]:
        values.sort()
        print(f"{name} ({rounds} rounds): p50 {statistics.median(values):.0f} ms, max {values[-1]:.0f} ms")
    report([
        {"id": "relay_publish_to_device_p50", "figure": "set-update start -> check-update names it, through the relay (p50)",
         "value": round(statistics.median(total), 1), "unit": "ms", "target": None, "peers": {},
         "note": f"set-update call p50 {statistics.median(calls):.0f} ms; Jitter=0 (a device adds 0 to Jitter= on purpose)"},
        {"id": "relay_publish_to_device_max", "figure": "set-update start -> check-update names it, through the relay (max)",
         "value": round(total[-1], 1), "unit": "ms", "target": None, "peers": {}, "note": f"{rounds} rounds"},
    ])
finally:
    for process in reversed(processes):
        process.kill()
        process.wait()
    shutil.rmtree(work, ignore_errors=True)
