#!/usr/bin/env python3
"""Where a kernel's time goes, by source line.

Joins Nsight Compute's per-instruction counts of one kernel launch with the line table of
the same kernel's machine code, and prints the source lines that take the most warp stall
samples and the most executed instructions.

Inputs (on a machine with the GPU and the CUDA tools):

1. Run the program with GPUDS_LINEINFO=1, so that gpuds compiles every kernel with
   `-lineinfo` (the machine code is the same; the image carries a line table). Profile it
   with the source counters and export a report, e.g.

       GPUDS_LINEINFO=1 ncu -k regex:hive_insert_queued_u64_u64 -c 1 \\
           --section SourceCounters --export q gpuds-bench hive --key u64 --value u64

   then print the report's source page as CSV:

       ncu -i q.ncu-rep --page source --csv --print-source sass > q.csv

2. Disassemble the kernel's image with its line table: `nvdisasm -g -c IMAGE > q.sass`.
   The images are in gpuds's kernel cache (GPUDS_CACHE_DIR, by default
   $XDG_CACHE_HOME/gpuds/kernels or ~/.cache/gpuds/kernels); the one to take has
   `.text.KERNEL:` in its listing and `//## File` lines in that section (the same kernel
   compiled without GPUDS_LINEINFO has none). An image compiled elsewhere by the same
   NVRTC version from the same sources and defines has the same code.

Usage: scripts/sass-lines.py KERNEL CSV SASS [--top N] [--launch I]

CSV and SASS may be gzip files. With several launches of KERNEL in the CSV, the one with
the most executed instructions is used (--launch picks another, 0 the first). Exits 1 when
the kernel is not in either file, the listing has no line table, or the two disagree on
the kernel's instructions (the listing is of other code).
"""

import argparse
import collections
import csv
import gzip
import re
import sys


def open_text(path):
    return gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")


def line_table(path, kernel):
    """Offset -> ((file, line), opcode) for the kernel's instructions in an nvdisasm -g listing."""
    table = {}
    inside = False
    where = None
    with open_text(path) as f:
        for text in f:
            if text.startswith(".text."):
                inside = text.strip() == f".text.{kernel}:"
                continue
            if not inside:
                continue
            m = re.search(r'File "([^"]+)", line (\d+)', text)
            if m:
                where = (m.group(1).split("/")[-1], int(m.group(2)))
                continue
            m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text)
            if m:
                table[int(m.group(1), 16)] = (where, m.group(2).split(".")[0])
    return table


def launches(path, kernel):
    """The header row of an ncu source-page CSV and the kernel's launches (their rows)."""
    header = None
    found = []
    current = None
    with open_text(path) as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "Kernel Name":
                current = [] if len(row) > 1 and row[1] == kernel else None
                if current is not None:
                    found.append(current)
            elif row[0] == "Address":
                header = row
            elif current is not None and row[0].startswith("0x"):
                current.append(row)
    return header, [rows for rows in found if rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel")
    ap.add_argument("csv")
    ap.add_argument("sass")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--launch", type=int, default=None)
    args = ap.parse_args()

    table = line_table(args.sass, args.kernel)
    if not table:
        sys.exit(f"{args.sass}: no .text.{args.kernel} section")
    if all(where is None for where, _ in table.values()):
        sys.exit(f"{args.sass}: {args.kernel} has no line table (compiled without GPUDS_LINEINFO?)")
    header, runs = launches(args.csv, args.kernel)
    if not runs:
        sys.exit(f"{args.csv}: no launch of {args.kernel}")
    if header is None:
        sys.exit(f"{args.csv}: no header row (Address, Source, ...)")
    names = ("Address", "Source", "Instructions Executed")
    missing = [n for n in names if n not in header]
    samples_cols = [i for i, name in enumerate(header) if name.startswith("Warp Stall Sampling (All")]
    if missing or not samples_cols:
        sys.exit(f"{args.csv}: no column {', '.join(missing) or 'Warp Stall Sampling (All Samples)'}"
                 " (profile with --section SourceCounters)")
    col = {name: header.index(name) for name in names}
    samples_col = samples_cols[0]

    def number(cell):
        try:
            return int(cell.replace(",", "")) if cell.strip() else 0
        except ValueError:
            sys.exit(f"{args.csv}: not a count: {cell!r}")

    def executed(rows):
        return sum(number(r[col["Instructions Executed"]]) for r in rows)

    if args.launch is not None and not 0 <= args.launch < len(runs):
        sys.exit(f"--launch {args.launch}: {len(runs)} launches of {args.kernel} in {args.csv}")
    launch = args.launch if args.launch is not None else max(range(len(runs)), key=lambda i: executed(runs[i]))
    rows = runs[launch]
    if len(rows) != len(table):
        sys.exit(f"{len(rows)} instructions in the CSV, {len(table)} in the listing: other code")
    base = int(rows[0][col["Address"]], 16)

    inst = collections.Counter()
    samples = collections.Counter()
    for r in rows:
        offset = int(r[col["Address"]], 16) - base
        where, opcode = table.get(offset, (None, None))
        source = r[col["Source"]].split()
        source = [w for w in source if not w.startswith("@")]
        if opcode is None or not source or source[0].split(".")[0] != opcode:
            sys.exit(f"instruction at +{offset:#x} differs between the CSV and the listing: other code")
        inst[where] += number(r[col["Instructions Executed"]])
        samples[where] += number(r[samples_col])

    total_inst = sum(inst.values()) or 1
    total_samples = sum(samples.values()) or 1
    print(f"{args.kernel}: launch {launch} of {len(runs)}, {len(rows)} instructions, "
          f"{total_inst:,} executed (warp instructions), {total_samples:,} stall samples")
    print(f"{'samples':>8} {'executed':>9}  source line")
    for where, n in samples.most_common(args.top):
        name = f"{where[0]}:{where[1]}" if where else "(no line)"
        print(f"{n / total_samples:8.1%} {inst[where] / total_inst:9.1%}  {name}")


if __name__ == "__main__":
    main()
