#!/usr/bin/env python3
"""check-log.py — fail on kernel-log lines that mean the kernel or sched_ext went wrong.

usage: check-log.py LOG

Bad lines: WARNING:, BUG:, Oops, Call Trace, Kernel panic, and sched_ext's "disabled (runtime
error)", "disabled (runnable task stall)" (its watchdog ejected the scheduler) and "disabled
(unregistered from the main kernel)" (the kernel ejected it: CPU hotplug without the shim's
cpu_online/offline ops did).  A test that provokes such a line on purpose writes to /dev/kmsg
  cos-test: expect-begin <python regex>
  ...
  cos-test: expect-end
and bad lines in between that match the regex are allowed.

A data race KCSAN reports (the -cos-kcsan kernel: "BUG: KCSAN: data-race in a / b", then both
accesses' stacks, up to a line of "=") is bad when cos is in it: a frame of cos.ko ("[cos]"),
of the shim's BPF programs (bpf_prog_..._cos_*) or of sched_ext (scx_*, kernel/sched/ext*).  The
stock kernel's own races elsewhere are counted and named, not failed: they are not cos's to fix.
So are the races of KNOWN below, each with its reason: the kernel's own, reached through cos.
Exit 0 if clean, 1 otherwise.
"""
import re
import sys

BAD = re.compile(r"WARNING:|BUG:|\bOops\b|Call Trace|Kernel panic|"
                 r"sched_ext: .*disabled \((runtime error|runnable task stall|"
                 r"unregistered from the main kernel)\)")
BEGIN = re.compile(r"cos-test: expect-begin (.*)$")
KCSAN = re.compile(r"BUG: KCSAN: ")
KCSAN_END = re.compile(r"^(\[[ 0-9.]+\] )?={20,}")
OURS = re.compile(r"\[cos\]|bpf_prog_\w*_cos_|\bcos_\w+\+0x|\bscx_\w+\+0x|kernel/sched/ext")
foreign = []    # KCSAN reports without cos in them, or KNOWN ones

# Races in the kernel's own code that cos's paths reach, each with why it is no bug of cos's.
KNOWN = [
    # sched_ext's built-in idle tracking sets and clears CPUs' bits in its idle masks with
    # atomic bit operations, lock-free by design; scx_bpf_select_cpu_dfl() (the shim's
    # ops.select_cpu) reads the words plainly through find_next_and_bit() or, picking among
    # them, find_first_and_bit() (cpumask_any_and_distribute()).  A stale word costs a pick of
    # a CPU that just went busy (7.3.4-cos-kcsan, test_fallback and test_lifecycle, 2026-11-27).
    (re.compile(r"_find_(next|first)_and_bit.*\n(.*\n){0,3}.*pick_idle_cpu", re.S),
     "sched_ext's idle masks: atomic bit updates, lock-free reads by design"),
]
END = re.compile(r"cos-test: expect-end")


def bad_lines(lines):
    allowed = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if KCSAN.search(line):
            block = [line]
            while i < len(lines) and not KCSAN_END.search(lines[i]):
                block.append(lines[i])
                i += 1
            text = "\n".join(block)
            known = next((why for pat, why in KNOWN if pat.search(text)), None)
            if known:
                foreign.append(f"{line}  [known: {known}]")
            elif any(OURS.search(b) for b in block):
                yield line
            else:
                foreign.append(line)
            continue
        m = BEGIN.search(line)
        if m:
            allowed = re.compile(m.group(1).strip())
            continue
        if END.search(line):
            allowed = None
            continue
        if BAD.search(line) and not (allowed and allowed.search(line)):
            yield line


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], errors="replace") as f:
        found = list(bad_lines(f.read().splitlines()))
    if foreign:
        print(f"cos: {len(foreign)} KCSAN report(s) of the kernel's own code (not failed):",
              file=sys.stderr)
        for line in sorted(set(foreign))[:10]:
            print("  " + line, file=sys.stderr)
    if found:
        print(f"cos: the guest kernel log has {len(found)} bad line(s):", file=sys.stderr)
        for line in found[:20]:
            print("  " + line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
