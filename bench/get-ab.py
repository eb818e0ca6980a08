#!/usr/bin/env python3
"""Two builds' `rcagent get KEY` (and `sqlite3` doing the same lookup), interleaved: each round runs
the three in a fresh random order, so a load spike from other work on the machine lands on all of
them alike instead of on whichever hyperfine happened to be running (it runs one command's runs, then
the next's). Prints each one's median and the ratios of medians: what "not slower than the old build,
measured in the same run" needs on a shared machine. The same 3,000-key database as bench/get.sh.

Usage: bench/get-ab.py NEW_BIN_DIR OLD_BIN_DIR [ROUNDS]   (default 400 rounds)
"""
import os, random, shutil, statistics, subprocess, sys, tempfile, time

new, old = (os.path.abspath(d) for d in sys.argv[1:3])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 400
work = tempfile.mkdtemp(prefix="rcgetab-")
conf = f"{work}/agent.conf"
with open(conf, "w") as f:
    f.write(f"[Agent]\nStateDirectory={work}/state\nSocket={work}/agent.sock\nDefaults={work}/defaults.json\n"
            f"[Source]\nType=file\nPath={work}/remote.json\n")
with open(f"{work}/defaults.json", "w") as f:
    f.write("{}")
env = dict(os.environ, RCAGENT_CONFIG=conf)
subprocess.run([f"{old}/rcagent", "mark-stale", "--reason", "bench"], env=env, check=True, stdout=subprocess.DEVNULL)
rows = "".join(f"INSERT INTO active_values VALUES ('key_{i}', 'value of key {i}');\n" for i in range(1, 3001))
subprocess.run(["sqlite3", f"{work}/state/state.db"], input=f"BEGIN;\n{rows}COMMIT;\n", text=True, check=True)
subprocess.run(["sqlite3", f"{work}/state/state.db", "PRAGMA wal_checkpoint(TRUNCATE)"], check=True,
               stdout=subprocess.DEVNULL)
# The new build reads the reader file: mark-stale rewrites it from the filled database.
subprocess.run([f"{new}/rcagent", "mark-stale", "--reason", "bench"], env=env, check=True, stdout=subprocess.DEVNULL)
commands = {
    "new rcagent get": [f"{new}/rcagent", "get", "key_1500"],
    "old rcagent get": [f"{old}/rcagent", "get", "key_1500"],
    "sqlite3 select": [shutil.which("sqlite3"), f"{work}/state/state.db", "select value from active_values where key='key_1500'"],
}
for name, argv in commands.items():
    out = subprocess.run(argv, env=env, capture_output=True, text=True).stdout
    if out != "value of key 1500\n":
        sys.exit(f"{name} answered {out!r}")
devnull = os.open(os.devnull, os.O_WRONLY)
times = {name: [] for name in commands}
names = list(commands)
for _ in range(rounds + 20):
    random.shuffle(names)
    for name in names:
        start = time.perf_counter()
        pid = os.posix_spawn(commands[name][0], commands[name], env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        os.waitpid(pid, 0)
        times[name].append(time.perf_counter() - start)
for name in names:
    times[name] = times[name][20:]  # warm-up
median = {name: statistics.median(t) * 1000 for name, t in times.items()}
for name in commands:
    print(f"{name:16} median {median[name]:.3f} ms  (p10 {statistics.quantiles(times[name], n=10)[0] * 1000:.3f}, "
          f"p90 {statistics.quantiles(times[name], n=10)[-1] * 1000:.3f})")
print(f"new / old:     {median['new rcagent get'] / median['old rcagent get']:.3f}")
print(f"new / sqlite3: {median['new rcagent get'] / median['sqlite3 select']:.3f}")
print(f"old / sqlite3: {median['old rcagent get'] / median['sqlite3 select']:.3f}")
subprocess.run(["rm", "-rf", work])
