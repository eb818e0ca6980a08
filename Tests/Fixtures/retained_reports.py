"""Publishes many devices' reports, retained, the way agents publish them, fast.

    retained_reports.py PORT COUNT VERSION [PREFIX]

One MQTT 3.1.1 connection to 127.0.0.1:PORT; COUNT reports shaped as RCCore's DeviceReport
writes them (device ids PREFIX000000, PREFIX000001, ...; template version VERSION), each QoS 1,
retained, on rcagent/status/<deviceId>. Sent in batches of 500, each batch's PUBACKs awaited, so
on exit 0 the broker holds all of them. mosquitto_pub would take a process per report.
"""
import json
import socket
import struct
import sys

port, count, version = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
prefix = sys.argv[4] if len(sys.argv) > 4 else "dev"


def remaining_length(n):
    out = b""
    while True:
        byte, n = n % 128, n // 128
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def text(s):
    data = s.encode()
    return struct.pack("!H", len(data)) + data


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            sys.exit("the broker closed the connection")
        data += chunk
    return data


sock = socket.create_connection(("127.0.0.1", port))
header = text("MQTT") + bytes([4, 2]) + struct.pack("!H", 60) + text("retained-reports-" + prefix)
sock.sendall(bytes([0x10]) + remaining_length(len(header)) + header)
if read_exactly(sock, 4)[3] != 0:
    sys.exit("the broker refused the connection")

batch = []
for i in range(count):
    device = "%s%06d" % (prefix, i)
    report = {
        "deviceId": device, "online": True, "at": "2026-11-30T12:00:00Z", "agentVersion": "0.9.0",
        "templateVersion": version, "stale": {"set": False, "since": None},
        "lastFetch": {"status": "success", "at": "2026-11-30T12:00:00Z", "error": None},
        "app": {"installed": "1.0.0", "update": "none"}, "activities": 0,
    }
    payload = json.dumps(report, separators=(",", ":")).encode()
    variable = text("rcagent/status/" + device) + struct.pack("!H", i % 65535 + 1)
    batch.append(bytes([0x33]) + remaining_length(len(variable) + len(payload)) + variable + payload)
    if len(batch) == 500 or i == count - 1:
        sock.sendall(b"".join(batch))
        for _ in batch:
            if read_exactly(sock, 4)[0] != 0x40:
                sys.exit("expected a PUBACK")
        batch = []
sock.sendall(bytes([0xE0, 0]))
sock.close()
