#!/usr/bin/env python3
"""Writes the order the release link lays out rcagent's code in (packaging/rcagent.order, gold's
--section-ordering-file): the functions the CLI's common commands run, first `rcagent get`'s, each
in a section of its own (the release build compiles with function sections) and placed together.

Why: `rcagent get` runs about 550 of the executable's ~40,000 functions. Laid out in source order
they sit on some 60 of its 64 KiB windows, and the first instruction fetched in each window is a
page fault (the kernel maps a faulting file page's window around it). Placed together they fault in
24, and `get` ran 0.94x the time of the same build unordered (BENCHMARKS.md, issue 30).

How: each command below runs once under `valgrind --tool=callgrind` on a copy of the build without
its debug sections (valgrind cannot read the release build's), against a 3,000-key state directory
made as bench/get.sh makes it; every function callgrind saw run in the executable is listed, with
the other names of its address (merged functions), in the order the commands come. A function
missing from the file is only laid out where the linker puts it by default: a stale file costs page
faults, never correctness. bench/get.sh prints get's page faults beside sqlite3's, which is where a
stale file shows. Regenerate after changing what those commands run: `make order`.

Usage: packaging/order.py BIN_DIR [OUT]   (a release build; OUT defaults to packaging/rcagent.order)
"""
import os, re, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
build = os.path.abspath(sys.argv[1])
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "rcagent.order")

# The commands shell scripts call on a device, most frequent first.
COMMANDS = [
    ["get", "key_1500"],
    ["get", "no_such_key", "--default", "x"],
    ["check-update", "--app-version", "1.0"],
    ["list"],
    ["status"],
]


def executed(callgrind_out, executable):
    """The functions callgrind attributes cost to in `executable`. Its file names each object and
    function once, as `ob=(N) name` / `fn=(N) name` (also in the cob=/cfn= of a call), and by number
    alone after that."""
    objects, names, found, current = {}, {}, set(), None
    for line in open(callgrind_out):
        m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                objects[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                current = objects[m.group(2)]
            continue
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn" and current == executable:
                found.add(names[m.group(2)])
    return found


def aliases(executable):
    """Each code symbol's name -> every name at its address (callgrind reports one of them)."""
    at = {}
    nm = subprocess.run(["nm", "--defined-only", executable], check=True, capture_output=True, text=True).stdout
    for line in nm.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            at.setdefault(parts[0], []).append(parts[2])
    return {name: names for names in at.values() for name in names}


work = os.path.realpath(tempfile.mkdtemp(prefix="rcorder-"))  # callgrind names the executable by its real path
try:
    executable = f"{work}/rcagent"
    subprocess.run(["objcopy", "--strip-debug", f"{build}/rcagent", executable], check=True)
    with open(f"{work}/agent.conf", "w") as f:
        f.write(f"[Agent]\nStateDirectory={work}/state\nSocket={work}/agent.sock\nDefaults={work}/defaults.json\n"
                f"[Source]\nType=file\nPath={work}/remote.json\n")
    with open(f"{work}/defaults.json", "w") as f:
        f.write("{}")
    # Swift seeds its hashing per process, and a dictionary's order can change which functions run
    # (a comparison on a collision): fixed, the same build gives the same file every time.
    env = dict(os.environ, RCAGENT_CONFIG=f"{work}/agent.conf", SWIFT_DETERMINISTIC_HASHING="1")
    subprocess.run([executable, "mark-stale", "--reason", "order"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(here, "..", "bench", "fill-values.py"), f"{work}/state/state.db"], check=True)
    subprocess.run([executable, "mark-stale", "--reason", "order"], env=env, check=True, stdout=subprocess.DEVNULL)
    # The profile is of the path it names only if the lookup finds its key.
    found = subprocess.run([executable] + COMMANDS[0], env=env, capture_output=True, text=True).stdout
    if found != "value of key 1500\n":
        sys.exit(f"rcagent {' '.join(COMMANDS[0])} answered {found!r}, not the filled value")

    functions, listed = [], set()
    for i, arguments in enumerate(COMMANDS):
        profile = f"{work}/callgrind.{i}"
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}",
                        executable] + arguments, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Callgrind marks a recursive call's cost name'N; names code without a symbol 0x..., and what
        # runs before main "(below main)". Its order varies from run to run (addresses); each
        # command's new functions are sorted by name, so the file changes only when the code does.
        names = {re.sub(r"'\d+$", "", name) for name in executed(profile, executable)}
        new = sorted(name for name in names - listed if not name.startswith("0x") and " " not in name)
        listed.update(new)
        functions += new
    if len(functions) < 100:
        sys.exit(f"only {len(functions)} functions seen: did valgrind run? ({' '.join(COMMANDS[0])})")
    other_names = aliases(executable)
    sections, written = [], set()
    for name in functions:
        for alias in other_names.get(name, [name]):
            # gcc puts the cold part of NAME, the symbol NAME.cold, in the section .text.unlikely.NAME.
            section = f".text.unlikely.{alias[:-5]}" if alias.endswith(".cold") else f".text.{alias}"
            if section not in written:
                written.add(section)
                sections.append(section)
    # The static constructors every start runs: clang names their sections `.text.startup`, gcc (the
    # static libstdc++) `.text.startup.NAME`; without this line gold leaves them among the runtime's code.
    with open(out, "w") as f:
        f.write("\n".join([".text.startup*"] + sections) + "\n")
    print(f"{out}: {len(functions)} functions run by {len(COMMANDS)} commands, {len(sections) + 1} lines")
finally:
    subprocess.run(["rm", "-rf", work])
