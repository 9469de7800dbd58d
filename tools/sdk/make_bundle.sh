#!/usr/bin/env bash
# Assembles the Mantissa SDK bundle (see BUILD) and packs it reproducibly.
#   make_bundle.sh OUT.tar.gz VERSION_HEADER KIND:FILE...
# KIND is where FILE goes inside mantissa_sdk/:
#   abi, sdk -> include/mantissa/plugins/{abi,sdk}/   (so "plugins/abi/mantissa.h"
#               resolves with -I include/mantissa)
#   sdk/model -> include/mantissa/plugins/sdk/model/
#   bin      -> bin/          plugin -> lib/mantissa/plugins/
#   share    -> share/mantissa/   doc -> share/doc/mantissa/
#   example/<dir> -> share/mantissa/examples/<dir>/
#   file/<path> -> <path> exactly (renamed: the bundle's WORKSPACE, BUILD ...)
set -euo pipefail

out="$1"
version_header="$2"
shift 2

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/mantissa_sdk"
mkdir -p "$root"/{bin,include/mantissa/plugins/abi,include/mantissa/plugins/sdk} \
         "$root"/lib/{pkgconfig,mantissa/plugins} "$root"/share/mantissa

for item in "$@"; do
  kind="${item%%:*}"
  file="${item#*:}"
  case "$kind" in
    abi) dest="include/mantissa/plugins/abi" ;;
    sdk) dest="include/mantissa/plugins/sdk" ;;
    sdk/model) dest="include/mantissa/plugins/sdk/model" ;;
    bin) dest="bin" ;;
    plugin) dest="lib/mantissa/plugins" ;;
    share) dest="share/mantissa" ;;
    example/*) dest="share/mantissa/examples/${kind#example/}" ;;
    file/*)
      mkdir -p "$(dirname "$root/${kind#file/}")"
      cp -L "$file" "$root/${kind#file/}"
      continue ;;
    *) echo "make_bundle.sh: unknown kind '$kind' for $file" >&2; exit 1 ;;
  esac
  mkdir -p "$root/$dest"
  cp -L "$file" "$root/$dest/"
done
chmod -R u+w,a+rX "$root"
chmod a+x "$root"/bin/* "$root"/lib/mantissa/plugins/*

major="$(sed -n 's/^#define MNT_ABI_MAJOR \([0-9]*\).*/\1/p' "$version_header")"
minor="$(sed -n 's/^#define MNT_ABI_HEADER_MINOR \([0-9]*\).*/\1/p' "$version_header")"
if [[ -z "$major" || -z "$minor" ]]; then
  echo "make_bundle.sh: no MNT_ABI_MAJOR/MINOR in $version_header" >&2
  exit 1
fi

# pcfiledir keeps the bundle relocatable: unpack it anywhere.
cat > "$root/lib/pkgconfig/mantissa.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include/mantissa
plugindir=\${prefix}/lib/mantissa/plugins
bindir=\${prefix}/bin
abi_major=$major
abi_minor=$minor
plugin_ldflags=-Wl,--no-undefined -Wl,--version-script=\${prefix}/share/mantissa/plugin_exports.lds

Name: mantissa
Description: Mantissa plugin SDK: C ABI headers and the header-only C++ SDK
Version: $major.$minor
Cflags: -I\${includedir}
PC

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -C "$stage" -cf - mantissa_sdk | gzip -n > "$out"
