#!/usr/bin/env python3
"""Writes a clean-room recording without its slot ids, as a recycle log
that names no worker gives it (docs/calibration.md, "Rows without ids,
fed first or the latest idle"):

    python3 tools/truth/drop_ids.py SRC.csv DST.csv                 # no instance, no worker
    python3 tools/truth/drop_ids.py SRC.csv DST.csv --keep-instance # the instance, no worker

The truth file beside SRC (SRC.truth.json) is copied beside DST, so that
tools/truth/cleanroom_table.py reads it."""
import argparse, csv, os, shutil
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--keep-instance", action="store_true")
a = ap.parse_args()
cols = ["ts"] + (["instance"] if a.keep_instance else []) + ["rss_mb", "limit_mb", "requests"]
with open(a.src, newline="") as f, open(a.dst, "w", newline="") as g:
    w = csv.writer(g)
    w.writerow(cols)
    for row in csv.DictReader(f):
        w.writerow([row[c] for c in cols])
truth = a.src[:-4] + ".truth.json"
if os.path.exists(truth):
    shutil.copy(truth, a.dst[:-4] + ".truth.json")
