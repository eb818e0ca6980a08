#!/bin/sh
# Assembles rcagent_VERSION_ARCH.deb from release binaries (static Swift stdlib) with dpkg-deb.
# Usage: packaging/build-deb.sh BIN_DIR OUT_DIR [VERSION]
# VERSION defaults to BuildInfo.version; the timestamps come from SOURCE_DATE_EPOCH (default:
# the last commit) so the same inputs give the same package.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$1
out=$2
version=${3:-$(sed -n 's/.*version = "\(.*\)".*/\1/p' "$root/Sources/RCCore/BuildInfo.swift")}
arch=$(dpkg --print-architecture)
: "${SOURCE_DATE_EPOCH:=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/rcagent
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/libexec/rcagent" "$pkg/lib/systemd/system" \
    "$pkg/usr/lib/sysusers.d" "$pkg/usr/lib/tmpfiles.d" "$pkg/etc/rcagent/hooks.d" "$pkg/etc/rcagent/agent.conf.d" \
    "$pkg/usr/share/doc/rcagent" "$pkg/usr/share/man/man1" "$pkg/usr/share/man/man5" \
    "$pkg/usr/share/man/man8"

for program in rcagent rcagentd rcadmin; do
    install -m 0755 "$bin/$program" "$pkg/usr/bin/$program"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg/usr/bin/$program"
done
install -m 0755 "$root/packaging/rcagent-update-check" "$pkg/usr/libexec/rcagent/"
install -m 0644 "$root/packaging/rcagentd.service" "$root/packaging/rcagent-update-check.service" "$pkg/lib/systemd/system/"
install -m 0644 "$root/packaging/sysusers.conf" "$pkg/usr/lib/sysusers.d/rcagent.conf"
install -m 0644 "$root/packaging/tmpfiles.conf" "$pkg/usr/lib/tmpfiles.d/rcagent.conf"
install -m 0644 "$root/etc/rcagent/agent.conf" "$root/etc/rcagent/defaults.json" "$pkg/etc/rcagent/"
install -m 0644 "$root/packaging/debian/copyright" "$pkg/usr/share/doc/rcagent/copyright"
install -d "$pkg/usr/share/lintian/overrides"
install -m 0644 "$root/packaging/debian/lintian-overrides" "$pkg/usr/share/lintian/overrides/rcagent"
install -m 0644 "$root/README.md" "$pkg/usr/share/doc/rcagent/README.md"
for page in "$root"/docs/*.md; do install -m 0644 "$page" "$pkg/usr/share/doc/rcagent/"; done
sed "s/@VERSION@/$version/" "$root/packaging/debian/changelog.in" | gzip -9n > "$pkg/usr/share/doc/rcagent/changelog.gz"
# The man pages are made from docs/ (packaging/manpage.sh), the one source of the manual.
for page in rcagent:1 rcagentd:8 agent.conf:5 rcadmin:1; do
    name=${page%:*} section=${page#*:}
    sh "$root/packaging/manpage.sh" "$root/docs/$name.md" "$version" | gzip -9n \
        > "$pkg/usr/share/man/man$section/$name.$section.gz"
done
chmod 0644 "$pkg"/usr/share/doc/rcagent/*.gz "$pkg"/usr/share/man/man*/*.gz

for script in postinst prerm postrm; do install -m 0755 "$root/packaging/debian/$script" "$pkg/DEBIAN/$script"; done
printf '/etc/rcagent/agent.conf\n/etc/rcagent/defaults.json\n' > "$pkg/DEBIAN/conffiles"

# Runtime dependencies from what the binaries really link.
mkdir -p "$stage/debian"
printf 'Source: rcagent\n\nPackage: rcagent\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O "-e$pkg/usr/bin/rcagent" "-e$pkg/usr/bin/rcagentd" "-e$pkg/usr/bin/rcadmin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
rm -rf "$stage/debian"
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
    "$root/packaging/debian/control.in" > "$pkg/DEBIAN/control"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/conffiles" "$pkg/DEBIAN/md5sums"
find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb="$out/rcagent_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
