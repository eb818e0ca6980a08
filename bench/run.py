#!/usr/bin/env python3
"""`make bench`: runs every bench/ script against one release build, collects what each reports,
prints one table and writes bench/results.json (a run of some scripts: bench/results-SCRIPT-....json).

Each script prints its own human-readable lines as it goes and, when RCBENCH_OUT is set, writes
RCBENCH_OUT/<script>.json: a list of figures, each
    {"id", "figure", "value", "unit", "target": {"op": "<=", "value": N} | null, "peers": {...}, "note"}.
This driver adds the verdict (met/missed; "-" where no target is set) and the machine.

Usage: bench/run.py BIN_DIR [SCRIPT...]     (scripts: get ping fetch activate bigdoc rollback signed hostile fanout idle idle-full sizes relay activity fleet exporter soak nats-sessions; default all
but nats-sessions)
Environment: RCBENCH_IDLE_SECONDS (60), RCBENCH_AGENTS (50), RCBENCH_ROUNDS (200), RCBENCH_RELAY_ROUNDS
(20), RCBENCH_ACTIVITY_ROUNDS (100), RCBENCH_RESULTS (where the results go: bench/results.json, or
bench/results-SCRIPT-....json for some scripts), RCBENCH_FLEET_AGENTS (1000), RCBENCH_EXPORTER_REPORTS (1000), RCBENCH_SOAK_REQUESTS (5000), RCBENCH_DEB (a .deb to read instead of building one from BIN_DIR).
"""
import datetime, json, os, platform, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures import show

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
bin_dir = os.path.abspath(sys.argv[1])
chosen = sys.argv[2:] or ["get", "ping", "fetch", "activate", "bigdoc", "rollback", "signed", "hostile", "fanout", "idle", "idle-full", "sizes", "relay", "activity", "fleet",
                           "exporter", "soak"]
# A run of some scripts writes a file of its own: bench/results.json is the whole run BENCHMARKS.md shows.
results_path = os.environ.get("RCBENCH_RESULTS") or os.path.join(
    here, f"results-{'-'.join(sys.argv[2:])}.json" if sys.argv[2:] else "results.json")
commands = {
    "get": [f"{here}/get.sh", bin_dir],
    "ping": [f"{here}/ping.py", bin_dir, os.environ.get("RCBENCH_ROUNDS", "200")],
    "fetch": [f"{here}/fetch.py", bin_dir, os.environ.get("RCBENCH_FETCH_ROUNDS", "100")],
    "activate": [f"{here}/activate.py", bin_dir],
    "bigdoc": [f"{here}/bigdoc.py", bin_dir],
    "rollback": [f"{here}/rollback.py", bin_dir, os.environ.get("RCBENCH_ROLLBACK_ROUNDS", "20")],
    "signed": [f"{here}/signed.py", bin_dir, os.environ.get("RCBENCH_SIGNED_ROUNDS", "30")],
    "hostile": [f"{here}/hostile.py", bin_dir],
    "fanout": [f"{here}/fanout.py", bin_dir, os.environ.get("RCBENCH_AGENTS", "50")],
    "idle": [f"{here}/idle.py", bin_dir, os.environ.get("RCBENCH_IDLE_SECONDS", "60")],
    "idle-full": [f"{here}/idle.py", bin_dir, os.environ.get("RCBENCH_IDLE_SECONDS", "60"), "--full"],
    "sizes": [f"{here}/sizes.sh", bin_dir],
    "relay": [f"{here}/relay.py", bin_dir, os.environ.get("RCBENCH_RELAY_ROUNDS", "20")],
    "activity": [f"{here}/activity.py", bin_dir, os.environ.get("RCBENCH_ACTIVITY_ROUNDS", "100")],
    "fleet": [f"{here}/fleet.py", bin_dir, os.environ.get("RCBENCH_FLEET_AGENTS", "1000")],
    # Not in the default list: what a NATS cluster spends on each piece of an agent's session (issue 30).
    "nats-sessions": [f"{here}/nats-sessions.py", "100", "10"],
    "exporter": [f"{here}/exporter.py", bin_dir, os.environ.get("RCBENCH_EXPORTER_REPORTS", "1000")],
    "soak": [f"{here}/soak.py", bin_dir, os.environ.get("RCBENCH_SOAK_REQUESTS", "5000")],
}


def command_output(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    memory = next((int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    return {
        "kernel": platform.release(),
        "os": next((line.split("=", 1)[1].strip().strip('"') for line in open("/etc/os-release")
                    if line.startswith("PRETTY_NAME=")), ""),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory / 1024 / 1024, 1),
        "swift": command_output(["swift", "--version"]).splitlines()[0] if command_output(["swift", "--version"]) else "",
        "commit": command_output(["git", "-C", root, "rev-parse", "--short", "HEAD"]),
        "dirty": bool(command_output(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])),
        "load_average_at_start": os.getloadavg(),
    }


def verdict(figure):
    if "verdict" in figure:  # a target that is not a number (idle wakeups): the script judged it
        return figure["verdict"]
    target = figure.get("target")
    if not target or figure.get("value") is None:
        return "-"
    value, limit = figure["value"], target["value"]
    met = value <= limit if target["op"] == "<=" else value >= limit
    return "met" if met else "missed"


def main():
    out = tempfile.mkdtemp(prefix="rcbench-out-")
    env = dict(os.environ, RCBENCH_OUT=out)
    info = machine()
    started = datetime.datetime.now(datetime.timezone.utc)
    failed = []
    for name in chosen:
        print(f"== {name}: {' '.join(commands[name])}", flush=True)
        if subprocess.run(commands[name], env=env).returncode != 0:
            failed.append(name)
            print(f"== {name} failed", flush=True)

    figures = []
    for name in chosen:
        path = os.path.join(out, f"{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                for figure in json.load(f):
                    figure["script"] = f"bench/{os.path.basename(commands[name][0])}"
                    figure["verdict"] = verdict(figure)
                    figures.append(figure)
    shutil.rmtree(out, ignore_errors=True)
    info["load_average_at_end"] = os.getloadavg()
    results = {
        "date": started.isoformat(timespec="seconds"),
        "machine": info,
        "binaries": bin_dir,
        "failed": failed,
        "figures": figures,
    }
    with open(results_path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")

    rows = [("figure", "measured", "target", "verdict")]
    for figure in figures:
        target = figure.get("target")
        rows.append((
            figure["figure"],
            show(figure.get("value"), figure.get("unit", "")),
            f"{target['op']} {show(target['value'], figure.get('unit', ''))}" if target
            else figure.get("target_text", "-"),
            figure["verdict"],
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    print()
    print(f"rcagent benchmarks, {info['commit']}{' (dirty)' if info['dirty'] else ''}, {info['cores']} cores, "
          f"{info['cpu']}, load {info['load_average_at_start'][0]:.1f} at start")
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))
    print(f"\nwritten: {os.path.relpath(results_path)} ({len(figures)} figures)")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


main()
