#!/bin/sh
# Assembles the two packages from release binaries (static Swift stdlib) with dpkg-deb:
#   rcagent_VERSION_ARCH.deb   the device: rcagent (one executable, the daemon when called as rcagentd,
#                              a link to it), the units and default config;
#   rcadmin_VERSION_ARCH.deb   the operator host or CI runner: rcadmin and the relay's unit.
# A device never needs the operator tool (nor its service-account code), and an operator host
# never needs the daemon. Prints the two paths, device package first.
# Usage: packaging/build-deb.sh BIN_DIR OUT_DIR [VERSION]
# VERSION defaults to BuildInfo.version; the timestamps come from SOURCE_DATE_EPOCH (default:
# the last commit) so the same inputs give the same packages.
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
mkdir -p "$out"

# install_programs PKG_DIR PROGRAM...: stripped binaries in /usr/bin.
install_programs() {
    dir=$1; shift
    install -d "$dir/usr/bin"
    for program in "$@"; do
        install -m 0755 "$bin/$program" "$dir/usr/bin/$program"
        strip --strip-unneeded --remove-section=.comment --remove-section=.note "$dir/usr/bin/$program"
    done
}

# install_manpages PKG_DIR NAME:SECTION...: made from docs/ (packaging/manpage.sh), the one
# source of the manual.
install_manpages() {
    dir=$1; shift
    for page in "$@"; do
        name=${page%:*} section=${page#*:}
        install -d "$dir/usr/share/man/man$section"
        sh "$root/packaging/manpage.sh" "$root/docs/$name.md" "$version" | gzip -9n \
            > "$dir/usr/share/man/man$section/$name.$section.gz"
        chmod 0644 "$dir/usr/share/man/man$section/$name.$section.gz"
    done
}

# finish_package NAME: copyright, changelog and lintian overrides, then control (Depends from
# what the binaries really link, before the libraries the control template names, which the
# binaries load on first use: dpkg-shlibdeps cannot see those), md5sums, timestamps and the .deb
# (xz at dpkg-deb's default level: -z9 saved 180 bytes of 2.8 MB, -Sextreme lost 2.5 KB; its 8 MiB
# dictionary already spans the one executable); prints its path.
finish_package() {
    name=$1
    dir=$stage/$name
    install -d "$dir/usr/share/doc/$name" "$dir/usr/share/lintian/overrides"
    install -m 0644 "$root/packaging/debian/copyright" "$dir/usr/share/doc/$name/copyright"
    sed -e "s/@VERSION@/$version/" -e "s/@PACKAGE@/$name/" "$root/packaging/debian/changelog.in" | gzip -9n \
        > "$dir/usr/share/doc/$name/changelog.gz"
    chmod 0644 "$dir/usr/share/doc/$name/changelog.gz"
    install -m 0644 "$root/packaging/debian/$name.lintian-overrides" "$dir/usr/share/lintian/overrides/$name"

    mkdir -p "$stage/debian"
    printf 'Source: rcagent\n\nPackage: %s\nArchitecture: any\n' "$name" > "$stage/debian/control"
    executables=$(for program in "$dir"/usr/bin/*; do [ -L "$program" ] || printf ' -e%s' "$program"; done)
    # shellcheck disable=SC2086 # one -e option per program
    depends=$(cd "$stage" && dpkg-shlibdeps -O $executables 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
    [ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies for $name" >&2; exit 1; }
    rm -rf "$stage/debian"
    install -d "$dir/DEBIAN"
    size=$(du -sk --exclude=DEBIAN "$dir" | cut -f1)
    sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
        "$root/packaging/debian/$name.control.in" > "$dir/DEBIAN/control"
    (cd "$dir" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
        > "$dir/DEBIAN/md5sums"
    chmod 0644 "$dir/DEBIAN/control" "$dir/DEBIAN/md5sums"
    [ ! -f "$dir/DEBIAN/conffiles" ] || chmod 0644 "$dir/DEBIAN/conffiles"
    find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    deb="$out/${name}_${version}_${arch}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$deb" >/dev/null
    echo "$deb"
}

# The device package: rcagentd is rcagent called by that name (Package.swift), a relative link.
pkg=$stage/rcagent
install_programs "$pkg" rcagent
ln -s rcagent "$pkg/usr/bin/rcagentd"
install -d "$pkg/usr/libexec/rcagent" "$pkg/lib/systemd/system" "$pkg/usr/lib/sysusers.d" "$pkg/usr/lib/tmpfiles.d" \
    "$pkg/etc/rcagent/hooks.d" "$pkg/etc/rcagent/agent.conf.d" "$pkg/etc/default" "$pkg/usr/share/doc/rcagent"
install -m 0755 "$root/packaging/rcagent-update-check" "$pkg/usr/libexec/rcagent/"
install -m 0644 "$root/packaging/rcagentd.service" "$root/packaging/rcagent-update-check.service" "$pkg/lib/systemd/system/"
install -m 0644 "$root/packaging/sysusers.conf" "$pkg/usr/lib/sysusers.d/rcagent.conf"
install -m 0644 "$root/packaging/tmpfiles.conf" "$pkg/usr/lib/tmpfiles.d/rcagent.conf"
install -m 0644 "$root/etc/rcagent/agent.conf" "$root/etc/rcagent/defaults.json" "$pkg/etc/rcagent/"
install -m 0644 "$root/etc/default/rcagent-update-check" "$pkg/etc/default/"
install -m 0644 "$root/README.md" "$pkg/usr/share/doc/rcagent/README.md"
for page in "$root"/docs/*.md; do
    [ "$(basename "$page")" = rcadmin.md ] || install -m 0644 "$page" "$pkg/usr/share/doc/rcagent/"
done
install_manpages "$pkg" rcagent:1 rcagentd:8 agent.conf:5
install -d "$pkg/DEBIAN"
for script in postinst prerm postrm; do install -m 0755 "$root/packaging/debian/$script" "$pkg/DEBIAN/$script"; done
printf '/etc/rcagent/agent.conf\n/etc/rcagent/defaults.json\n/etc/default/rcagent-update-check\n' \
    > "$pkg/DEBIAN/conffiles"
finish_package rcagent

# The operator package: the relay's unit stays disabled until the operator writes its config.
pkg=$stage/rcadmin
install_programs "$pkg" rcadmin
install -d "$pkg/lib/systemd/system" "$pkg/usr/share/doc/rcadmin/examples"
install -m 0644 "$root/packaging/rcadmin-relay.service" "$pkg/lib/systemd/system/"
install -m 0644 "$root/etc/rcadmin/relay.conf" "$pkg/usr/share/doc/rcadmin/examples/relay.conf"
# Prometheus alert rules (with their promtool unit test) and a Grafana dashboard (fleet.md, "Prometheus").
install -m 0644 "$root/examples/prometheus/rcagent-rules.yml" "$root/examples/prometheus/rcagent-rules.test.yml" \
    "$root/examples/grafana/rcagent-dashboard.json" "$pkg/usr/share/doc/rcadmin/examples/"
install -m 0644 "$root/docs/rcadmin.md" "$root/docs/fleet.md" "$pkg/usr/share/doc/rcadmin/"
install_manpages "$pkg" rcadmin:1
finish_package rcadmin
