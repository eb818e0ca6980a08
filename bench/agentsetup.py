"""What the bench scripts share: a work directory holding a defaults file and an agent.conf whose
source is a JSON file, for one rcagentd and the rcagent calls around it; a process's CPU time; a free
port and a bounded wait for a broker or a daemon to come up."""
import json, os, signal, socket, subprocess, sys, tempfile, time


class FileAgent:
    """WORK/agent.conf with state, socket and defaults in WORK and `Path=` the source file: by default
    WORK/remote.json, or `source` (a name inside WORK) when the caller arranges the file itself."""

    def __init__(self, prefix, defaults="{}", source="remote.json"):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.conf = os.path.join(self.work, "agent.conf")
        self.sock = os.path.join(self.work, "agent.sock")
        self.remote = os.path.join(self.work, source)
        with open(os.path.join(self.work, "defaults.json"), "w") as f:
            f.write(defaults)
        with open(self.conf, "w") as f:
            f.write(f"[Agent]\nStateDirectory={self.work}/state\nSocket={self.sock}\nSocketGroup=\n"
                    f"Defaults={self.work}/defaults.json\n[Source]\nType=file\nPath={self.remote}\n")
        self.env = dict(os.environ, RCAGENT_CONFIG=self.conf)


def full_agent(prefix, topic, defaults='{"k": "v"}'):
    """A FileAgent with every feature loaded: its source an http.server on WORK/www, `[Push] MQTT=` and
    `[Report] MQTTStatusTopic=topic` on a mosquitto, both started here and waited for; the remote
    document set (the caller may write another); the broker's port is `agent.mqtt_port`. Returns
    (agent, helpers): the caller stops the helpers."""
    agent = FileAgent(prefix, defaults=defaults, source="www/remote.json")
    work, conf = agent.work, agent.conf
    os.mkdir(os.path.join(work, "www"))
    http_port, mqtt_port = free_port(), free_port()
    with open(conf) as f:
        text = f.read().split("[Source]")[0]
    with open(conf, "w") as f:
        f.write(text + f"[Source]\nType=http\nURL=http://127.0.0.1:{http_port}/remote.json\n"
                f"[Push]\nMQTT=mqtt://127.0.0.1:{mqtt_port}\n[Report]\nMQTTStatusTopic={topic}\n")
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous true\n")
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    helpers = [subprocess.Popen(["mosquitto", "-c", os.path.join(work, "mosquitto.conf")], **quiet),
               subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(http_port),
                                 "--directory", os.path.join(work, "www")], **quiet)]
    wait_for(lambda: port_open(http_port) and port_open(mqtt_port), "the http server or mosquitto did not start")
    agent.mqtt_port = mqtt_port
    with open(agent.remote, "w") as f:
        f.write('{"state": "UPDATE", "templateVersion": "1", "entries": {"k": "w"}}')
    return agent, helpers


