"""The per-channel half of bench/hostile.py: the same hostile contents sent through every channel
that carries text into the daemon, each measured as daemon CPU per MB and peak memory (VmHWM, reset
through /proc/PID/clear_refs before each input).

Channels: the control socket (a `message` line, at most 64 KiB), the file source and the http source
(a document, `rcagent fetch --force --wait`), MQTT push through a real mosquitto (a message on the
push topic), and the realtime stream of the firebase source (Tests/Fixtures/firebase_server.py: one
invalidation line). The daemon is done with an input when its CPU time has not moved for 0.5 s (so
a channel without an answer is measured whole); an input it is still busy with after BOUND seconds
is reported as "> BOUND s" and the daemon restarted.

Contents (CONTENTS below), each built to the channel's size:
  - marks-key: one member name of "a" and combining marks whose classes (240, 233, 232, 230, 220,
    202, 1) come in descending order, so that normalizing it has the most reordering to do;
  - marks-value: one value of the same text;
  - stream-safe keys: thousands of names of 30 such marks each (the most a string may hold in a row)
    and a number, every one of them normalized when hashed as a Swift String;
  - stream-safe value: one value of runs of 30 marks;
  - huge value: one value of plain ASCII, as large as the channel takes;
  - deep and wide: arrays nested 90 levels, as many as fit;
  - (file and http) a 4 MB value replacing 55,000 keys of the document before.
Each document is fetched after a small good one, so each figure is its own.
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time

from agentsetup import cpu_ms, free_port, port_open, wait_for

BOUND = float(os.environ.get("RCBENCH_HOSTILE_BOUND", "120"))
# Descending canonical combining classes: 240, 233, 232, 230, 220, 202, 1.
MARKS = "\u0345\u035c\u031a\u0301\u0316\u0327\u0334"


def marks(size):
    """'a' and combining marks (2 bytes each) up to about `size` bytes, reordering at every step."""
    n = max(1, (size - 1) // 2)
    return "a" + (MARKS * (n // len(MARKS) + 1))[:n]


def stream_safe(size):
    run = MARKS * 4
    piece = run[:30] + "a"
    return (piece * (size // len(piece.encode()) + 1))[: max(1, size // 2)]


def entries_for(content, size):
    """The key → value members of one hostile input of about `size` bytes."""
    if content == "marks-key":
        return {marks(size): "x"}
    if content == "marks-value":
        return {"k": marks(size)}
    if content == "stream-safe keys":
        name = MARKS * 5
        return {f"{name[:30]}{i}": "x" for i in range(max(1, size // (len(name[:30].encode()) + 12)))}
    if content == "stream-safe value":
        return {"k": stream_safe(size)}
    if content == "huge value":
        return {"k": "v" * size}
    if content == "deep and wide":
        return None  # built as text below
    raise ValueError(content)


CONTENTS = ["marks-key", "marks-value", "stream-safe keys", "stream-safe value", "huge value", "deep and wide"]


def deep_members(size):
    one = "[" * 90 + "0" + "]" * 90
    return ",".join(f'"d{i}":{one}' for i in range(max(1, size // (len(one) + 8))))


def document(content, size, version):
    head = f'{{"state":"UPDATE","templateVersion":"{version}","entries":{{'
    if content == "deep and wide":
        return head + deep_members(size) + "}}"
    return head + json.dumps(entries_for(content, size), ensure_ascii=False)[1:-1] + "}}"


def message_data(content, size, stale=True):
    """The JSON text of a `{"data": {...}}` push message carrying the content."""
    tail = ',"CONFIG_STATE":"STALE"' if stale else ""
    if content == "deep and wide":
        return '{"data":{' + deep_members(size) + tail + "}}"
    return '{"data":{' + json.dumps(entries_for(content, size), ensure_ascii=False)[1:-1] + tail + "}}"


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def settle(pid, start_cpu):
    """Waits until the daemon's CPU time stops moving; returns False when it still moves after BOUND s."""
    deadline = time.time() + BOUND
    last, still = cpu_ms(pid), 0
    while time.time() < deadline:
        time.sleep(0.1)
        now = cpu_ms(pid)
        still = still + 1 if now == last else 0
        last = now
        if still >= 5:
            return True
    return False


