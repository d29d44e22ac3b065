"""cos-perfetto (tools/cos-perfetto) on a recording made here: a lord's records packed as
libcos writes them (libcos/cos_trace.h) and the kernel's events as tracefs prints them.

The summary's phases are the differences of the recorded times, to the microsecond; the trace
holds the kernel's switches per CPU, the lord's track and one flow from the wake-up to the run;
a damaged recording is refused with its reason.  Runs on the host (make test runs it in the build
tree, with pytest); the trace itself needs the tree's venv with Perfetto's protos (COS_PYTHON).
"""
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "cos-perfetto"
VENV_PYTHON = Path("/opt/cos-python/bin/python3")

HEADER = struct.Struct("<IIIIQiiIIQ16Q32s32s256s")
HEADER_SIZE = 704
T0 = 1_000_000_000_000      # the recording's clock: CLOCK_MONOTONIC ns


def rec(rtype, size, ts, payload=b"", cpu=0):
    body = struct.pack("<HHIQ", rtype, size, cpu, ts) + payload
    return body + b"\0" * (size - len(body))


def msg(read, posted, mtype, pid, slot, cpu=0, arg=0):
    m = struct.pack("<QQIIIIIIQ", 1, posted, mtype, cpu, slot, 1, pid, 0, arg) + b"\0" * 16
    return rec(2, 80, read, m, cpu)


def recording(tmp_path, name="r"):
    """One step: redis (pid 500) woke at +100 us, its message was posted at +110 us and read
    at +300 us; the lord decided at +320 us (schedule at +310), shot it to CPU 2 from +330 to
    +340 us; it ran at +400 us.  Another task (600) ran on CPU 2 before it."""
    words = [0] * 16
    words[0] = 0b1110            # CPUs 1-3
    h = HEADER.pack(0x63727463, 2, HEADER_SIZE, 0, T0, 42, 0, 4, 64, 0, *words,
                    b"cos-fifo", b"cos-fifo", b"--cpus 1-3")
    h += b"\0" * (HEADER_SIZE - len(h))
    us = lambda n: T0 + n * 1000
    body = rec(1, 16, us(290))
    body += msg(us(300), us(110), 2, 500, 7)                               # TASK_RUNNABLE
    body += rec(4, 16, us(310))                                             # SCHEDULE
    body += rec(5, 48, us(320), struct.pack("<IIiIIIQ", 7, 1, 500, 0, 1, 0, 0), cpu=2)
    body += rec(6, 32, us(330), struct.pack("<iIQ", 1, 1, us(340)))        # SHOOT
    body += rec(7, 32, us(340), struct.pack("<III", 7, 1, 0), cpu=2)       # SHOT: OK
    body += rec(8, 32, us(345), struct.pack("<II", 1, 1))                  # STEP_END
    (tmp_path / f"{name}.cos-fifo.lord").write_bytes(h + body)
    sec = lambda n: f"{(T0 + n * 1000) // 10**9}.{(T0 + n * 1000) % 10**9 // 1000:06d}"
    (tmp_path / f"{name}.kernel").write_text(
        "# tracer: nop\n"
        f"          <idle>-0       [002] d..2.  {sec(50)}: sched_switch: prev_comm=swapper/2 "
        "prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker next_pid=600 next_prio=120\n"
        f"      ksoftirqd/1-25      [001] d.s3.  {sec(100)}: sched_wakeup: comm=redis-server "
        "pid=500 prio=120 target_cpu=002\n"
        f"          worker-600     [002] d..2.  {sec(400)}: sched_switch: prev_comm=worker "
        "prev_pid=600 prev_prio=120 prev_state=S ==> next_comm=redis-server next_pid=500 "
        "next_prio=120\n")
    return tmp_path / name


