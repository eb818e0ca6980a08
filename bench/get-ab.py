#!/usr/bin/env python3
"""Two builds' `rcagent get KEY` (and `sqlite3` doing the same lookup), interleaved: each round runs
the three in a fresh random order, so a load spike from other work on the machine lands on all of
them alike instead of on whichever hyperfine happened to be running (it runs one command's runs, then
the next's). Prints each one's median and the ratios of medians: what "not slower than the old build,
measured in the same run" needs on a shared machine. The same 3,000-key database as bench/get.sh.
With one build, only it and `sqlite3` (what `make bench` reports through bench/get.sh). The whole
measurement runs REPEATS times (default 1); the ratios printed last are the medians over the repeats,
and --json FILE writes them with each repeat's.

Usage: bench/get-ab.py NEW_BIN_DIR [OLD_BIN_DIR] [ROUNDS [REPEATS]] [--json FILE]   (default 400 rounds)
"""
import json, os, random, shutil, statistics, subprocess, sys, tempfile, time

arguments = sys.argv[1:]
json_path = None
if "--json" in arguments:
    at = arguments.index("--json")
    json_path = arguments[at + 1]
    del arguments[at:at + 2]
builds = [os.path.abspath(a) for a in arguments if os.path.isdir(a)]
numbers = [int(a) for a in arguments if not os.path.isdir(a)]
new, old = builds[0], (builds[1] if len(builds) > 1 else None)
rounds = numbers[0] if numbers else 400
repeats = numbers[1] if len(numbers) > 1 else 1
work = tempfile.mkdtemp(prefix="rcgetab-")


def setup(build, name):
    """A state directory of its own for `build` (a database of its schema: since schema 7 an older
    build refuses a newer one), filled with the same 3,000 active keys; its environment. The `rcagent`
    measured is a fresh copy of the build's, in HOME/bin: see ``installed``."""
    home = f"{work}/{name}"
    os.makedirs(home)
    build = installed(build, f"{home}/bin")
    with open(f"{home}/agent.conf", "w") as f:
        f.write(f"[Agent]\nStateDirectory={home}/state\nSocket={home}/agent.sock\nDefaults={work}/defaults.json\n"
                f"[Source]\nType=file\nPath={work}/remote.json\n")
    env = dict(os.environ, RCAGENT_CONFIG=f"{home}/agent.conf")
    subprocess.run([f"{build}/rcagent", "mark-stale", "--reason", "bench"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    db = f"{home}/state/state.db"
    subprocess.run([os.path.join(os.path.dirname(os.path.abspath(__file__)), "fill-values.py"), db], check=True)
    # `get` reads the reader file: mark-stale rewrites it from the filled database.
    subprocess.run([f"{build}/rcagent", "mark-stale", "--reason", "bench"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return env, home


def installed(build, directory):
    """A fresh copy of `build`'s `rcagent` in `directory`, written whole in one go, as dpkg writes it
    on a device (and as it wrote `sqlite3`). The linker's own output file is no fair subject: the same
    bytes ran `get` 13% slower from it than from a copy (0.872x, BENCHMARKS.md), with the same
    instructions (callgrind) and page faults: how the file's pages sit in the page cache."""
    os.makedirs(directory)
    shutil.copyfile(f"{build}/rcagent", f"{directory}/rcagent")
    os.chmod(f"{directory}/rcagent", 0o755)
    return directory


with open(f"{work}/defaults.json", "w") as f:
    f.write("{}")
new_env, new_home = setup(new, "new")
select = "select value from active_values where key='key_1500'"
sqlite3 = shutil.which("sqlite3")
commands = {
    "new rcagent get": ([f"{new_home}/bin/rcagent", "get", "key_1500"], new_env),
    # The same lookup on the file `get` reads, opened as the sqlite3 shell opens any file. Since
    # schema 8 the state database holds the values as one record a set, which SQL cannot look into;
    # before, this peer read the state database (a view over rows since schema 7).
    "sqlite3 select": ([sqlite3, f"{new_home}/state/reader.db", select], new_env),
    # ... and opened immutable, as `get` opens it: no lock taken.
    "sqlite3 reader.db": ([sqlite3, f"file:{new_home}/state/reader.db?immutable=1", select], new_env),
}
if old:
    old_env, old_home = setup(old, "old")
    commands["old rcagent get"] = ([f"{old_home}/bin/rcagent", "get", "key_1500"], old_env)
    # The old build's own peer: the reader file it wrote (the OLD build must have one: issue 25 on;
    # from schema 8 on SQL can look a key up nowhere else).
    commands["sqlite3 old db"] = ([sqlite3, f"{old_home}/state/reader.db", select], old_env)
for name, (argv, env) in commands.items():
    out = subprocess.run(argv, env=env, capture_output=True, text=True).stdout
    if out != "value of key 1500\n":
        sys.exit(f"{name} answered {out!r}")
devnull = os.open(os.devnull, os.O_WRONLY)


def measure():
    """One interleaved run: each command's median wall time, in ms."""
    times = {name: [] for name in commands}
    names = list(commands)
    for _ in range(rounds + 20):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            argv, env = commands[name]
            pid = os.posix_spawn(argv[0], argv, env,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            os.waitpid(pid, 0)
            times[name].append(time.perf_counter() - start)
    for name in names:
        times[name] = times[name][20:]  # warm-up
    for name in commands:
        print(f"{name:16} median {statistics.median(times[name]) * 1000:.3f} ms  "
              f"(p10 {statistics.quantiles(times[name], n=10)[0] * 1000:.3f}, "
              f"p90 {statistics.quantiles(times[name], n=10)[-1] * 1000:.3f})")
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


ratios = {"new / old": [], "new / sqlite3": [], "new / sqlite3 reader.db": [], "old / sqlite3 old db": []}
medians = []
for repeat in range(repeats):
    median = measure()
    medians.append(median)
    ratios["new / sqlite3"].append(median["new rcagent get"] / median["sqlite3 select"])
    ratios["new / sqlite3 reader.db"].append(median["new rcagent get"] / median["sqlite3 reader.db"])
    if old:
        ratios["new / old"].append(median["new rcagent get"] / median["old rcagent get"])
        ratios["old / sqlite3 old db"].append(median["old rcagent get"] / median["sqlite3 old db"])
ratios = {name: values for name, values in ratios.items() if values}
for name, values in ratios.items():
    each = ", ".join(f"{v:.3f}" for v in values)
    print(f"{name + ':':14} {statistics.median(values):.3f}" + (f"  (runs: {each})" if repeats > 1 else ""))
if json_path:
    with open(json_path, "w") as f:
        json.dump({"rounds": rounds, "medians_ms": medians,
                   "ratios": {name: {"median": statistics.median(v), "runs": v} for name, v in ratios.items()}}, f)
subprocess.run(["rm", "-rf", work])
