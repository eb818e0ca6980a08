"""What rcagent's test fixture servers (config_server.py, firebase_server.py) share."""
import http.server, json, threading

log_lock = threading.Lock()


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1, no access log on stderr, and a client (or a test mode) that closed the socket
    under the handler is not an error."""
    protocol_version = "HTTP/1.1"

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, *args):
        pass


def append_json_line(path, record):
    """Appends `record` as one JSON line to the file at `path`, one writer at a time."""
    with log_lock:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