def with_cos_events(tmp_path, name="r"):
    """recording(), and cos.ko's events as tracefs prints them (kmod/cos_trace.h): no wake rule
    for redis at its wake-up (others wait), its message posted at +110 us (seq 1), the shoot
    committed at +335 us with a kick of CPU 2, CPU 2's dispatch takes it at +380 us."""
    base = recording(tmp_path, name)
    sec = lambda n: f"{(T0 + n * 1000) // 10**9}.{(T0 + n * 1000) % 10**9 // 1000:06d}"
    lines = [
        f"      ksoftirqd/1-25      [001] d.s3.  {sec(105)}: cos_wake_rule: enclave=1 pid=500 cpu=2 "
        "how=none:others_wait\n",
        f"      ksoftirqd/1-25      [001] d.s3.  {sec(110)}: cos_post: enclave=1 type=TASK_RUNNABLE "
        "cpu=2 pid=500 seq=1 arg=0 woke=1\n",
        f"        cos-fifo-42      [000] d..1.  {sec(335)}: cos_shoot: enclave=1 cpu=2 pid=500 slot=7 "
        "flags=0x1 slice=0 status=OK\n",
        f"        cos-fifo-42      [000] d..1.  {sec(336)}: cos_kick: cpu=2 why=shoot\n",
        f"          worker-600     [002] d..2.  {sec(380)}: cos_dispatch: cpu=2 pid=500 slice=0 "
        "latched=0\n",
        f"        cos-fifo-42      [000] d.h1.  {sec(390)}: cos_stall: enclave=1 reason=starved: lord 42 "
        "stalled: pid 501 waited 10 ms for a shoot (state 2 cpu 3); pending: cpu2=500\n",
    ]
    k = base.parent / f"{name}.kernel"
    k.write_text(k.read_text() + "".join(lines))
    return base


def run(*args, python="python3"):
    return subprocess.run([python, str(TOOL), *map(str, args)], capture_output=True, text=True)


def phase(out, label):
    line = next(l for l in out.splitlines() if l.strip().startswith(label))
    return [float(x) for x in line.split()[-4:]]        # n, p50, p99, max


def test_summary_phases_are_the_recorded_differences(tmp_path):
    r = run(recording(tmp_path), "--summary", "--no-trace")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "enclave cos-fifo: cos-fifo (pid 42, lord CPU 0, CPUs 1,2,3): 1 steps, 1 messages, " \
           "1 placements" in out
    assert phase(out, "message: posted -> lord reads it") == [1, 190.0, 190.0, 190.0]
    assert phase(out, "queued: lord reads -> decides") == [1, 20.0, 20.0, 20.0]
    assert phase(out, "shoot: decides -> committed") == [1, 20.0, 20.0, 20.0]
    assert phase(out, "dispatch: committed -> runs") == [1, 60.0, 60.0, 60.0]
    assert phase(out, "whole: wake-up -> runs") == [1, 300.0, 300.0, 300.0]
    assert phase(out, "wait of runnable COS tasks") == [1, 300.0, 300.0, 300.0]
    # the longest wait, with its cause and what ran meanwhile
    assert re.search(r"redis-server:500 waited 300.0 us .* ran on CPU 2: lord read its message "
                     r"after 190.0 us, placed it 20.0 us later, shoot 20.0 us, started 60.0 us "
                     r"after; meanwhile CPU 2 ran worker:600 300 us", out), out


def test_summary_with_cos_ko_events_splits_the_dispatch_and_names_the_wake_rule(tmp_path):
    r = run(with_cos_events(tmp_path), "--summary", "--no-trace")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert phase(out, "dispatch: committed -> runs") == [1, 60.0, 60.0, 60.0]
    assert phase(out, "decides -> its CPU takes it (cos.ko)") == [1, 60.0, 60.0, 60.0]
    assert phase(out, "taken -> runs") == [1, 20.0, 20.0, 20.0]
    assert "wake rules (cos.ko), per waking task: none:others_wait 1" in out
    assert re.search(r"redis-server:500 waited 300.0 us .*started 60.0 us after; wake rule: "
                     r"none:others_wait; meanwhile CPU 2 ran worker:600 300 us", out), out
    # without them, no such lines (the first test's recording)
    r = run(recording(tmp_path, "plain"), "--summary", "--no-trace")
    assert "cos.ko" not in r.stdout and "wake rule:" not in r.stdout


