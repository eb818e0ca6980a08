#!/usr/bin/env python3
"""Performance target: the daemon idle. A daemon on a `file` source, fetched once, then left alone for
SECONDS (60): its proportional set size at the end (smaps_rollup, target <= 8 MiB) with a
per-mapping breakdown (smaps), the CPU time it used (utime+stime), and its wakeups over the window,
counted per thread as voluntary+nonvoluntary context switches (/proc/PID/task/*/status) and, when
`perf stat` can count the sched:sched_switch tracepoint here, by perf as well. The target allows only
timer and watchdog wakeups: after the window strace watches the daemon for 65 s more and shows
what each woken thread returned from, the timer periods it re-armed and the timed waits (poll,
select) it saw run out: a thread is a timer's when one of those explains its count.

With --full, the daemon has every feature loaded (issue 30, item 3): an `http` source on python's
http.server and `[Push] MQTT=` plus `[Report] MQTTStatusTopic=` on a mosquitto, both started by this
script, so libcurl, libmosquitto and libcrypto are mapped (target PSS <= 5 MiB; figures idle_full.*).

Usage: bench/idle.py BIN_DIR [SECONDS] [--full]
"""
import collections, json, os, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentsetup import FileAgent, cpu_ms, full_agent

full = "--full" in sys.argv
arguments = [a for a in sys.argv[1:] if a != "--full"]
bin_dir = os.path.abspath(arguments[0])
seconds = int(arguments[1]) if len(arguments) > 1 else 60
prefix, target_mib = ("idle_full", 5) if full else ("idle", 8)
defaults = '{"kiosk_url": "https://example.com"}'
# --full: the http server and the broker, stopped at the end
agent, helpers = (full_agent("rcidle-", "rcidle/status", defaults) if full
                  else (FileAgent("rcidle-", defaults=defaults), []))
work, conf, env = agent.work, agent.conf, agent.env
with open(agent.remote, "w") as f:
    f.write('{"state": "UPDATE", "templateVersion": "1", "entries": {"kiosk_url": "https://example.com/remote"}}')


