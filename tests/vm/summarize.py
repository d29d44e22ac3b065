#!/usr/bin/env python3
"""summarize.py — count test cases in Catch2 JUnit reports and print the summary lines.

usage: summarize.py NAME=DIR[:STATUS] ...

Each DIR holds junit-*.xml reports of one run (host unit tests, or one guest kernel).  STATUS is
what the runner reported: "ok", "exit-N" (the suite failed; counts as one failed case if no
report shows why), "incomplete" (the guest never finished: counts as one failed case, with what
its run directory says of why: time, boot, last test, console lines, QEMU's vCPUs) or
"dirty-log" (bad kernel log lines: counts as one failed case).  Where the directory holds
tests/guest/run-suite's exit statuses (junit-X.exit, written once a binary ended), a report
without one, cut off or not, is a binary that never ended, and a non-zero status is a failure
even where the report shows none.  Prints one line per NAME and a
final "N passed, N failed" line; exits 1 if anything failed or nothing ran.  Under each failed
case it prints the first lines of what the report says of the failure (the check, its values,
the INFO text), so that a log keeping only its tail still says why.  See docs/testing.md.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET


WHY_LINES = 12


def why(element):
    """The first WHY_LINES lines of a failure's message and text, indented under its name."""
    text = "\n".join(t for t in (element.get("message"), element.text) if t and t.strip())
    lines = [l.rstrip() for l in text.splitlines() if l.strip()]
    if len(lines) > WHY_LINES:
        lines = lines[:WHY_LINES] + [f"... ({len(lines) - WHY_LINES} more lines in the report)"]
    return "".join("\n        " + l for l in lines)


CRASH = re.compile(r"Oops|BUG:|Kernel panic|RIP:|timed out|watchdog|blocked for more than|"
                   r"sched_ext: .*disabled|did not come up")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def incomplete_why(directory):
    """What the run directory of a guest that never finished says: how long it ran, whether its
    init came up, the test it was in, the console's crash lines and last lines."""
    console = read(os.path.join(directory, "console.log")).splitlines()
    ran = read(os.path.join(directory, "vm-seconds")).strip() or "?"
    boot = read(os.path.join(directory, "boot-seconds")).strip()
    facts = [f"ran {ran} s", f"came up in {boot} s" if boot else "never came up"]
    tests = [l for l in console if l.startswith("=== ")]
    if tests:
        facts.append(f"last started: {tests[-1][4:]}")
    lines = ["; ".join(facts)]
    crash = [l for l in console if CRASH.search(l)][:WHY_LINES]
    if crash:
        lines += ["console's crash lines:"] + ["  " + l for l in crash]
    lines += [f"console's last lines ({len(console)} in all):"] + ["  " + l for l in console[-WHY_LINES:]]
    state = read(os.path.join(directory, "qemu-state")).splitlines()
    if state:  # tests/vm/run's boot watchdog asked QEMU where the vCPUs were
        lines += ["QEMU's vCPUs when stopped:"] + [
            "  " + l for l in state if l.startswith(("status:", "CPU#", "RIP=", "EIP=", "* CPU", "  CPU"))][:12]
    qemu = read(os.path.join(directory, "qemu.log")).strip()
    if qemu:
        lines += ["QEMU: " + l for l in qemu.splitlines()[-4:]]
    return "".join("\n        " + l.rstrip() for l in lines)


def exit_status(report):
    """The exit status tests/guest/run-suite recorded beside REPORT once its binary ended
    (junit-X.exit), or None: not recorded, so the binary never ended."""
    text = read(report[:-len(".xml")] + ".exit").strip()
    return int(text) if text.isdigit() else None


def count(directory):
    passed = failed = skipped = 0
    failures = []
    # run-suite's binaries record their exit status; other parts (host unit tests, the
    # harness's own reports) write whole reports at once and record none.
    recorded = bool(glob.glob(os.path.join(directory, "junit-*.exit")))
    reports = set(glob.glob(os.path.join(directory, "junit-*.xml")))
    reports |= {p[:-len(".exit")] + ".xml" for p in glob.glob(os.path.join(directory, "junit-*.exit"))}
    for path in sorted(reports):
        name = os.path.basename(path)
        status = exit_status(path) if recorded else None
        if not os.path.exists(path):
            if status:
                failed += 1
                failures.append(f"{name}: its binary exited with status {status} and left no report")
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            failed += 1
            if not recorded:
                failures.append(f"{name}: unreadable report ({e})")
            elif status is None:
                failures.append(f"{name}: cut off ({e}): its binary never ended (no exit status "
                                "recorded; the guest ended while it ran)")
            else:
                failures.append(f"{name}: cut off ({e}): its binary ended with status {status}")
            continue
        bad_cases = 0
        for case in root.iter("testcase"):
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is not None:
                bad_cases += 1
                failures.append(case.get("name") + why(bad))
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
        failed += bad_cases
        if recorded and status is None:
            failed += 1
            failures.append(f"{name}: its binary never ended (no exit status recorded)")
        elif status and not bad_cases:
            failed += 1  # a binary that crashed after its last case, or whose report lies
            failures.append(f"{name}: its binary exited with status {status} but the report shows no failure")
    return passed, failed, skipped, failures


def main():
    total_p = total_f = total_s = 0
    for arg in sys.argv[1:]:
        name, _, rest = arg.partition("=")
        directory, _, status = rest.partition(":")
        p, f, s, failures = count(directory)
        if status == "incomplete":
            f += 1
            failures.append("guest did not complete (hang, timeout or panic)" + incomplete_why(directory))
        elif status == "dirty-log":
            f += 1
            failures.append("guest kernel log has WARNING/BUG/Oops/runtime-error lines")
        elif status.startswith("exit-") and not f:
            f += 1  # a crashed test binary may leave no report of its failure
            failures.append(f"suite exited with status {status[5:]} but no report shows a failure")
        total_p, total_f, total_s = total_p + p, total_f + f, total_s + s
        line = f"{name}: {p} passed, {f} failed" + (f", {s} skipped" if s else "")
        print(line)
        for fail in failures:
            print(f"    FAILED: {fail}")
    print(f"{total_p} passed, {total_f} failed" + (f", {total_s} skipped" if total_s else ""))
    return 1 if total_f or not total_p else 0


if __name__ == "__main__":
    sys.exit(main())