class Daemon:
    """One rcagentd on WORK/agent.conf with `source` (the [Source] section and more) as its config."""

    def __init__(self, bin_dir, work, sections, ready):
        self.bin_dir, self.work, self.ready = bin_dir, work, ready
        self.conf = os.path.join(work, "agent.conf")
        self.sock = os.path.join(work, "agent.sock")
        with open(os.path.join(work, "defaults.json"), "w") as f:
            f.write('{"bench": "default"}')
        with open(self.conf, "w") as f:
            f.write(f"[Agent]\nStateDirectory={work}/state\nSocket={self.sock}\nSocketGroup=\n"
                    f"Defaults={work}/defaults.json\n" + sections)
        self.env = dict(os.environ, RCAGENT_CONFIG=self.conf)
        self.process = None
        self.start()

    def cli(self, *args, timeout=BOUND):
        try:
            return subprocess.run([f"{self.bin_dir}/rcagent", *args], env=self.env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def start(self):
        log = open(os.environ.get("RCBENCH_LOG", os.devnull), "a")
        self.process = subprocess.Popen([f"{self.bin_dir}/rcagentd", "--config", self.conf], env=self.env,
                                        stderr=log)
        wait_for(lambda: os.path.exists(self.sock) and self.ready(self), "daemon did not start", bound=30)

    def restart(self):
        self.stop()
        self.start()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        if self.process:
            self.process.wait()


def socket_line(sock, line):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(BOUND)
    s.connect(sock)
    s.sendall(line.encode() + b"\n")
    try:
        return s.makefile().readline()
    finally:
        s.close()


def measure(name, daemon, send, size_bytes, figures):
    pid = daemon.process.pid
    reset_peak(pid)
    before = cpu_ms(pid)
    t0 = time.perf_counter()
    try:
        send()
    except (OSError, subprocess.SubprocessError) as error:
        print(f"  {name}: {error!r}")
    done = settle(pid, before)
    cpu = cpu_ms(pid) - before
    alive = daemon.process.poll() is None
    peak = vm(pid, "VmHWM") / 1024 if alive else 0
    wall = time.perf_counter() - t0
    per_mb = cpu / 1000 / (size_bytes / 1e6)
    verdict = "" if done and alive else (" DIED" if not alive else f" STILL BUSY after {BOUND:.0f} s")
    print(f"  {name}: {size_bytes:,} bytes, daemon CPU {cpu:,} ms = {per_mb:.2f} s/MB, peak memory "
          f"{peak:.1f} MB, {wall:.1f} s{verdict}")
    figures.append({"id": "hostile.cpu." + "".join(c if c.isalnum() else "_" for c in name)[:60],
                    "figure": f"daemon CPU per MB: {name}" + verdict, "value": round(per_mb, 3),
                    "unit": "s/MB", "target": {"op": "<=", "value": 1.0},
                    "peers": {"bytes": size_bytes, "cpu_ms": cpu, "vmhwm_mb": round(peak, 1),
                              "finished": done and alive}})
    if not (done and alive):
        daemon.restart()


def run(bin_dir, figures, only=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    channels = only or ["socket", "file", "http", "mqtt", "realtime"]
    for channel in channels:
        work = tempfile.mkdtemp(prefix=f"rcbench-hostile-{channel}-")
        helpers = []
        try:
            globals()["channel_" + channel](bin_dir, work, root, figures, helpers)
        except SystemExit as error:
            print(f"{channel}: not measured: {error}")
        finally:
            for helper in helpers:
                helper.stop() if isinstance(helper, Daemon) else (helper.terminate(), helper.wait())
            shutil.rmtree(work, ignore_errors=True)


def served(daemon):
    result = daemon.cli("get", "bench", timeout=10)
    return result is not None and result.stdout.strip() != ""


def channel_socket(bin_dir, work, root, figures, helpers):
    write(os.path.join(work, "remote.json"), document("huge value", 10, 1))
    daemon = Daemon(bin_dir, work, f"[Source]\nType=file\nPath={work}/remote.json\n", served)
    helpers.append(daemon)
    print("control socket (a message line, at most 64 KiB):")
    for content in CONTENTS:
        line = '{"op":"message","message":' + message_data(content, 60_000) + "}"
        measure(f"socket: {content}", daemon, lambda: socket_line(daemon.sock, line), len(line.encode()), figures)


def write(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.rename(path + ".new", path)


def fetch_sizes():
    return {"marks-key": 100_000, "marks-value": 100_000}


def source_cases(daemon, path, channel, figures):
    """Each content after a small good document (so each is measured on its own), then a 4 MB value
    replacing 55,000 keys: the activation compares the two snapshots in SQLite."""
    version = 2
    for content in CONTENTS + ["huge value after 55,000 keys"]:
        before = document("stream-safe keys", 4_000_000, version) if content.endswith("keys") else \
            document("huge value", 10, version)
        write(path, before)
        daemon.cli("fetch", "--force", "--wait")
        settle(daemon.process.pid, 0)
        size = fetch_sizes().get(content, 4_000_000)
        text = document(content.split(" after")[0], size, version + 1)
        write(path, text)
        version += 2
        measure(f"{channel}: {content}", daemon, lambda: daemon.cli("fetch", "--force", "--wait"),
                len(text.encode()), figures)


def channel_file(bin_dir, work, root, figures, helpers):
    path = os.path.join(work, "remote.json")
    write(path, document("huge value", 10, 1))
    daemon = Daemon(bin_dir, work, f"[Source]\nType=file\nPath={path}\n", served)
    helpers.append(daemon)
    print("file source (a document, rcagent fetch --force --wait):")
    source_cases(daemon, path, "file", figures)


def channel_http(bin_dir, work, root, figures, helpers):
    www = os.path.join(work, "www")
    os.mkdir(www)
    path = os.path.join(www, "doc.json")
    write(path, document("huge value", 10, 1))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port),
                               "--directory", www], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers.append(server)
    wait_for(lambda: port_open(port), "http server did not start")
    daemon = Daemon(bin_dir, work, f"[Source]\nType=http\nURL=http://127.0.0.1:{port}/doc.json\n", served)
    helpers.insert(0, daemon)
    print("http source (a document from python's http.server, rcagent fetch --force --wait):")
    source_cases(daemon, path, "http", figures)


def channel_mqtt(bin_dir, work, root, figures, helpers):
    if not shutil.which("mosquitto"):
        raise SystemExit("no mosquitto")
    port = free_port()
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    broker = subprocess.Popen(["mosquitto", "-c", os.path.join(work, "mosquitto.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers.append(broker)
    wait_for(lambda: port_open(port), "mosquitto did not start")
    path = os.path.join(work, "remote.json")
    write(path, document("huge value", 10, 1))
    daemon = Daemon(bin_dir, work, f"[Source]\nType=file\nPath={path}\n[Push]\nMQTT=mqtt://127.0.0.1:{port}\n"
                    "Jitter=0\n", served)
    helpers.insert(0, daemon)
    time.sleep(1)  # the MQTT connect and subscribe (no event a bench can wait on from outside)
    print("MQTT push (a message on the push topic through mosquitto):")
    payload_path = os.path.join(work, "payload.json")
    for content in CONTENTS:
        size = 100_000 if content.startswith("marks") else 1_000_000
        write(payload_path, message_data(content, size))
        publish = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-t", "PUSH_RC", "-f", payload_path]
        measure(f"mqtt: {content}", daemon, lambda: subprocess.run(publish, check=True, timeout=30),
                os.path.getsize(payload_path), figures)


def channel_realtime(bin_dir, work, root, figures, helpers):
    fixture = os.path.join(root, "Tests", "Fixtures", "firebase_server.py")
    state = os.path.join(work, "firebase")
    os.mkdir(state)
    server = subprocess.Popen([sys.executable, fixture, state], stdout=subprocess.PIPE, text=True)
    helpers.append(server)
    port = int(server.stdout.readline())
    daemon = Daemon(bin_dir, work, f"[Source]\nType=firebase\nProjectId=demo-project\nAppId=1:1234567890:linux:abcdef\n"
                    "APIKey=test-api-key\n"
                    f"Endpoint=http://127.0.0.1:{port}\n[Push]\nRealtime=yes\n", lambda d: True)
    helpers.insert(0, daemon)
    realtime = os.path.join(state, "realtime.jsonl")
    wait_for(lambda: stream_open(state), "the realtime stream did not open", bound=30)
    print("realtime stream (one invalidation line from the fake Firebase server):")
    for content in CONTENTS:
        size = 100_000 if content.startswith("marks") else 1_000_000
        data = json.loads(message_data(content, size, stale=False))["data"] if content != "deep and wide" else None
        line = (json.dumps({"latestTemplateVersionNumber": "1", **data}, ensure_ascii=False) if data is not None
                else '{"latestTemplateVersionNumber":"1",' + deep_members(size) + "}")
        measure(f"realtime: {content}", daemon, lambda: append(realtime, line + "\n"), len(line.encode()), figures)


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def stream_open(state):
    log = os.path.join(state, "requests.log")
    return os.path.exists(log) and '"realtime"' in open(log).read()
