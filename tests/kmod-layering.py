#!/usr/bin/env python3
"""kmod-layering.py — check the file order kmod/cos_internal.h states: each kmod/cos_*.c refers
only to functions and variables of the files listed before it (no call loop between files).

The order is read from cos_internal.h's comment ("The files, bottom up"), the definitions from
the files themselves (non-static functions and variables at file scope, DEFINE_*() ones such as
a lock included), the references from their code with comments removed.  Also checks that each
function cos_internal.h declares under a "/* cos_<file>.c..." heading is defined in that file,
so the header's sections say where things are.  Prints each finding and exits 1 if there is
one.  Run by `make test` (docs/testing.md).

    tests/kmod-layering.py [KMOD_DIR]      (default: kmod/ beside this script's parent)
"""
import os
import re
import sys

kmod = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'kmod')
header = open(os.path.join(kmod, 'cos_internal.h')).read()
block = re.search(r'The files, bottom up.*?\*/', header, re.S)
if not block:
    sys.exit('kmod-layering: cos_internal.h has no "The files, bottom up" list')
order = re.findall(r'^\s*\*\s+(cos_\w+\.c)\s', block.group(0), re.M)
on_disk = sorted(f for f in os.listdir(kmod) if re.fullmatch(r'cos_\w+\.c', f) and 'bpf' not in f)
if sorted(order) != on_disk:
    sys.exit('kmod-layering: cos_internal.h lists %s but kmod/ has %s' % (order, on_disk))


def code(name):
    src = open(os.path.join(kmod, name)).read()
    return re.sub(r'/\*.*?\*/|//[^\n]*', '', src, flags=re.S)


owner = {}
for f in order:
    src = code(f)
    # functions: a definition starts at column 0, is not static, and its body follows
    for m in re.finditer(r'^(?!static)[A-Za-z_][^;{}()]*?\b(cos_\w+)\([^;{]*\)\s*\{', src, re.M):
        owner.setdefault(m.group(1), f)
    # DEFINE_RAW_SPINLOCK(cos_lock) and the like, not static
    for m in re.finditer(r'^DEFINE_\w+\((cos_\w+)', src, re.M):
        owner.setdefault(m.group(1), f)
    # variables: file-scope, not static, not extern
    for m in re.finditer(r'^(?!static|extern)[A-Za-z_][\w \t*]*?\b(cos_\w+)\s*(?:\[[^\]]*\])?\s*(?:=[^;]*)?;',
                         src, re.M):
        owner.setdefault(m.group(1), f)

bad = 0
for i, f in enumerate(order):
    src = code(f)
    for name, g in sorted(owner.items()):
        if g != f and re.search(r'\b%s\b' % re.escape(name), src) and order.index(g) > i:
            print('kmod-layering: %s uses %s of %s, which comes after it' % (f, name, g))
            bad = 1
# The header's per-file sections: each prototype is defined in the file its heading names.
# A heading is a comment whose text starts with a file name ("/* cos_task.c: ...").
section = None
for m in re.finditer(r'/\*(.*?)\*/|^(?!static|extern|#)[A-Za-z_][\w \t*]*?\b(cos_\w+)\(',
                     header, re.S | re.M):
    if m.group(1) is not None:
        h = re.match(r'[\s*]*(cos_\w+\.c)\b', m.group(1))
        if h:
            section = h.group(1)
        continue
    name = m.group(2)
    if section and owner.get(name) != section:
        print('kmod-layering: cos_internal.h declares %s under %s, but %s'
              % (name, section, '%s defines it' % owner[name] if name in owner else
                 'no file defines it'))
        bad = 1

if not bad:
    print('kmod-layering: %s: ok (%d definitions)' % (' <- '.join(order), len(owner)))
sys.exit(bad)
