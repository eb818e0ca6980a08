"""Clients that fill their connection with unread answers, then ask to `watch`.

    watch_ack_stall.py SOCKET COUNT

First measures how many `ping` answers the daemon can queue on a connection whose client never
reads: sends 3,000 pings, waits (poll, no reads) until the daemon gives up and closes it, then
counts the answers. Then opens COUNT connections that each send exactly that many pings and a
`watch`, reading nothing, so the acknowledgement of the watch finds the connection full. Meanwhile
it sends `status` requests on a connection of its own, one after the other, until the daemon has
closed every one of the COUNT connections. Prints one JSON line:
{"queued": N, "statusRequests": N, "slowestStatus": SECONDS, "closedAfter": SECONDS}.
"""
import json
import select
import socket
import sys
import time

path, count = sys.argv[1], int(sys.argv[2])
PING = b'{"op":"ping"}\n'


def closed_by_daemon(s, timeout):
    poller = select.poll()
    poller.register(s, select.POLLRDHUP)
    return bool(poller.poll(timeout * 1000))


probe = socket.socket(socket.AF_UNIX)
probe.connect(path)
probe.sendall(PING * 3000)
if not closed_by_daemon(probe, 60):
    sys.exit("the daemon never gave up on a client that does not read")
data = b""
while True:
    try:
        chunk = probe.recv(1 << 16)
    except ConnectionResetError:  # the daemon closed with pings unread: the answers are kept
        break
    if not chunk:
        break
    data += chunk
queued = data.count(b"\n")

owner = socket.socket(socket.AF_UNIX)
owner.connect(path)
owner_file = owner.makefile("rb")

start = time.monotonic()
crowd = []
for _ in range(count):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(PING * queued + b'{"op":"watch"}\n')
    crowd.append(s)

slowest = 0.0
requests = 0
open_clients = list(crowd)
while open_clients and time.monotonic() - start < 120:
    sent = time.monotonic()
    owner.sendall(b'{"op":"status"}\n')
    if not owner_file.readline():
        sys.exit("the daemon closed the owner's connection")
    slowest = max(slowest, time.monotonic() - sent)
    requests += 1
    open_clients = [s for s in open_clients if not closed_by_daemon(s, 0)]
closed_after = time.monotonic() - start

print(json.dumps({"queued": queued, "statusRequests": requests, "slowestStatus": slowest,
                  "closedAfter": closed_after, "stillOpen": len(open_clients)}), flush=True)
