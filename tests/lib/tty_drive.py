#!/usr/bin/env python3
"""tests/lib/tty_drive.py — the caller's terminal for tests/tty.bats.

    python3 tty_drive.py [size:ROWS:COLS] STEP... -- CMD [ARG...]

CMD runs on a new pty as its session leader (tests/lib/ptydrive.py, which
also plays expect:REGEX and send:TEXT).  The other STEPs:

    resize:R:C     the window size
    kill:SIG       signal CMD itself
    killinit       SIGKILL CMD's child, the container's init

Then it waits for CMD and prints its output (no \\r), "exit N", "modes:
same" or "modes: changed" (the terminal's, against before CMD ran) and
"left: b'...'", the input CMD left unread.  Exits 99 when a wait gives up.
"""
import fcntl
import os
import signal
import struct
import sys
import termios

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptydrive import Pty  # noqa: E402


def main(argv):
    rows, cols, steps = 24, 80, []
    i = 0
    while argv[i] != '--':
        if argv[i].startswith('size:'):
            rows, cols = map(int, argv[i][5:].split(':'))
        else:
            steps.append(argv[i])
        i += 1
    t = Pty(argv[i + 1:], rows, cols, keep_slave=True)

    def other(kind, arg):
        if kind == 'resize':
            r, c = map(int, arg.split(':'))
            fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack('HHHH', r, c, 0, 0))
        elif kind == 'kill':
            os.kill(t.pid, getattr(signal, 'SIG' + arg))
        elif kind == 'killinit':
            with open('/proc/%d/task/%d/children' % (t.pid, t.pid)) as f:
                os.kill(int(f.read().split()[0]), signal.SIGKILL)
        else:
            sys.exit('tty_drive.py: unknown step %s:%s' % (kind, arg))

    t.steps(steps, other)
    code = t.wait()
    after = termios.tcgetattr(t.slave)
    fcntl.fcntl(t.slave, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        left = os.read(t.slave, 4096)
    except OSError:
        left = b''
    print('exit %d' % code)
    print('modes: %s' % ('same' if t.before == after else 'changed'))
    print('left: %r' % left)


main(sys.argv[1:])
