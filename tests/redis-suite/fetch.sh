#!/usr/bin/env bash
# Fetches Redis's source, tests/ included, from Debian's archive: the source package `redis` of the
# installed redis-server's version (the oracle and its own tests must be the same release), into
# CACHE (default /var/cache/kvlab-redis-src), unpacked with Debian's patches as CACHE/src. Once:
# nothing is done when CACHE/src is there. Nothing goes into the clone.
#   tests/redis-suite/fetch.sh [CACHE]
# As root it adds a deb-src entry for Debian's own archive when apt has none (Debian 12 images
# ship none) and installs dpkg-dev (dpkg-source); otherwise it prints what to run and exits 1.
set -euo pipefail
cache="${1:-/var/cache/kvlab-redis-src}"
[ -f "$cache/src/tests/test_helper.tcl" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "fetch.sh: run as root (it may add a deb-src entry and install dpkg-dev): sudo $0 $cache" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
version="$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || true)"
spec="redis${version:+=$version}"

# A deb-src entry for the release's own archive, only if apt cannot find the source package yet.
if ! apt-get source --print-uris -qq "$spec" >/dev/null 2>&1; then
  . /etc/os-release
  if [ ! -f /etc/apt/sources.list.d/kvlab-src.sources ]; then
    cat >/etc/apt/sources.list.d/kvlab-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME} ${VERSION_CODENAME}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: ${VERSION_CODENAME}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  apt-get update -qq
fi
command -v dpkg-source >/dev/null || apt-get install -y -qq --no-install-recommends dpkg-dev

mkdir -p "$cache"
work="$(mktemp -d "$cache/fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
# The archive may have moved past the installed version (a newer security update): then the
# newest source, with a warning, since its tests may expect behaviour the installed binary lacks.
if ! apt-get source --download-only -qq "$spec" 2>/dev/null; then
  echo "fetch.sh: source of redis $version not in the archive; fetching the newest" >&2
  apt-get source --download-only -qq redis
fi
# apt checked the files against the archive's signed index; dpkg-source's own signature check
# needs debian-keyring and only warns without it, so its output is shown on failure only.
if ! out="$(dpkg-source -x redis_*.dsc src 2>&1)"; then
  echo "$out" >&2
  exit 1
fi
mv -f redis_* "$cache"/
mv src "$cache/src"
echo "fetch.sh: Redis $(sed -n 's/^#define REDIS_VERSION "\(.*\)"/\1/p' "$cache/src/src/version.h") source in $cache/src"
