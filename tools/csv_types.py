"""Checks that fleetsim's sweep tables load into pandas as typed tables.

usage: csv_types.py FILE.csv --numeric COL[,COL...] [--seed] [--base]

Exits 1, naming the file and the column, when: a column name repeats (in
the raw header: pandas would rename the second `seed` to `seed.1`), a
column named by --numeric is not of a numeric dtype, `is_base` is not a
boolean column (with --base: with a true row), a base row has a value in
a parameter column, or, with --seed, `seed` is not an integer
column equal to the file's text digit for digit (no f64 rounding).
"""

import csv
import sys

import pandas as pd
from pandas.api import types


def fail(path, msg):
    print(f"{path}: {msg}", file=sys.stderr)
    sys.exit(1)


def main(argv):
    path = argv[1]
    numeric = []
    check_seed = False
    need_base = False
    i = 2
    while i < len(argv):
        if argv[i] == "--numeric":
            numeric = [c for c in argv[i + 1].split(",") if c]
            i += 2
        elif argv[i] == "--base":
            need_base = True
            i += 1
        elif argv[i] == "--seed":
            check_seed = True
            i += 1
        else:
            fail(path, f"unknown argument {argv[i]}")
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    dups = sorted({h for h in header if header.count(h) > 1})
    if dups:
        fail(path, f"repeated column names {dups}")
    df = pd.read_csv(path)
    if list(df.columns) != header:
        fail(path, f"pandas renamed columns: {list(df.columns)}")
    for col in numeric:
        if col not in df.columns:
            fail(path, f"no column `{col}`")
        if not types.is_numeric_dtype(df[col]) or types.is_bool_dtype(df[col]):
            fail(path, f"column `{col}` loads as {df[col].dtype}, not a number")
    if "is_base" not in df.columns:
        fail(path, "no `is_base` column")
    if not types.is_bool_dtype(df["is_base"]):
        fail(path, f"`is_base` loads as {df['is_base'].dtype}, not bool")
    if need_base and df["is_base"].sum() < 1:
        fail(path, "no base row")
    base = df[df["is_base"]]
    for col in numeric:
        if base[col].notna().any():
            fail(path, f"the base row has a value in parameter column `{col}`")
    if check_seed:
        if not types.is_integer_dtype(df["seed"]):
            fail(path, f"`seed` loads as {df['seed'].dtype}, not an integer")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for k, (row, val) in enumerate(zip(rows, df["seed"])):
            if str(int(val)) != row["seed"]:
                fail(path, f"row {k + 2}: seed {row['seed']} loads as {val}")
    print(f"{path}: {len(df)} rows, {len(df.columns)} columns, typed")


if __name__ == "__main__":
    main(sys.argv)
