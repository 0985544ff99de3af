#!/usr/bin/env bash
# Create the project's Python environment (/work/main/.venv, i.e. <repo>/.venv)
# and install plots/requirements.txt into it. Idempotent and quiet: a second run
# that finds every pinned requirement already satisfied does nothing.
#
#   plots/setup_venv.sh            # then: .venv/bin/python plots/plot_all.py RESULTS_DIR
#   PYTHON=python3.12 plots/setup_venv.sh   # choose the interpreter that builds the venv
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$repo/.venv"
req="$here/requirements.txt"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup_venv: creating $venv with $($python --version 2>&1)"
  "$python" -m venv "$venv"
fi

# Already satisfied? Ask the venv's own pip (offline, no network) to check each pin.
if "$venv/bin/python" - "$req" <<'PY'
import sys
from importlib import metadata
ok = True
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, want = line.partition("==")
    try:
        have = metadata.version(name.strip())
    except metadata.PackageNotFoundError:
        ok = False
        break
    if want and have != want.strip():
        ok = False
        break
sys.exit(0 if ok else 1)
PY
then
  exit 0
fi

echo "setup_venv: installing $(basename "$req") into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
