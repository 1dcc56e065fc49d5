#!/usr/bin/env python3
"""tests/lib/step_drive.py — a person at a terminal answering gpurun --step,
for tests/step.bats.

    python3 step_drive.py STEP... -- CMD [ARG...]

CMD runs on a new pty as the leader of its session (the pty is its
controlling terminal, /dev/tty, and fds 0-2: tests/lib/ptydrive.py).
The STEPs, in order:

    expect:REGEX   wait (30 s at most) for REGEX in the output after the
                   last match
    send:TEXT      type TEXT (Python escapes: \\r, \\x03)
    look:SHELL     run `NSENTER SHELL` on the host, NSENTER being the last
                   "nsenter --target ..." command gpurun printed, and
                   write its output to the report as "look: LINE" lines
    snap:FILE      write the output so far to FILE (what was shown before
                   an answer)

Then it waits for CMD and prints what the terminal showed (without \\r),
the "look:" lines, and "exit N".  Exits 99 when a wait gives up.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptydrive import Pty  # noqa: E402


def main(argv):
    i = argv.index('--')
    steps, cmd = argv[:i], argv[i + 1:]
    t = Pty(cmd)
    looks = []

    def other(kind, arg):
        if kind == 'look':
            found = re.findall(r'^ *(nsenter --target [0-9]+[^\n]*)$', t.text(), re.M)
            if not found:
                t.give_up('an nsenter command')
            r = subprocess.run(found[-1] + ' ' + arg, shell=True, capture_output=True, text=True, timeout=30)
            looks.extend('look: ' + line for line in (r.stdout + r.stderr).splitlines())
            looks.append('look: exit %d' % r.returncode)
        elif kind == 'snap':
            with open(arg, 'w') as f:
                f.write(t.text())
        else:
            sys.exit('step_drive.py: unknown step %s:%s' % (kind, arg))

    t.steps(steps, other)
    code = t.wait()
    for line in looks:
        print(line)
    print('exit %d' % code)


main(sys.argv[1:])
