#!/usr/bin/env python3
"""A config server for rcagent's tests: a real HTTP server process on loopback that the tests
script through files, so the product only ever sees HTTP.

  config_server.py DIR [--tls CERT KEY]

Binds 127.0.0.1 on a free port and prints it on stdout. Every request reads DIR/mode.json to
decide how to answer, and appends its path and headers as a JSON line to DIR/requests.log. Modes:

  {"kind": "document", "body": "...", "etag": "\\"v1\\""}   200 with ETag; 304 when If-None-Match matches
  {"kind": "status", "status": 503, "headers": {...}, "body": "..."}
  {"kind": "hang"}                    read the request, never answer
  {"kind": "reset"}                   headers and part of the body, then a TCP reset
  {"kind": "truncated", "body": "..."} Content-Length of the whole body, half of it sent, then close
  {"kind": "big", "bytes": N}         N bytes streamed with chunked encoding (no length up front)
  {"kind": "big-declared", "bytes": N} N bytes with Content-Length
  {"kind": "cycle", "modes": [M, ...]} the Nth request answers as mode M[N % len] (a flapping server)
  {"kind": "redirect", "status": 302, "location": URL, "then": M}
                                      /config.json answers `status` with Location: URL; any other
                                      path answers as mode M (the target of a same-server redirect)
"""
import http.server, json, os, socket, ssl, struct, sys, threading, time

from fixture_http import QuietHandler, append_json_line

directory = sys.argv[1]
lock = threading.Lock()
served = 0


def mode():
    global served
    with open(os.path.join(directory, "mode.json")) as f:
        m = json.load(f)
    if m["kind"] == "cycle":
        with lock:
            m = m["modes"][served % len(m["modes"])]
            served += 1
    return m


class Handler(QuietHandler):
    def do_GET(self):
        headers = {name.lower(): value for name, value in self.headers.items()}
        append_json_line(os.path.join(directory, "requests.log"), {"path": self.path, "headers": headers})
        m = mode()
        if m["kind"] == "redirect":
            if self.path == "/config.json":
                self.send_response(m.get("status", 302))
                self.send_header("Location", m["location"])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            m = m["then"]
        kind = m["kind"]
        if kind == "document":
            etag = m.get("etag")
            if etag and self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = m["body"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if etag:
                self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif kind == "status":
            body = m.get("body", "").encode()
            self.send_response(m["status"])
            for name, value in m.get("headers", {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif kind == "hang":
            time.sleep(3600)  # hold the connection; the client's timeout has to end it
            self.close_connection = True
        elif kind == "reset":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b'{"entries": {"a": "')
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            # Close the descriptor itself now (the handler's file objects still hold the socket
            # object): with linger 0 the kernel answers with a TCP reset.
            os.close(self.connection.detach())
            self.close_connection = True
        elif kind == "truncated":
            body = m["body"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif kind in ("big", "big-declared"):
            total = m["bytes"]
            self.send_response(200)
            if kind == "big":
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(total))
            self.end_headers()
            chunk = b" " * 65536
            sent = 0
            try:
                while sent < total:
                    n = min(len(chunk), total - sent)
                    if kind == "big":
                        self.wfile.write(b"%x\r\n" % n + chunk[:n] + b"\r\n")
                    else:
                        self.wfile.write(chunk[:n])
                    sent += n
                if kind == "big":
                    self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client stopped reading: what the test wants
            self.close_connection = True


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
if len(sys.argv) >= 5 and sys.argv[2] == "--tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
