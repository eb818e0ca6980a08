#!/usr/bin/env python3
"""A hostile stand-in for a Google API endpoint, for rcagent's tests: a real HTTP server process on
loopback that answers every request (any method, any path) the way DIR/mode.json says, so the tests
can hand the client what a compromised or broken server might send. The well-behaved fake is
firebase_server.py; this one only lies.

  hostile_google.py DIR

Binds 127.0.0.1 on a free port and prints it on stdout. DIR/mode.json is re-read on every request:
  "status": S                   the HTTP status (default 200)
  "headers": {"Name": "value"}  extra headers, sent as given (control characters included)
  "body": "text"                the body (default "{}"); "{n}" in it becomes the request's number
                                (1, 2, ...), so a page token can differ on every page
  "gzipZeros": N                instead of "body": N zero bytes, gzip-compressed, sent with
                                Content-Encoding: gzip (a few KB on the wire, N once decoded)
DIR/requests.log: one JSON line per request, appended before the answer is sent:
  {"method", "path", "headers": {lower-cased name: value}, "body": the body as text}
"""
import gzip, json, os, sys, threading, http.server

from fixture_http import QuietHandler, append_json_line

directory = sys.argv[1]
served = 0
served_lock = threading.Lock()


class Handler(QuietHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        headers = {name.lower(): value for name, value in self.headers.items()}
        append_json_line(os.path.join(directory, "requests.log"),
                         {"method": self.command, "path": self.path, "headers": headers, "body": body})
        try:
            with open(os.path.join(directory, "mode.json")) as f:
                mode = json.load(f)
        except FileNotFoundError:
            mode = {}
        extra = dict(mode.get("headers", {}))
        if "gzipZeros" in mode:
            payload = gzip.compress(bytes(mode["gzipZeros"]), compresslevel=9)
            extra["Content-Encoding"] = "gzip"
        else:
            global served
            with served_lock:
                served += 1
                number = served
            payload = mode.get("body", "{}").replace("{n}", str(number)).encode()
        self.send_response(mode.get("status", 200))
        self.send_header("Content-Type", "application/json")
        for name, value in extra.items():
            # Written raw: http.server would accept the text, but the point is bytes no server should send.
            self._headers_buffer.append(("%s: %s\r\n" % (name, value)).encode("utf-8"))
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = answer


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
