#!/bin/bash
# Makes the Debian package from a built binary, with the Debian tools: dpkg-shlibdeps (Depends),
# dpkg-gencontrol (the control file) and dpkg-deb. `make deb` runs it; it builds nothing itself.
#
#   build-deb.sh BINARY DRIVER MANPAGE WORKDIR OUTDIR
#
# BINARY is ykterm linked against Debian's shared libraries (`make release-shared`), DRIVER the one-slot reader
# driver (libykterm-ifd-one-slot.so), MANPAGE ykterm.1 with the version on its .TH line. The environment gives
# VERSION, YKTERM_COMMIT (may be empty) and SOURCE_DATE_EPOCH (the commit's time: every date and file time in the
# package). Writes OUTDIR/ykterm_VERSION_ARCH.deb and prints its path; WORKDIR (emptied first) keeps the tree it
# was made from.
#
# Reproducible: the same inputs give the same bytes. Every file gets the time SOURCE_DATE_EPOCH and a fixed mode,
# root owns everything (dpkg-deb --root-owner-group, no fakeroot), gzip leaves out names and times (-n), and
# dpkg-deb sorts the tree and dates its ar members from SOURCE_DATE_EPOCH.
set -euo pipefail

binary=$1 driver=$2 manpage=$3 work=$4 outdir=$5
: "${VERSION:?}" "${SOURCE_DATE_EPOCH:?}"
commit=${YKTERM_COMMIT:-}
here=$(cd "$(dirname "$0")" && pwd)
root_dir=$(cd "$here/../.." && pwd)
export SOURCE_DATE_EPOCH LC_ALL=C TZ=UTC
umask 022

arch=$(dpkg --print-architecture)
src=$work/src          # what dpkg-shlibdeps and dpkg-gencontrol read: debian/control, debian/changelog
pkg=$src/debian/ykterm # the package's tree
rm -rf "$work"
mkdir -p "$pkg/DEBIAN"

# The binary and the driver, stripped as dh_strip strips them (no symbol table, no .comment or .note).
# Then without the Swift compiler's module hashes, which differ from one build to the next (reproducible-elf.py).
install -D -m 755 "$binary" "$pkg/usr/bin/ykterm"
strip --remove-section=.comment --remove-section=.note "$pkg/usr/bin/ykterm"
"$here/reproducible-elf.py" "$pkg/usr/bin/ykterm"
# Where ykterm looks for it (../lib/ykterm beside its bin): pcscd loads it from the reader.conf entry that
# `virtual-key serve --usb` writes for its private pcscd, not from pcscd's own driver folders.
install -D -m 644 "$driver" "$pkg/usr/lib/ykterm/libykterm-ifd-one-slot.so"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$pkg/usr/lib/ykterm/libykterm-ifd-one-slot.so"

# The man page, compressed as dh_compress does.
install -d "$pkg/usr/share/man/man1"
gzip -9n < "$manpage" > "$pkg/usr/share/man/man1/ykterm.1.gz"

# Completions, from the binary itself (ArgumentParser writes them), where Debian's shells look for them.
install -d "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" \
  "$pkg/usr/share/fish/vendor_completions.d"
# ArgumentParser starts the bash script with #!/bin/bash; a completion is sourced, never run (lintian:
# bash-completion-with-hashbang).
"$pkg/usr/bin/ykterm" --generate-completion-script bash | sed '1{/^#!/d}' \
  > "$pkg/usr/share/bash-completion/completions/ykterm"
"$pkg/usr/bin/ykterm" --generate-completion-script zsh > "$pkg/usr/share/zsh/vendor-completions/_ykterm"
"$pkg/usr/bin/ykterm" --generate-completion-script fish > "$pkg/usr/share/fish/vendor_completions.d/ykterm.fish"

# udev: the seat rule in force; the group rule (for SSH sessions) beside the string tables, where `ykterm doctor`
# finds it and shows how to put it in place — a choice, never active by default.
install -D -m 644 "$root_dir/Resources/udev/70-ykterm-fido.rules" "$pkg/usr/lib/udev/rules.d/70-ykterm-fido.rules"
install -D -m 644 "$root_dir/Resources/udev/70-ykterm-fido-group.rules" \
  "$pkg/usr/share/ykterm/udev/70-ykterm-fido-group.rules"

# The string tables, where the binary looks for them (../share/ykterm/strings beside its bin).
install -d "$pkg/usr/share/ykterm/strings"
install -m 644 "$root_dir"/Resources/strings/*.json "$pkg/usr/share/ykterm/strings/"

# Documentation: copyright (machine-readable), the changelog, README.Debian, README, the example config.
doc=$pkg/usr/share/doc/ykterm
install -d "$doc/examples"
install -m 644 "$here/copyright" "$doc/copyright"
install -m 644 "$here/README.Debian" "$doc/README.Debian"
gzip -9n < "$root_dir/README.md" > "$doc/README.md.gz"
install -m 644 "$root_dir/Resources/config.example.toml" "$doc/examples/config.toml"
# lintian's warnings kept, each with its reason.
if [ -s "$here/lintian-overrides" ]; then
  install -D -m 644 "$here/lintian-overrides" "$pkg/usr/share/lintian/overrides/ykterm"
fi

# The changelog: one entry for this version, dated by the commit. The package is native (its version has no
# Debian revision: ykterm is packaged where it is written), so policy 12.7 names the file changelog.gz.
maintainer=$(sed -n 's/^Maintainer: //p' "$here/control")
{
  echo "ykterm ($VERSION) unstable; urgency=medium"
  echo
  echo "  * ykterm $VERSION${commit:+, built from commit $commit}."
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} > "$src/debian/changelog"
gzip -9n < "$src/debian/changelog" > "$doc/changelog.gz"
cp "$here/control" "$src/debian/control"

# Maintainer scripts (the udev reload) and the checksums of every file.
install -m 755 "$here/postinst" "$here/postrm" "$pkg/DEBIAN/"
(cd "$pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 644 "$pkg/DEBIAN/md5sums"

# Depends from the libraries the binary and the driver need (control adds libqrencode4 and libzbar0, which ykterm
# loads with dlopen to draw and read QR codes, where dpkg-shlibdeps cannot see them); then the control file,
# Installed-Size included.
(cd "$src" && dpkg-shlibdeps -Tdebian/ykterm.substvars debian/ykterm/usr/bin/ykterm \
  debian/ykterm/usr/lib/ykterm/libykterm-ifd-one-slot.so)
(cd "$src" && dpkg-gencontrol -pykterm -v"$VERSION" -Tdebian/ykterm.substvars -Pdebian/ykterm)

# Fixed modes and times; then the package.
find "$pkg" -type d -exec chmod 755 {} +
find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$outdir"
deb=$outdir/ykterm_${VERSION}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
