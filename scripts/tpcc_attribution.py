"""Reads `perf script` output of a TPC-C run on stdin; prints the share of samples per
transaction type and, within each type, per engine call (the outermost Txn method or the
commit), so a profile says which transaction and which part of it the time goes to."""
import collections
import re
import sys

TYPES = "new_order|payment|order_status|delivery|stock_level|stock_scan"
TYPE = re.compile(r"(?:TpccDb>::|engram::\{impl#\d+\}::)(" + TYPES + r")\b")
CALL = re.compile(r"(Txn::\w+|txn::\{impl#\d+\}::\w+|cc::commit::\w+|commit_with)")


def attribute(stack):
    kind = "driver and other"
    for frame in stack:
        found = TYPE.search(frame)
        if found:
            kind = found.group(1)
            break
    else:
        if any("find_customer" in frame for frame in stack):
            kind = "payment or order_status (customer lookup)"
    call = "the transaction's own code"
    for frame in stack:  # innermost first: the last match is the outermost call
        found = CALL.search(frame)
        if found:
            call = re.sub(r"txn::\{impl#\d+\}::", "Txn::", found.group(1))
    return kind, call


def main():
    kinds, calls, total, stack = collections.Counter(), collections.Counter(), 0, []
    for line in list(sys.stdin) + [""]:
        line = line.strip()
        if line and "cpu-clock" not in line:
            stack.append(line)
            continue
        if stack:
            kind, call = attribute(stack)
            kinds[kind] += 1
            calls[(kind, call)] += 1
            total += 1
            stack = []
    if total == 0:
        sys.exit("no samples")
    print(f"{total} samples")
    for kind, count in kinds.most_common():
        print(f"{100 * count / total:6.2f}%  {kind}")
        for (owner, call), n in calls.most_common():
            if owner == kind and n * 200 >= total:
                print(f"        {100 * n / total:6.2f}%  {call}")


main()
