#!/usr/bin/env bash
# Set-up of `npm run bench:peers` only (not the main set-up): Debian's Dask distributed and
# Celery with its Redis client, for the system Python (/usr/bin/python3), installed when missing.
set -euo pipefail
PY=/usr/bin/python3
if "$PY" -c 'import distributed, celery, redis' 2>/dev/null; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "bench:peers needs python3-distributed, python3-celery and python3-redis (Debian); run as root or install them: apt-get install python3-distributed python3-celery python3-redis" >&2
  exit 1
fi
echo "bench:peers set-up: installing python3-distributed python3-celery python3-redis (apt-get) ..." >&2
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt/dpkg run on a shared machine instead of failing on its lock.
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends python3-distributed python3-celery python3-redis >/dev/null \
  || { apt-get -o DPkg::Lock::Timeout=600 update >/dev/null && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends python3-distributed python3-celery python3-redis >/dev/null; }
"$PY" -c 'import distributed, celery, redis'
