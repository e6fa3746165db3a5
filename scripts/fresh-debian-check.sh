#!/usr/bin/env bash
# README's first command on a fresh Debian: a minimal Debian 12 (debootstrap --variant=minbase: no
# Redis, Python, Docker, git or CA certificates) with this machine's Node 20 copied in, a clone of
# this checkout, then `npm run demo` in a chroot as a new user of the machine would run it. Prints
# the demo's output and its time; removes everything it made (the chroot, its mounts, the stack the
# demo left running). Root only; needs debootstrap (installed when missing) and Debian's mirror.
# Usage: scripts/fresh-debian-check.sh [mirror]   (default http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "fresh-debian-check: run as root (debootstrap, chroot)" >&2; exit 2; }
MIRROR=${1:-http://deb.debian.org/debian}
ROOT=$(mktemp -d /tmp/jupiter-fresh-XXXXXX)
inside() { chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
  ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/ssl/certs/extra-ca.crt} bash -c "$1"; }
cleanup() {
  [ -d "$ROOT/root/jupiter" ] && inside 'cd /root/jupiter && [ -x /usr/local/bin/jupiter ] && jupiter teardown dummy --stack' >/dev/null 2>&1 || true
  for m in dev/pts dev sys proc; do mountpoint -q "$ROOT/$m" && umount "$ROOT/$m"; done
  rm -rf "$ROOT"
}
trap cleanup EXIT
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
t0=$SECONDS
echo "fresh-debian-check: debootstrap bookworm (minbase) into $ROOT …"
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >/dev/null
echo "fresh-debian-check:   done ($((SECONDS - t0)) s)"
node=$(command -v node)
npmdir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
mkdir -p "$ROOT/usr/lib/node_modules"
cp "$node" "$ROOT/usr/bin/node"
cp -a "$npmdir" "$ROOT/usr/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/bin/npx"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# A network that inspects TLS (a proxy with its own CA, named by NODE_EXTRA_CA_CERTS) reaches the
# npm registry from the chroot only with that CA; a machine on the open internet needs nothing.
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ]; then mkdir -p "$ROOT/etc/ssl/certs"; cp "$NODE_EXTRA_CA_CERTS" "$ROOT/etc/ssl/certs/extra-ca.crt"; fi
git clone -q . "$ROOT/root/jupiter"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$ROOT/$m"; done
echo "fresh-debian-check: node $("$node" -v) copied in; running \`npm run demo\` in a clone …"
t1=$SECONDS
inside 'cd /root/jupiter && npm run demo'
echo "fresh-debian-check: npm run demo ended with exit 0 after $((SECONDS - t1)) s on a fresh Debian 12"
