#!/bin/sh
# Makes a man page from a page of docs/: `manpage.sh docs/rcagent.md VERSION > rcagent.1`. The docs
# are the one source of the manual (the README points at them), so the man pages cannot drift from
# them. The page's first line, `# name(N)`, becomes the man header; links between the pages become
# their plain text, since a man page has no link to follow; tables become definition lists
# (manpage-tables.awk), since a table does not fit 80 columns, and the long lines of code blocks are broken
# (manpage-code.awk). Needs go-md2man (Debian package).
set -eu
here=$(dirname "$0")
doc=$1
version=$2
title=$(sed -n '1s/^# \(.*\)(\([0-9]\))$/\1 \2/p' "$doc")
[ -n "$title" ] || { echo "manpage.sh: $doc does not start with '# name(N)'" >&2; exit 1; }
name=${title% *}
section=${title#* }
case $section in
    1) manual="User Commands" ;;
    5) manual="File Formats" ;;
    8) manual="System Administration" ;;
    *) manual="rcagent" ;;
esac
# The date is the version's, not the build's, so the same sources make the same page.
{
    printf '%% %s %s "" "rcagent %s" "%s"\n' "$(echo "$name" | tr '[:lower:]' '[:upper:]')" "$section" "$version" "$manual"
    tail -n +2 "$doc" | sed -E 's/\[([^]]*)\]\([^)]*\)/\1/g' |
        awk -f "$here/manpage-tables.awk" | awk -f "$here/manpage-code.awk"
} | go-md2man | awk '
    # NAME as whatis(1) and lintian read it: one line, "name \- what it is", no fonts.
    /^\.SH NAME$/ { print; name = 1; next }
    name && /^\.PP$/ { next }
    name {
        gsub(/\\f[BCIRP]/, ""); sub(/ — /, " \\- "); print; name = 0; next
    }
    # The paragraph manpage-tables.awk puts between a list and a code block.
    held != "" && $0 == "RCAGENT-MANPAGE-END-OF-LIST" { held = ""; next }
    held != "" { print held; held = "" }
    /^\.PP$/ { held = $0; next }
    # Code blocks are set as they are; in running text a comma with no space after it (in JSON
    # shown inline) is a place to break a word too long for a line.
    /^\.nf$/ { nf = 1 } /^\.fi$/ { nf = 0 }
    !nf && !/^\./ { gsub(/,/, ",\\:") }
    # Left-aligned text, as most man pages are: a line holding a long code span cannot be
    # stretched to the right margin, and troff warns about each one.
    /^\.TH / { print; print ".ad l"; next }
    # A text line that begins with a dot or a quote would be read as a request.
    /^\.[^A-Za-z]/ || /^\x27/ { print "\\&" $0; next }
    { print }
    END { if (held != "") print held }'

