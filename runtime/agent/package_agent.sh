#!/usr/bin/env bash
# package_agent.sh AGENT OUT.tar.gz: kiln-agent built for aarch64 and the shared libraries it needs
# beyond glibc (gRPC, protobuf, Abseil, OpenSSL, libstdc++ …, from Debian's arm64 packages), as a
# tarball to copy to a board: kiln-agent/bin/kiln-agent finds them in kiln-agent/lib through its
# RPATH ($ORIGIN/../lib). The board needs glibc 2.36 or newer (Debian 12, Ubuntu 23.04).
set -euo pipefail
agent="$1"
out="$2"
readelf=aarch64-linux-gnu-readelf
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/kiln-agent/bin" "$stage/kiln-agent/lib"
cp "$agent" "$stage/kiln-agent/bin/kiln-agent"
chmod 755 "$stage/kiln-agent/bin/kiln-agent"

# glibc's own libraries stay the board's: they must match its loader.
is_glibc() {
  case "$1" in
    ld-linux-aarch64.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*) return 0 ;;
    *) return 1 ;;
  esac
}

declare -A seen=()
queue=("$stage/kiln-agent/bin/kiln-agent")
while [ ${#queue[@]} -gt 0 ]; do
  file="${queue[0]}"
  queue=("${queue[@]:1}")
  for lib in $("$readelf" -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if is_glibc "$lib" || [ -n "${seen[$lib]:-}" ]; then continue; fi
    seen[$lib]=1
    found=""
    for dir in /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu /usr/aarch64-linux-gnu/lib; do
      if [ -e "$dir/$lib" ]; then found="$dir/$lib"; break; fi
    done
    if [ -z "$found" ]; then
      echo "package_agent: $lib (needed by $(basename "$file")) is not installed for arm64" >&2
      exit 1
    fi
    cp -L "$found" "$stage/kiln-agent/lib/$lib"
    queue+=("$stage/kiln-agent/lib/$lib")
  done
done

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -czf "$out" kiln-agent
