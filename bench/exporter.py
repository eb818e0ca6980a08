#!/usr/bin/env python3
"""The fleet exporter's cost: `rcadmin fleet exporter` following 1,000 retained reports on a real
mosquitto, scraped over loopback HTTP.

The reports are published retained as agents publish them (Tests/Fixtures/retained_reports.py:
800 devices on version 43, 200 on 42), then the exporter starts (`--listen 127.0.0.1:0`) and the
script waits for the page to say `rcagent_fleet_exporter_ready 1` with all devices counted. Then
SCRAPES scrapes of /metrics, one connection each (as Prometheus does): the median and p95 wall
time of a scrape, the page's size, the exporter's RSS (VmRSS, VmHWM from /proc) and its CPU time
over the scrapes. Then SLOW_READERS (120) connections ask for /metrics at once and read nothing (a
4 KiB receive buffer): the exporter's RSS growth while they hold their answers shows what a
connection costs (the page is shared, not copied per connection). The same again with
--per-device (four series per device).

Usage: bench/exporter.py BIN_DIR [REPORTS] [SCRAPES]
"""
import json, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
bin_dir = os.path.abspath(sys.argv[1])
reports = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
scrapes = int(sys.argv[3]) if len(sys.argv) > 3 else 200
work = tempfile.mkdtemp(prefix="rcbench-exporter-")
processes = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what, bound=120):
    deadline = time.time() + bound  # a bound for a failing run only
    while True:
        value = condition()
        if value:
            return value
        if time.time() > deadline:
            raise SystemExit(f"exporter bench: {what}")
        time.sleep(0.02)


def get(port, path="/metrics"):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def status_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(broker_port, extra):
    errors = open(os.path.join(work, "exporter.err"), "w+")
    exporter = subprocess.Popen(
        [f"{bin_dir}/rcadmin", "fleet", "exporter", "--listen", "127.0.0.1:0", "--mqtt",
         f"mqtt://127.0.0.1:{broker_port}", "--timeout", "60s"] + extra,
        stdout=subprocess.DEVNULL, stderr=errors)
    processes.append(exporter)
    started = time.time()

    def port():
        errors.seek(0)
        match = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", errors.read())
        return int(match.group(1)) if match else None

    http = wait_for(port, "the exporter did not start")
    wait_for(lambda: f"\nrcagent_fleet_devices_reporting {reports}\n".encode() in get(http),
             "the exporter did not count every report")
    ready = time.time() - started
    time.sleep(1)  # the picture settles (the page is re-rendered at most once a second)
    page = get(http)
    cpu_before = cpu_seconds(exporter.pid)
    times = []
    for _ in range(scrapes):
        t = time.perf_counter()
        response = get(http)
        times.append(time.perf_counter() - t)
        assert response.startswith(b"HTTP/1.1 200"), response[:100]
    cpu = cpu_seconds(exporter.pid) - cpu_before
    rss, hwm = status_kib(exporter.pid, "VmRSS"), status_kib(exporter.pid, "VmHWM")
    held = slow_readers(http, exporter.pid)
    exporter.send_signal(signal.SIGTERM)
    exporter.wait(timeout=30)
    times.sort()
    body = page.split(b"\r\n\r\n", 1)[1]
    return {
        "ready_s": ready, "median_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(len(times) * 0.95) - 1] * 1000, "page_bytes": len(body),
        "series": sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#")),
        "rss_mib": rss / 1024, "hwm_mib": hwm / 1024, "cpu_ms_per_scrape": cpu * 1000 / scrapes,
        "exit": exporter.returncode, "slow_growth_mib": (held - rss) / 1024,
    }


def slow_readers(port, pid, count=120):
    """The exporter's RSS (KiB) while `count` connections hold an answer they do not read."""
    readers = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            readers.append(s)
        # Every request answered (the server's CPU time stops moving), then the RSS they cost.
        last, still = cpu_seconds(pid), 0
        while still < 5:
            time.sleep(0.1)
            now = cpu_seconds(pid)
            still, last = (still + 1 if now == last else 0), now
        return status_kib(pid, "VmRSS")
    finally:
        for s in readers:
            s.close()


try:
    broker_port = free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n")
    processes.append(subprocess.Popen(["mosquitto", "-c", f"{work}/mosquitto.conf"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def broker_up():
        try:
            socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(broker_up, "mosquitto did not start")
    newer = reports * 4 // 5
    fixture = os.path.join(root, "Tests", "Fixtures", "retained_reports.py")
    subprocess.run([sys.executable, fixture, str(broker_port), str(newer), "43", "new"], check=True)
    subprocess.run([sys.executable, fixture, str(broker_port), str(reports - newer), "42", "old"], check=True)

    figures = []
    for name, extra in [("aggregates", []), ("per-device", ["--per-device"])]:
        m = measure(broker_port, extra)
        print(f"{name}: {reports} reports, ready after {m['ready_s']:.2f} s; /metrics {m['page_bytes']} bytes, "
              f"{m['series']} series; scrape median {m['median_ms']:.2f} ms, p95 {m['p95_ms']:.2f} ms "
              f"({scrapes} scrapes); exporter CPU {m['cpu_ms_per_scrape']:.3f} ms/scrape; RSS {m['rss_mib']:.1f} MiB "
              f"(peak {m['hwm_mib']:.1f} MiB); 120 connections not reading: RSS +{m['slow_growth_mib']:.1f} MiB; "
              f"exit {m['exit']} on SIGTERM")
        figures += [
            {"id": f"exporter-{name}-scrape", "figure": f"fleet exporter ({name}), {reports} reports: /metrics scrape, median",
             "value": round(m["median_ms"], 3), "unit": "ms", "target": None, "peers": {},
             "note": f"p95 {m['p95_ms']:.2f} ms, {m['page_bytes']} bytes, {m['series']} series"},
            {"id": f"exporter-{name}-rss", "figure": f"fleet exporter ({name}), {reports} reports: RSS",
             "value": round(m["rss_mib"], 1), "unit": "MiB", "target": None, "peers": {},
             "note": f"peak {m['hwm_mib']:.1f} MiB"},
            {"id": f"exporter-{name}-slow-readers", "figure":
             f"fleet exporter ({name}), {reports} reports: RSS growth with 120 connections not reading their answer",
             "value": round(m["slow_growth_mib"], 1), "unit": "MiB", "target": None, "peers": {},
             "note": f"page {m['page_bytes']} bytes"},
        ]
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], "exporter.json"), "w") as f:
            json.dump(figures, f)
finally:
    for process in reversed(processes):
        if process.poll() is None:
            process.kill()
            process.wait()
    shutil.rmtree(work, ignore_errors=True)
