#!/bin/sh
# Checks the man pages as a reader sees them in an 80-column terminal: makes each page of docs/
# that starts with `# name(N)` (packaging/manpage.sh), renders it with `man` at MANWIDTH=80, and
# fails on any troff warning and on any rendered line wider than 80 columns, naming the page and
# the line. Prints one line per page: its warnings and its longest line. Needs go-md2man and man-db.
# Usage: packaging/manpage-check.sh [DOC.md...] (default: every such page of docs/)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Widths are counted in characters, not bytes: the pages hold UTF-8 (→, …, —).
export LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_FORMATTING= MANPAGER=cat PAGER=cat
[ $# -gt 0 ] || set -- "$root"/docs/*.md
status=0
pages=0
for doc in "$@"; do
    head -n 1 "$doc" | grep -q '^# .*([0-9])$' || continue
    pages=$((pages + 1))
    page=$(basename "$doc" .md)
    sh "$root/packaging/manpage.sh" "$doc" 0 > "$work/$page.man"
    man --warnings -l "$work/$page.man" > "$work/$page.txt" 2> "$work/$page.err" || {
        echo "manpage-check: $page: man failed:" >&2; cat "$work/$page.err" >&2; status=1; continue
    }
    warnings=$(grep -c warning "$work/$page.err" || true)
    longest=$(wc -L < "$work/$page.txt")
    echo "$page: $warnings troff warnings, longest line $longest columns"
    if [ -s "$work/$page.err" ]; then
        echo "manpage-check: $page: troff warnings:" >&2; cat "$work/$page.err" >&2; status=1
    fi
    if [ "$longest" -gt 80 ]; then
        echo "manpage-check: $page: lines over 80 columns (line: text):" >&2
        grep -n '.\{81,\}' "$work/$page.txt" >&2; status=1
    fi
done
[ $pages -gt 0 ] || { echo "manpage-check: no page starts with '# name(N)'" >&2; exit 1; }
exit $status