def write_nginx_config(d, port, root, connections=256, access_log="access_log off;", main=""):
    """nginx.conf in directory `d` for a master and one worker serving the files of `root` on
    127.0.0.1:`port`, with its pid file, error log and temp paths in `d` (`d`/temp must exist).
    `access_log` and `main` (lines for the main context) are the caller's."""
    # `user root`: when the bench runs as root, workers would otherwise run as nobody, who cannot
    # read the 0700 work directory (ignored, with a notice, when not root).
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""master_process on;
worker_processes 1;
user root;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
{main}events {{ worker_connections {connections}; }}
http {{
    {access_log}
    client_body_temp_path {d}/temp/body;
    proxy_temp_path {d}/temp/proxy;
    fastcgi_temp_path {d}/temp/fastcgi;
    uwsgi_temp_path {d}/temp/uwsgi;
    scgi_temp_path {d}/temp/scgi;
    types {{ application/json json; }}
    server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
""")


class HTTPAgent(FileAgent):
    """A FileAgent whose source is `http://127.0.0.1:PORT/doc.json`, served from WORK/www by python's
    http.server or by nginx (``serve()`` starts it; the caller stops it with ``stop()``)."""

    def __init__(self, prefix):
        super().__init__(prefix, source="www/doc.json")
        self.www = os.path.join(self.work, "www")
        os.mkdir(self.www)
        self.port = free_port()
        self.server = None
        self.modified = 0
        with open(self.conf) as f:
            conf = f.read().split("[Source]")[0]
        with open(self.conf, "w") as f:
            f.write(conf + f"[Source]\nType=http\nURL=http://127.0.0.1:{self.port}/doc.json\n")

    def publish(self, text):
        """Replaces the served document whole (a rename); returns its size in bytes. Each version gets
        an mtime at least 1 s after the last: nginx's ETag is the mtime in whole seconds and the size,
        and a changed document of the same size within the same second would otherwise be a 304."""
        temporary = self.remote + ".new"
        with open(temporary, "w") as f:
            f.write(text)
        self.modified = max(int(time.time()), self.modified + 1)
        os.utime(temporary, (self.modified, self.modified))
        os.rename(temporary, self.remote)
        return len(text.encode())

    def serve(self, server="python"):
        """Starts the http server: "python" (http.server: HTTP/1.0, a thread per request, about 1 ms a
        request) or "nginx" (a master and one worker, as a CDN edge serves a static file; config, pid
        file, logs and temp paths in WORK/nginx, no access log)."""
        if server == "nginx":
            d = os.path.join(self.work, "nginx")
            os.makedirs(os.path.join(d, "temp"))
            write_nginx_config(d, self.port, self.www)
            command = ["/usr/sbin/nginx", "-p", d, "-e", f"{d}/error.log", "-c", f"{d}/nginx.conf", "-g",
                       "daemon off;"]
        else:
            command = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(self.port), "--directory",
                       self.www]
        # nginx's master and worker in a process group of their own: stop() ends the master by its pid,
        # and the group only if the master does not stop.
        self.server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        wait_for(lambda: port_open(self.port), f"the http server ({server}) did not start")

    def stop(self):
        if self.server:
            self.server.terminate()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()
            self.server = None


def small_document(version):
    """The small document of the fetch figures (bench/fetch.py, bench/template-ab.py small): two
    values, `bench` naming `version`."""
    return json.dumps({"state": "UPDATE", "templateVersion": str(version),
                       "entries": {"bench": f"v{version}", "other": "same"}})


def forced_fetch(sock):
    """`{"op":"fetch","force":true,"wait":true}` on the daemon's socket `sock`: the ms from the request to
    the answer line (after the fetch, the store and the activation committed). Exits on a failed fetch."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    start = time.perf_counter()
    s.sendall(b'{"op":"fetch","force":true,"wait":true}\n')
    reply = s.makefile().readline()
    elapsed = (time.perf_counter() - start) * 1000
    s.close()
    if '"ok":true' not in reply:
        raise SystemExit(f"fetch failed: {reply}")
    return elapsed


def port_open(port):
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def cpu_ms(pid):
    """CPU time (utime + stime) process `pid` has used, in milliseconds (clock-tick resolution)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def report(script, figures):
    """Hands `figures` to bench/run.py (RCBENCH_OUT/<script>.json) when it runs the script."""
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], f"{script}.json"), "w") as f:
            json.dump(figures, f)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (for a broker the script starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(path):
    """Whether a daemon accepts connections on the Unix socket at `path`. The file appears at the
    daemon's bind(), before its listen(): a connect in between is refused, so the file alone does not
    say the daemon is ready (the soak's next daemon was once refused that way)."""
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            return True
        except (FileNotFoundError, ConnectionRefusedError):
            return False


def wait_for(condition, what, bound=20):
    """Polls `condition` until it holds; `what` ends the run when it still does not after `bound` s
    (a bound for a failing run only: a working one never waits for it)."""
    deadline = time.time() + bound
    while not condition():
        if time.time() > deadline:
            raise SystemExit(what)
        time.sleep(0.01)
