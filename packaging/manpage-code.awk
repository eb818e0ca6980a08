# Breaks the long lines of the code blocks of a docs page, for packaging/manpage.sh: a man page
# sets a code block as it is, 14 columns in, so a line longer than `width` (64: 78 columns at
# MANWIDTH=80) would run off an 80-column terminal. A long line is broken at its last space (or
# after its last comma) that fits, preferring one outside quotes and brackets, and goes on 4
# columns further in (under the first option of a command line, under the first of a line of
# options);
# in a shell block (```sh) a broken line ends in ` \` so the command still reads as one (a word
# too long for a line is broken with a bare `\`), and a trailing `# comment` moves to a line of
# its own above its command. The docs keep their lines.

BEGIN { if (width == "") width = 64 }

# clen(S): the length of S in characters (S is UTF-8).
function clen(s) {
    gsub(/[\200-\277]/, "", s)
    return length(s)
}

# cut(S, LIMIT, SHELL, MIN): where to break S so its first part holds at most LIMIT characters and
# more than MIN bytes, preferring a space outside brackets (a SYNOPSIS line breaks between its
# options): the byte index of a space to drop (kind "space"), of a comma to keep (kind
# "comma"), or, in a shell line with neither, of the last character before a break inside a word
# (kind "word": the shell joins the two parts again); 0 when there is none. A break inside single
# quotes would change a shell command, so a shell line has none there.
function cut(s, limit, shell, min,    i, c, ch, q, prev, sd, so, co, sa, ca, w, depth) {
    c = 0; q = ""; sd = so = co = sa = ca = w = depth = 0; prev = ""
    for (i = 1; i <= length(s); i++) {
        ch = substr(s, i, 1)
        if (ch !~ /[\200-\277]/) c++
        if (i > min && q != "'") {
            if (ch == " " && c - 1 <= limit) { if (q == "") so = i; if (q == "" && !depth) sd = i; sa = i }
            if (ch == "," && c <= limit) { if (q == "") co = i; ca = i }
            if (c <= limit && ch != "\\" && substr(s, i + 1, 1) !~ /[\200-\277]/) w = i
        }
        if (q == "" && ch ~ /[[({]/) depth++
        if (q == "" && ch ~ /[])}]/ && depth) depth--
        if (q == "" && (ch == "\"" || (shell && ch == "'"))) q = ch
        else if (q != "" && ch == q && !(q == "\"" && prev == "\\")) q = ""
        prev = (prev == "\\" && ch == "\\") ? "" : ch
        if (c > limit + 1) break
    }
    kind = "space"
    if (sd) return sd
    if (so) return so
    kind = "comma"
    if (co) return co
    kind = "space"
    if (sa) return sa
    kind = "comma"
    if (ca) return ca
    kind = "word"
    return shell ? w : 0
}

# wrap(S, SHELL): prints S, broken into lines of at most `width` characters where it can be.
function wrap(s, shell,    ind, more, p, limit, rest) {
    match(s, /^[ \t]*/)
    ind = substr(s, 1, RLENGTH)
    more = ind "    "
    # A command line goes on under its first option, a line of options under its own first.
    rest = substr(s, RLENGTH + 1)
    if (match(rest, /^[a-z][a-z.-]*( [A-Za-z][A-Za-z-]*)* [[-]/) && RLENGTH <= 32)
        more = ind sprintf("%" (RLENGTH - 1) "s", "")
    else if (rest ~ /^[[-]/)
        more = ind
    limit = shell ? width - 2 : width
    while (clen(s) > width) {
        match(s, /^[ \t]*/)
        p = cut(s, limit, shell, RLENGTH + 1)
        if (p == 0) break
        tail = shell ? " \\" : ""
        if (kind == "space") { print substr(s, 1, p - 1) tail; s = substr(s, p + 1) }
        else if (kind == "comma") { print substr(s, 1, p) tail; s = substr(s, p + 1) }
        else { print substr(s, 1, p) "\\"; s = substr(s, p + 1); continue }
        sub(/^[ \t]+/, "", s)
        s = more s
    }
    print s
}

{ line = $0 }

fence == "" && match(line, /^[ \t]*(```|~~~)/) {
    indent = RLENGTH - 3
    fence = substr(line, RLENGTH - 2, 3)
    shell = substr(line, RLENGTH + 1) ~ /^(sh|bash|shell|console)[ \t]*$/
    print; next
}
fence != "" && substr(line, indent + 1, 3) == fence { fence = ""; print; next }
fence != "" && clen(line) - indent > width {
    rel = substr(line, indent + 1)
    if (shell && match(rel, /[ \t][ \t]+# [^'"]*$/)) {
        comment = substr(rel, RSTART); sub(/^[ \t]+/, "", comment)
        command = substr(rel, 1, RSTART - 1)
        match(command, /^[ \t]*/)
        print substr(line, 1, indent) substr(command, 1, RLENGTH) comment
        rel = command
    }
    printf "%s", substr(line, 1, indent)
    wrap(rel, shell)
    next
}
{ print }
