#!/usr/bin/env bash
# Binary and package sizes: the release binaries as built (static Swift stdlib, no debug info) and
# stripped the way packaging/build-deb.sh strips them, and the device .deb (rcagent; the operator
# tool is in a package of its own since issue 17): its size and its Installed-Size, with the targets
# of issue 20 (<= 6 MB and <= 16 MB). Since issue 20 rcagentd is a link to rcagent (one executable):
# reported as such, with no bytes of its own; an older BIN_DIR with two executables reports both. The packages are built from BIN_DIR
# into a temporary directory with packaging/build-deb.sh (a few seconds; the checkout's own .debs
# are left alone), unless RCBENCH_DEB names an existing device .deb to read.
# Usage: bench/sizes.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: bench/sizes.sh BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

figures=()
for program in rcagent rcagentd rcadmin; do
    if [ -L "$bin/$program" ]; then
        echo "$program: a link to $(readlink "$bin/$program"), no bytes of its own"
        figures+=("{\"id\": \"size.$program\", \"figure\": \"$program binary (a link to $(readlink "$bin/$program"))\", \"value\": 0,
      \"unit\": \"MB\", \"target\": null}")
        continue
    fi
    built=$(stat -c %s "$bin/$program")
    cp "$bin/$program" "$work/$program"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$work/$program"
    stripped=$(stat -c %s "$work/$program")
    echo "$program: $built bytes as built, $stripped stripped as packaged"
    figures+=("{\"id\": \"size.$program\", \"figure\": \"$program binary, stripped as packaged\", \"value\": $(awk "BEGIN { printf \"%.2f\", $stripped / 1000000 }"),
      \"unit\": \"MB\", \"target\": null, \"peers\": {\"stripped_bytes\": $stripped, \"built_bytes\": $built}}")
done
if [ -n "${RCBENCH_DEB:-}" ]; then
    deb=$RCBENCH_DEB
    how="read from $deb"
else
    deb=$("$root/packaging/build-deb.sh" "$bin" "$work/deb" | sed -n 1p)
    how="built by bench/sizes.sh from $bin with packaging/build-deb.sh"
fi
deb_bytes=$(stat -c %s "$deb")
installed_kib=$(dpkg-deb -f "$deb" Installed-Size)
echo "$(basename "$deb"): $deb_bytes bytes, Installed-Size $installed_kib KiB = $(awk "BEGIN { printf \"%.2f\", $installed_kib * 1024 / 1000000 }") MB ($how)"
figures+=("{\"id\": \"size.deb\", \"figure\": \"$(basename "$deb")\", \"value\": $(awk "BEGIN { printf \"%.2f\", $deb_bytes / 1000000 }"),
  \"unit\": \"MB\", \"target\": {\"op\": \"<=\", \"value\": 6}, \"peers\": {\"bytes\": $deb_bytes, \"installed_kib\": $installed_kib}, \"note\": \"$how\"}")
# Installed-Size is in KiB (dpkg's du -sk); the target is in MB of 10^6 bytes.
figures+=("{\"id\": \"size.installed\", \"figure\": \"  installed (Installed-Size)\", \"value\": $(awk "BEGIN { printf \"%.2f\", $installed_kib * 1024 / 1000000 }"),
  \"unit\": \"MB\", \"target\": {\"op\": \"<=\", \"value\": 16}, \"peers\": {\"installed_kib\": $installed_kib}}")
if [ -n "${RCBENCH_OUT:-}" ]; then
    (IFS=,; echo "[${figures[*]}]") | jq . > "$RCBENCH_OUT/sizes.json"
fi
