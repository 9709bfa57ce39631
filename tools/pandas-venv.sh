#!/bin/sh
# Prints the path of a Python with pandas, making it on first use: a venv in
# target/pandas-venv (or $FLEETSIM_PANDAS_VENV) with pandas pip-installed
# from PyPI. tests/typed_outputs.rs runs it; CI gets the venv the same way.
set -eu
cd "$(dirname "$0")/.."
venv="${FLEETSIM_PANDAS_VENV:-target/pandas-venv}"
py="$venv/bin/python"
if ! "$py" -c "import pandas" >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check pandas >&2
fi
"$py" -c "import pandas" >&2
echo "$py"
