#!/bin/sh
# A root directory for chroot(8) that stands for a device where only some libraries are installed:
# PROGRAM as /usr/bin/rcagent with the link /usr/bin/rcagentd to it, the libraries the loader needs to
# start it (ldd), and the libraries named by SONAME (each with what it needs), found as this machine
# finds them (ldconfig -p) and copied to the same paths. Nothing else: no /etc/ld.so.cache, so a
# library not copied is not there for dlopen either. Also /tmp and /dev/null.
# Usage: Tests/Fixtures/clean_root.sh ROOT PROGRAM [SONAME...]
set -eu
root=$1
program=$2
shift 2
mkdir -p "$root/usr/bin" "$root/tmp" "$root/dev" "$root/etc"
chmod 1777 "$root/tmp"
cp "$program" "$root/usr/bin/rcagent"
ln -sf rcagent "$root/usr/bin/rcagentd"
[ -e "$root/dev/null" ] || mknod -m 0666 "$root/dev/null" c 1 3
files=$program
for soname in "$@"; do
    path=$(ldconfig -p | awk -v name="$soname" '$1 == name && /x86-64|aarch64|64bit/ { print $NF; exit }')
    [ -n "$path" ] || path=$(ldconfig -p | awk -v name="$soname" '$1 == name { print $NF; exit }')
    [ -n "$path" ] || { echo "clean_root.sh: $soname is not installed here" >&2; exit 1; }
    files="$files $path"
done
for file in $files; do
    [ "$file" = "$program" ] || echo "$file"
    # "name => /path (address)" and the loader's own "/path (address)".
    ldd "$file" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u | while read -r library; do
    cp -L --parents "$library" "$root"
done
