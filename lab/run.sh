#!/usr/bin/env bash
# The lab's one command: installs what is missing, then starts the lab,
# records a window and stops everything it started (lab/lab.py).
#
#   lab/run.sh record --seconds 300 --seed 1 --policy lab/policies/recorded.toml --out DIR
#   lab/run.sh install            # only install
#
# Installs: a venv at lab/.venv (or $LAB_VENV) with gunicorn, uvicorn, fastapi,
# redis from PyPI (versions pinned in lab/requirements.txt); lab/client/node_modules
# by `npm ci` (package-lock.json); redis-server by apt-get when it is missing.
set -euo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${LAB_VENV:-$LAB/.venv}"
export LAB_VENV="$VENV"

install() {
  if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "lab: installing redis-server (apt-get)" >&2
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
      echo "lab: error: redis-server is missing (apt-get install redis-server)" >&2; exit 2
    fi
  fi
  command -v node >/dev/null 2>&1 || { echo "lab: error: node is missing (Node 20)" >&2; exit 2; }
  command -v python3 >/dev/null 2>&1 || { echo "lab: error: python3 is missing" >&2; exit 2; }
  if [ ! -x "$VENV/bin/gunicorn" ] || ! "$VENV/bin/python" -c 'import fastapi, uvicorn, redis' 2>/dev/null; then
    echo "lab: installing the Python packages into $VENV (pip)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$LAB/requirements.txt"
  fi
  if [ ! -d "$LAB/client/node_modules/undici" ]; then
    echo "lab: installing the client (npm ci)" >&2
    (cd "$LAB/client" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
}

cmd="${1:-}"
case "$cmd" in
  install) install ;;
  record) install; shift; exec "$VENV/bin/python" "$LAB/lab.py" record "$@" ;;
  *) echo "usage: lab/run.sh record --seconds N --seed S [--policy P.toml] --out DIR | lab/run.sh install" >&2; exit 2 ;;
esac
