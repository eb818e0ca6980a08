# Turns each markdown table of a docs page into a definition list, for packaging/manpage.sh: a
# table as troff lays it out does not fit 80 columns (rows split in two, lines hundreds of columns
# wide). Each row becomes one entry: its first cell the term, its other cells the text, each on its
# own line after its column's header ("Default: 30s") when the table has more than two columns.
# Lines inside code fences are left as they are. The docs keep their tables for readers on the web.

# trim(S): S without leading and trailing blanks.
function trim(s) {
    sub(/^[ \t]+/, "", s)
    sub(/[ \t]+$/, "", s)
    return s
}

# cells(LINE, OUT): splits a table row at its unescaped `|` into OUT[1..n], returns n. An escaped
# `\|` (needed even inside code spans in a table) becomes a plain `|`.
function cells(row, out,    n, s, c, i, ch) {
    s = trim(row)
    sub(/^\|/, "", s)
    if (s ~ /\|$/ && s !~ /\\\|$/) s = substr(s, 1, length(s) - 1)
    n = 0
    c = ""
    for (i = 1; i <= length(s); i++) {
        ch = substr(s, i, 1)
        if (ch == "\\" && substr(s, i + 1, 1) == "|") { c = c "|"; i++; continue }
        if (ch == "|") { out[++n] = trim(c); c = ""; continue }
        c = c ch
    }
    out[++n] = trim(c)
    return n
}

# label(HEADER): the header as a label, its first letter upper-cased ("default" -> "Default").
function label(h) {
    return toupper(substr(h, 1, 1)) substr(h, 2)
}

{ line[NR] = $0 }

END {
    fence = ""
    for (i = 1; i <= NR; i++) {
        l = line[i]
        if (fence == "" && match(l, /^[ \t]*(```|~~~)/)) {
            fence = substr(trim(l), 1, 3); print l; continue
        }
        if (fence != "") {
            if (substr(trim(l), 1, 3) == fence) fence = ""
            print l; continue
        }
        if (l ~ /^\|/ && line[i + 1] ~ /^\|[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/) {
            split("", head)
            nh = cells(l, head)
            for (i += 2; i <= NR && line[i] ~ /^\|/; i++) {
                split("", cell)
                nc = cells(line[i], cell)
                body = ""
                for (k = 2; k <= nc; k++) {
                    if (cell[k] == "") continue
                    text = (nh > 2 && head[k] != "") ? label(head[k]) ": " cell[k] : cell[k]
                    body = body == "" ? text : body "  \n" text
                }
                print (cell[1] == "" ? "\\-" : cell[1])
                print ": " (body == "" ? "\\-" : body)
                print ""
            }
            # go-md2man would take a code block right after the list into its last entry: a
            # paragraph of its own ends the list, and manpage.sh drops it.
            for (j = i; j <= NR && trim(line[j]) == ""; j++) ;
            if (line[j] ~ /^[ \t]*(```|~~~)/) print "RCAGENT-MANPAGE-END-OF-LIST\n"
            i--
            continue
        }
        print l
    }
}