def perfetto_facts(trace, script):
    """Run @script on @trace read with Perfetto's protos, given `t` (the Trace), `ev` (its
    track events with their times) and `flow` (each flow's events, in order); its output."""
    check = subprocess.run([str(VENV_PYTHON), "-c", f"""
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
t = Trace(); t.ParseFromString(open({str(trace)!r}, 'rb').read())
ev = [(p.timestamp, p.track_event) for p in t.packet if p.HasField('track_event')]
flow = {{}}
for ts, e in ev:
    for f in list(e.flow_ids) + list(e.terminating_flow_ids):
        flow.setdefault(f, []).append((ts, e.name))
""" + script], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    return check.stdout.strip()


@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no venv with Perfetto's protos here")
def test_trace_draws_cos_ko_events_in_the_flow(tmp_path):
    r = run(with_cos_events(tmp_path), "-o", tmp_path / "t.pftrace", python=str(VENV_PYTHON))
    assert r.returncode == 0, r.stderr
    assert perfetto_facts(tmp_path / "t.pftrace", """
names = sorted(p.track_descriptor.name for p in t.packet if p.HasField('track_descriptor')
               and p.track_descriptor.name.startswith('cos.ko'))
stall = [dict((a.name, a.string_value or a.int_value) for a in e.debug_annotations)
         for ts, e in ev if e.name == 'stall']
print(names, [sorted(n for ts, n in v) for v in flow.values()], stall[0]['reason'],
      stall[0]['report'][:15])
""") == ("['cos.ko CPU 0', 'cos.ko CPU 1', 'cos.ko CPU 2'] "
         "[['dispatch redis-server:500', 'msg TASK_RUNNABLE', 'place redis-server:500 -> CPU 2', "
         "'post TASK_RUNNABLE redis-server:500', 'runs on CPU 2', 'woken']] starved lord 42 stalled")


@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no venv with Perfetto's protos here")
def test_trace_has_cpus_the_lord_and_a_whole_flow(tmp_path):
    r = run(recording(tmp_path), "-o", tmp_path / "t.pftrace", python=str(VENV_PYTHON))
    assert r.returncode == 0, r.stderr
    us = lambda n: T0 + n * 1000
    assert perfetto_facts(tmp_path / "t.pftrace", """
cpus = {p.ftrace_events.cpu for p in t.packet if p.HasField('ftrace_events')}
names = [p.track_descriptor.name for p in t.packet if p.HasField('track_descriptor')]
print(sorted(cpus), [n for n in names if n.startswith('lord')], [sorted(v) for v in flow.values()])
""") == ("[1, 2] [\"lord cos-fifo 'cos-fifo' (pid 42, CPU 0)\"] "
         f"[[({us(100)}, 'woken'), ({us(300)}, 'msg TASK_RUNNABLE'), "
         f"({us(320)}, 'place redis-server:500 -> CPU 2'), ({us(400)}, 'runs on CPU 2')]]")


def test_damaged_recordings_are_refused(tmp_path):
    base = recording(tmp_path)
    lord = tmp_path / "r.cos-fifo.lord"
    good = lord.read_bytes()
    for bad, why in [(good[:100], "not a cos recording"),
                     (good[:-24], "cut at byte"),         # 8 bytes of the last record
                     (good[:-8], "bad record"),            # its header, not its payload
                     (b"x" + good[1:], "no magic"),
                     (good[:HEADER_SIZE] + b"\x63" + good[HEADER_SIZE + 1:], "bad record")]:
        lord.write_bytes(bad)
        r = run(base, "--summary", "--no-trace")
        assert r.returncode == 1 and why in r.stderr, (why, r.stderr)
    lord.unlink()
    r = run(base, "--summary")
    assert r.returncode == 1 and "no lord's records" in r.stderr


def test_names_match_the_abi():
    """MSG_TYPES and SHOOT_STATUS follow uapi/linux/cos.h's enums, in order."""
    header = (ROOT / "uapi" / "linux" / "cos.h").read_text()
    src = TOOL.read_text()
    ns = {}
    exec(src[src.index("MSG_TYPES"):src.index("# the messages after which")], ns)
    msgs = re.search(r"enum cos_msg_type \{(.*?)\};", header, re.S).group(1)
    want = [n for n in re.findall(r"^\s*COS_MSG_(\w+)", msgs, re.M) if n != "NR_TYPES"]
    assert ns["MSG_TYPES"] == want
    shoot = re.search(r"enum cos_shoot_status \{(.*?)\};", header, re.S).group(1)
    assert ns["SHOOT_STATUS"] == re.findall(r"^\s*COS_SHOOT_(\w+)", shoot, re.M)
