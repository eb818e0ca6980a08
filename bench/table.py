#!/usr/bin/env python3
"""Prints the figures of one or more bench/run.py result files (default bench/results.json) as the
markdown table at the top of BENCHMARKS.md: figure, script, measured, target, verdict, then the
commit, date and load of each run. `make bench` runs the fleet last; a run of part of the scripts
(`bench/run.py BIN fleet`) writes a file of its own that can be passed beside the main one: a
figure in a later file takes the place of the same figure (its id) in an earlier one.

Usage: bench/table.py [RESULTS.json ...]
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures import show

here = os.path.dirname(os.path.abspath(__file__))


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


paths = sys.argv[1:] or [os.path.join(here, "results.json")]
print("| figure | script | measured | target | verdict |")
print("|---|---|---|---|---|")
runs = []
rows = {}  # by id, in the order first seen; a later file's figure takes an earlier one's place
for path in paths:
    with open(path) as f:
        results = json.load(f)
    machine = results["machine"]
    runs.append(f"{machine['commit']}{' (dirty)' if machine.get('dirty') else ''}, {results['date']}, "
                f"load {machine['load_average_at_start'][0]:.1f} at start and "
                f"{machine['load_average_at_end'][0]:.1f} at the end"
                + (f", failed: {', '.join(results['failed'])}" if results["failed"] else ""))
    for figure in results["figures"]:
        rows[figure.get("id") or figure["figure"]] = figure
for figure in rows.values():
    unit = figure.get("unit", "")
    target = figure.get("target")
    goal = f"{target['op']} {show(target['value'], unit)}" if target else figure.get("target_text", "-")
    verdict = figure["verdict"]
    print(f"| {cell(figure['figure'])} | `{figure['script'].removeprefix('bench/')}` | "
          f"{cell(show(figure.get('value'), unit))} | {cell(goal)} | "
          f"{'**' + verdict + '**' if verdict == 'missed' else verdict} |")
print()
for run in runs:
    print(f"Run: {run}.")
