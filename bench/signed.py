#!/usr/bin/env python3
"""The cost of verifying signed documents (TrustedKeys=): a 3,000-key document, fetched, stored and
activated through the file source and `rcagent fetch --force --wait`, unsigned on one daemon and as an
`rcadmin sign` envelope (Ed25519, one signature) on another with TrustedKeys= set, the two interleaved
round by round on the same machine. Reports the wall time of each fetch-to-active (the socket's
answer) and the daemon's own "fetched in X ms" (read, verify, parse), median over N rounds (default 30).
Envelopes are signed before the timed rounds: signing is the publisher's cost, not the device's.

Usage: bench/signed.py BIN_DIR [ROUNDS]
"""
import json, os, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, cpu_ms, listening, report, wait_for

bin_dir = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30


def document(version):
    entries = {f"param_{i}": f"value {i} of template {version}" for i in range(3000)}
    return json.dumps({"state": "UPDATE", "templateVersion": str(version), "entries": entries})


plain = FileAgent("rcbench-unsigned-")
signed = FileAgent("rcbench-signed-")
key = os.path.join(signed.work, "signing.key")
subprocess.run([f"{bin_dir}/rcadmin", "key", "generate", "--out", key], check=True, capture_output=True)
with open(signed.conf, "a") as f:
    f.write(f"TrustedKeys={key}.pub\n")

envelopes = {}
for version in range(1, rounds + 2):
    path = os.path.join(signed.work, "unsigned.json")
    with open(path, "w") as f:
        f.write(document(version))
    envelopes[version] = subprocess.run(
        [f"{bin_dir}/rcadmin", "sign", "--key", key, "--version", str(version), path],
        check=True, capture_output=True, text=True).stdout
print(f"document {len(document(1))} bytes, envelope {len(envelopes[1])} bytes")


def publish(agent, text):
    temporary = agent.remote + ".new"
    with open(temporary, "w") as f:
        f.write(text)
    os.rename(temporary, agent.remote)


def fetch(agent, *flags):
    start = time.perf_counter()
    subprocess.run([f"{bin_dir}/rcagent", "fetch", *flags, "--wait"], env=agent.env, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


daemons = {}
for name, agent, first in (("unsigned", plain, document(1)), ("signed", signed, envelopes[1])):
    publish(agent, first)
    log = open(os.path.join(agent.work, "daemon.log"), "w")
    daemons[name] = subprocess.Popen([f"{bin_dir}/rcagentd"], env=agent.env, stdout=log, stderr=log)
    wait_for(lambda: listening(agent.sock), f"the {name} daemon did not start")
    fetch(agent)

walls = {"unsigned": [], "signed": []}
cpu = {}
try:
    cpu_before = {name: cpu_ms(d.pid) for name, d in daemons.items()}
    for version in range(2, rounds + 2):
        publish(plain, document(version))
        publish(signed, envelopes[version])
        # Interleaved, alternating which goes first: load on the machine falls on both alike.
        order = [("unsigned", plain), ("signed", signed)]
        for name, agent in (order if version % 2 else order[::-1]):
            walls[name].append(fetch(agent, "--force"))
    cpu = {name: (cpu_ms(d.pid) - cpu_before[name]) / rounds for name, d in daemons.items()}
finally:
    for d in daemons.values():
        d.terminate()
        d.wait()

parsed = {}
for name, agent in (("unsigned", plain), ("signed", signed)):
    text = open(os.path.join(agent.work, "daemon.log")).read()
    parsed[name] = [float(x) for x in re.findall(r"fetched in ([0-9.]+) ms", text)][1:]
    subprocess.run(["rm", "-rf", agent.work])
if len(parsed["signed"]) != rounds:
    raise SystemExit(f"the signed daemon logged {len(parsed['signed'])} fetches of {rounds}: were envelopes refused?")
median = {name: statistics.median(values) for name, values in walls.items()}
read = {name: statistics.median(values) for name, values in parsed.items()}
print(f"3,000-key fetch -> active ({rounds} rounds, interleaved): unsigned median {median['unsigned']:.1f} ms, "
      f"signed {median['signed']:.1f} ms; daemon read+parse(+verify) {read['unsigned']:.1f} ms vs "
      f"{read['signed']:.1f} ms; daemon CPU {cpu['unsigned']:.1f} vs {cpu['signed']:.1f} ms per fetch")
report("signed", [
    {"id": "signed3000.wall", "figure": "3,000 keys signed: fetch -> active (socket answer), median",
     "value": round(median["signed"], 1), "unit": "ms", "target": None,
     "peers": {"unsigned_ms": round(median["unsigned"], 1)}},
    {"id": "signed3000.read", "figure": "3,000 keys signed: daemon read + verify + parse, median",
     "value": round(read["signed"], 1), "unit": "ms", "target": None,
     "peers": {"unsigned_ms": round(read["unsigned"], 1)}},
    {"id": "signed3000.cpu", "figure": "3,000 keys signed: daemon CPU per fetch",
     "value": round(cpu["signed"], 1), "unit": "ms", "target": None,
     "peers": {"unsigned_ms": round(cpu["unsigned"], 1)}},
])