def threads(pid):
    """tid -> (name, context switches, where it sleeps)."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
            name = re.search(r"^Name:\s*(.*)$", status, re.M).group(1)
            switches = sum(int(n) for n in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s*(\d+)", status, re.M))
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip()
            result[int(tid)] = (name, switches, wchan)
        except (OSError, AttributeError):
            pass  # the thread ended while we looked
    return result


def rollup(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+):\s+(\d+) kB", f.read(), re.M)}


def mappings(pid, binary):
    """Pss, Rss and Private_Dirty in KiB per mapped file (the daemon's binary as `rcagentd`), and the
    anonymous memory by kind: the heap (brk), the main thread's stack, malloc arenas (a
    64 MiB-aligned writable mapping just below the no-access rest of its reservation), thread stacks
    (a writable mapping just above a no-access guard), and the rest (.bss, large malloc blocks, the kernel's vdso/vvar)."""
    entries = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split(None, 5)
                low, high = (int(x, 16) for x in parts[0].split("-"))
                entries.append({"low": low, "high": high, "perms": parts[1],
                                "path": parts[5].strip() if len(parts) > 5 else "", "fields": collections.Counter()})
                continue
            key, _, value = line.partition(":")
            if key in ("Pss", "Rss", "Private_Dirty", "Anonymous"):
                entries[-1]["fields"][key] += int(value.split()[0])
    rows = collections.defaultdict(collections.Counter)
    for i, e in enumerate(entries):
        path = e["path"]
        below = entries[i - 1] if i > 0 and entries[i - 1]["high"] == e["low"] else None
        above = entries[i + 1] if i + 1 < len(entries) and entries[i + 1]["low"] == e["high"] else None
        if path == binary:
            name = "rcagentd (the binary)"
        elif path.startswith("/"):
            name = os.path.basename(path)
        elif path == "[heap]":
            name = "anonymous: heap (brk)"
        elif path == "[stack]":
            name = "anonymous: main thread's stack"
        elif path.startswith("["):
            name = "anonymous: " + path
        elif e["perms"].startswith("---"):
            name = "anonymous: guards and reserved (no access)"
        elif e["low"] % (64 << 20) == 0 and above and above["perms"].startswith("---") and not above["path"]:
            name = "anonymous: malloc arenas"  # a thread arena's heap: 64 MiB aligned, its reservation above
        elif below and below["perms"].startswith("---") and not below["path"]:
            name = "anonymous: thread stacks"
        else:
            name = "anonymous: other (.bss, large malloc blocks)"
        rows[name]["mappings"] += 1
        rows[name].update(e["fields"])
    return rows


def perf_works():
    try:
        return subprocess.run(["perf", "stat", "-e", "sched:sched_switch", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# Long enough to see a 30 s timed wait (the MQTT session's keepalive) run out whole: the wait strace
# interrupts when it attaches is restarted with what was left of it, and tells no period.
STRACE_SECONDS = 65


def timed_wait(call, arguments):
    """The timeout, in seconds, `call` was made with (`arguments` as strace shows them), or None."""
    if call in ("select", "pselect6", "ppoll"):
        v = re.search(r"\{tv_sec=(\d+), tv_nsec=(\d+)\}", arguments)
        return int(v.group(1)) + int(v.group(2)) / 1e9 if v else None
    position = {"poll": 2, "epoll_wait": 3, "epoll_pwait": 3}.get(call)  # the timeout in ms
    if position is None:
        return None
    parts, depth, part = [], 0, ""
    for c in arguments:  # split at the commas outside [...] and {...}
        depth += (c in "[{") - (c in "]}")
        if c == "," and depth == 0:
            parts.append(part.strip())
            part = ""
        else:
            part += c
    parts.append(part.strip())
    return int(parts[position]) / 1e3 if len(parts) > position and parts[position].isdigit() else None


def strace_summary(pid, window):
    """What each thread returned from during `window` seconds, the timerfd periods re-armed, and the
    timeouts of the timed waits that ran out."""
    if not shutil.which("strace"):
        return None
    log = os.path.join(work, "strace.txt")
    subprocess.run(["timeout", str(window), "strace", "-f", "-tt", "-o", log, "-p", str(pid)], capture_output=True)
    returns = collections.defaultdict(collections.Counter)
    arms = collections.defaultdict(list)
    waits = collections.defaultdict(set)
    # tid -> the arguments of its call strace left unfinished; None for the call each thread was in
    # when strace attached, which the kernel restarted with what was left of its timeout
    started = {}
    with open(log) as f:
        for line in f:
            m = re.match(r"^(\d+)\s+[\d:.]+\s+(?:<\.\.\. )?(\w+)", line)
            if not m:
                continue
            tid, call = int(m.group(1)), m.group(2)
            if line.rstrip().endswith("<unfinished ...>"):
                started[tid] = line.split("(", 1)[1].rsplit("<unfinished", 1)[0] if tid in started else None
                continue
            if "= 0 (Timeout)" in line:
                resumed = " resumed>" in line
                arguments = started.get(tid) if resumed else line.split("(", 1)[1].rsplit(") =", 1)[0]
                timeout = timed_wait(call, arguments or "")
                if timeout:
                    waits[tid].add(round(timeout, 3))
            started.setdefault(tid, None)
            if call in ("restart_syscall", "exit") or "resumed" not in line and "unfinished" in line:
                continue
            if call == "timerfd_settime":
                v = re.search(r"it_value=\{tv_sec=(\d+), tv_nsec=(\d+)\}", line)
                if v:
                    arms[tid].append(int(v.group(1)) + int(v.group(2)) / 1e9)
            returns[tid][call] += 1
    periods = {tid: sorted({round(b - a, 3) for a, b in zip(times, times[1:])}) for tid, times in arms.items()}
    return returns, periods, waits


daemon = subprocess.Popen([f"{bin_dir}/rcagentd", "--config", conf], stderr=subprocess.DEVNULL)
pid = daemon.pid
figures = []
try:
    deadline = time.time() + 20
    while subprocess.run([f"{bin_dir}/rcagent", "fetch", "--wait"], env=env, capture_output=True).returncode != 0:
        if time.time() > deadline:
            raise SystemExit("the daemon never answered a fetch")
        time.sleep(0.1)
    if full:  # the MQTT channel is up and the report published (retained) before the window starts
        if subprocess.run(["mosquitto_sub", "-p", str(agent.mqtt_port), "-t", "rcidle/status/#", "-C", "1", "-W", "20"],
                          capture_output=True).returncode != 0:
            raise SystemExit("the daemon never published its report on mosquitto")
    time.sleep(2)

    before, cpu_before, t0 = threads(pid), cpu_ms(pid), time.monotonic()
    perf = None
    if perf_works():
        out = subprocess.run(["perf", "stat", "-x,", "--per-thread", "-e", "sched:sched_switch", "-p", str(pid),
                              "--", "sleep", str(seconds)], capture_output=True, text=True).stderr
        perf = {}
        for line in out.splitlines():
            cells = line.split(",")
            if len(cells) > 3 and cells[3] == "sched:sched_switch":
                perf[cells[0]] = int(cells[1]) if cells[1].isdigit() else 0
    else:
        time.sleep(seconds)
    after, cpu_after, elapsed = threads(pid), cpu_ms(pid), time.monotonic() - t0
    memory = rollup(pid)
    if os.environ.get("RCBENCH_IDLE_SMAPS"):  # a copy of the whole smaps, to look at by hand
        shutil.copy(f"/proc/{pid}/smaps", os.environ["RCBENCH_IDLE_SMAPS"])
    rows = mappings(pid, os.path.realpath(f"{bin_dir}/rcagentd"))
    traced = strace_summary(pid, STRACE_SECONDS)
    # The daemon gives back the pages a fetch round mapped 10 s after the round, and once more 20 s
    # later; the fetch maps back what it runs. What one forced fetch (the socket, a file read, a JSON
    # parse, a SQLite commit) leaves 2 s after it, and 35 s after it, once the daemon is idle again:
    subprocess.run([f"{bin_dir}/rcagent", "fetch", "--force", "--wait"], env=env, capture_output=True)
    time.sleep(2)
    busy = rollup(pid)
    time.sleep(33)
    after_fetch = rollup(pid)
    rows_after_fetch = mappings(pid, os.path.realpath(f"{bin_dir}/rcagentd"))

    per_thread = []
    for tid in sorted(set(before) | set(after)):
        name, start, wchan = before.get(tid, after.get(tid))
        end = after[tid][1] if tid in after else None
        per_thread.append({"tid": tid, "name": name, "sleeps_in": after.get(tid, (0, 0, wchan))[2],
                           "wakeups": None if end is None else end - start,
                           "alive": "whole window" if tid in before and tid in after
                           else "ended during the window" if tid in before else "started during the window"})
    wakeups = sum(t["wakeups"] or 0 for t in per_thread)
    per_minute = wakeups * 60 / elapsed
    pss = memory["Pss"]
    features = " (http source, MQTT push, report)" if full else ""
    print(f"rcagentd{features} idle for {seconds}s: PSS {pss / 1024:.1f} MiB (RSS {memory['Rss'] / 1024:.1f} MiB, "
          f"anonymous {memory.get('Pss_Anon', 0) / 1024:.1f} MiB), CPU {cpu_after - cpu_before} ms, "
          f"{wakeups} wakeups ({per_minute:.0f}/min) (target PSS <= {target_mib} MiB, only timer/watchdog wakeups)")
    print(f"  threads at the end: {len(after)}")
    for t in per_thread:
        print(f"    {t['tid']:>7} {t['name']:<16} {str(t['wakeups']):>5} wakeups  sleeps in {t['sleeps_in']:<28} {t['alive']}")
    if perf is not None:
        print(f"  perf stat sched:sched_switch over the window: {sum(perf.values())} "
              f"({', '.join(f'{k} {v}' for k, v in sorted(perf.items()) if v)})")
    timer_only = None
    if traced:
        returns, periods, waits = traced
        print(f"  strace, {STRACE_SECONDS} s after the window (attaching wakes every thread once): what each returned from")
        for tid, calls in sorted(returns.items()):
            name = after.get(tid, before.get(tid, ("?",)))[0]
            period = f"; re-armed its timerfd every {', '.join(f'{p:g}' for p in periods[tid])} s" if periods.get(tid) else ""
            waited = f"; timed waits of {', '.join(f'{w:g}' for w in sorted(waits[tid]))} s ran out" if waits.get(tid) else ""
            print(f"    {tid:>7} {name:<16} {dict(calls)}{period}{waited}")
        # Judged on the window itself: a thread that woke is a timer's if strace saw it re-arm a
        # timerfd, or a timed wait (poll, select) of its run out, with a period that explains its
        # count (the slack of 2 covers what the timer's work brings back: the answer to a keepalive
        # ping), and a pool thread that ended during the window woke once, when its timed wait for
        # work ran out.
        timer_only = True
        for t in per_thread:
            if t["alive"] == "ended during the window":
                t["cause"] = "an idle dispatch pool thread retiring (its timed wait ran out)"
            elif t["wakeups"]:
                timers = [(p, f"a timer every {p:g} s") for p in periods.get(t["tid"], []) if p > 0]
                timers += [(w, f"a timed wait of {w:g} s running out") for w in waits.get(t["tid"], ()) if w > 0]
                shortest, cause = min(timers) if timers else (0, "")
                if shortest > 0 and t["wakeups"] <= elapsed / shortest * 1.1 + 2:
                    t["cause"] = cause
                else:
                    t["cause"] = "not a timer"
                    timer_only = False
        for t in per_thread:
            if t.get("cause"):
                print(f"    {t['tid']:>7} {t['name']:<16} {t['cause']}")
        print(f"  only timers: {'yes' if timer_only else 'no'}")

    print(f"  PSS 2 s after one more (forced) fetch: {busy['Pss'] / 1024:.1f} MiB; "
          f"35 s after it, idle again: {after_fetch['Pss'] / 1024:.1f} MiB")
    print("  PSS by mapping at the end of the window (KiB, largest first):")
    total_rss = sum(r["Rss"] for r in rows.values())
    top = sorted(rows.items(), key=lambda kv: -kv[1]["Pss"])
    for name, r in top[:20]:
        print(f"    {r['Pss']:>6} Pss {r['Rss']:>6} Rss {r['Private_Dirty']:>5} dirty  {name}")
    rest = top[20:]
    print(f"    {sum(r['Pss'] for _, r in rest):>6} Pss {sum(r['Rss'] for _, r in rest):>6} Rss        "
          f"  {len(rest)} more libraries")

    breakdown = {name: {"pss_kib": r["Pss"], "rss_kib": r["Rss"], "private_dirty_kib": r["Private_Dirty"]}
                 for name, r in top}
    libraries = [r for name, r in top if not name.startswith(("rcagentd", "anonymous"))]
    figures = [
        {"id": f"{prefix}.pss", "figure": f"daemon{features} idle PSS (smaps_rollup, after {seconds} s idle)",
         "value": round(pss / 1024, 1), "unit": "MiB", "target": {"op": "<=", "value": target_mib},
         "peers": {"rss_mib": round(memory["Rss"] / 1024, 1), "pss_anon_mib": round(memory.get("Pss_Anon", 0) / 1024, 2),
                   "pss_file_mib": round(memory.get("Pss_File", 0) / 1024, 2),
                   "binary_pss_mib": round(rows["rcagentd (the binary)"]["Pss"] / 1024, 2),
                   "shared_libraries_pss_mib": round(sum(r["Pss"] for r in libraries) / 1024, 2),
                   "shared_libraries_rss_mib": round(sum(r["Rss"] for r in libraries) / 1024, 2),
                   "shared_libraries": len(libraries), "threads": len(after), "by_mapping": breakdown},
         "note": "shared libraries' PSS depends on what else maps them on the machine"},
        {"id": f"{prefix}.pss_after_fetch", "figure": "  daemon PSS 35 s after one more (forced) fetch, idle again",
         "value": round(after_fetch["Pss"] / 1024, 1), "unit": "MiB", "target": {"op": "<=", "value": target_mib},
         "peers": {"rss_mib": round(after_fetch["Rss"] / 1024, 1), "pss_2s_after_fetch_mib": round(busy["Pss"] / 1024, 1),
                   "by_mapping": {name: {"pss_kib": r["Pss"], "rss_kib": r["Rss"], "private_dirty_kib": r["Private_Dirty"]}
                                  for name, r in sorted(rows_after_fetch.items(), key=lambda kv: -kv[1]["Pss"])}},
         "note": "the pages a fetch round maps are given back 10 s and 30 s after the round"},
        {"id": f"{prefix}.cpu", "figure": f"daemon{features} idle CPU over {seconds} s", "value": cpu_after - cpu_before, "unit": "ms",
         "target": None},
        {"id": f"{prefix}.wakeups", "figure": f"daemon{features} idle wakeups per minute ({len(after)} threads)",
         "value": round(per_minute, 1), "unit": "/min", "target": None,
         "target_text": "timers/watchdog only",
         "verdict": "-" if timer_only is None else "met" if timer_only else "missed",
         "peers": {"threads": per_thread, "perf_sched_switch": perf,
                   "strace": {str(k): dict(v) for k, v in traced[0].items()} if traced else None,
                   "timer_periods_s": {str(k): v for k, v in traced[1].items()} if traced else None,
                   "timed_waits_s": {str(k): sorted(v) for k, v in traced[2].items()} if traced else None}},
    ]
    if os.environ.get("RCBENCH_OUT"):
        with open(os.path.join(os.environ["RCBENCH_OUT"], f"{prefix.replace('_', '-')}.json"), "w") as f:
            json.dump(figures, f)
finally:
    daemon.terminate()
    daemon.wait()
    for helper in helpers:
        helper.terminate()
        helper.wait()
    shutil.rmtree(work, ignore_errors=True)
