"""A crowd of control-socket clients that send a request line one byte at a time (or `watch`).

    socket_crowd.py SOCKET COUNT drip|watch

Opens COUNT connections one after the other. `drip`: sends "{" on each, then one more byte to
every open connection each second, never a newline. `watch`: sends a watch request on each.
Prints {"event": "ready"} once every connection is open and has sent its first bytes, then waits
for a line on stdin. `drip`: reads each connection until the daemon answers and closes it, and
prints one JSON line per connection: {"answer": LINE or null, "seconds": time from its first byte
to the answer or the end of the stream}. `watch`: prints the first answer of every connection.
Ends with {"event": "done"}.
"""
import json
import select
import socket
import sys
import threading
import time

path, count, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def say(**fields):
    print(json.dumps(fields), flush=True)


clients = []
for _ in range(count):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    clients.append({"socket": s, "first": time.monotonic(), "data": b"", "done": None})
    try:
        s.sendall(b"{" if mode == "drip" else b'{"op":"watch"}\n')
    except OSError:
        pass  # refused and already closed: the answer tells

stop = threading.Event()


def drip():
    while not stop.wait(1.0):
        for client in clients:
            if client["done"] is None:
                try:
                    client["socket"].send(b" ", socket.MSG_NOSIGNAL)
                except OSError:
                    pass


def collect():
    # Each connection ends when the daemon answers and closes it; note when, as it happens.
    pending = {client["socket"].fileno(): client for client in clients}
    deadline = time.monotonic() + 30
    while pending and time.monotonic() < deadline:
        readable, _, _ = select.select(list(pending), [], [], 1.0)
        for fd in readable:
            client = pending[fd]
            try:
                chunk = client["socket"].recv(4096)
            except OSError:
                chunk = b""
            client["data"] += chunk
            if not chunk or b"\n" in client["data"]:
                client["done"] = time.monotonic()
                del pending[fd]
    stop.set()


if mode == "drip":
    threading.Thread(target=drip, daemon=True).start()
    collector = threading.Thread(target=collect)
    collector.start()
else:
    # A watch answer comes at once; collect each connection's first line.
    for client in clients:
        client["socket"].settimeout(20)
        data = b""
        while b"\n" not in data:
            chunk = client["socket"].recv(4096)
            if not chunk:
                break
            data += chunk
        client["data"] = data
say(event="ready")
sys.stdin.readline()
if mode == "drip":
    collector.join()
for client in clients:
    line = client["data"].split(b"\n")[0].decode() if client["data"] else None
    seconds = client["done"] - client["first"] if client["done"] is not None else None
    say(answer=line, seconds=seconds)
say(event="done")
