"""tests/lib/ptydrive.py — a command on a new pty, driven as a person at a
terminal would: what tty_drive.py (tests/tty.bats) and step_drive.py
(tests/step.bats) share.

Pty(cmd, rows, cols) runs CMD as the leader of a new session whose
controlling terminal (/dev/tty, and fds 0-2) is the pty.  steps() plays the
common STEPs, in order, and hands any other kind to the caller's handler:

    expect:REGEX   wait (30 s at most) for REGEX in the output after the
                   last match
    send:TEXT      type TEXT (Python escapes: \\r, \\x03)

A wait that gives up prints the output so far and exits 99."""
import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time


class Pty:
    def __init__(self, cmd, rows=24, cols=80, keep_slave=False):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        self.before = termios.tcgetattr(self.slave)
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.master)
            os.setsid()
            fcntl.ioctl(self.slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(self.slave, fd)
            if self.slave > 2:
                os.close(self.slave)
            os.execvp(cmd[0], cmd)
        if not keep_slave:
            os.close(self.slave)
            self.slave = -1
        self.out = bytearray()
        self.pos = 0

    def pump(self, timeout):
        """Read what the command wrote, waiting up to timeout; whether any."""
        if select.select([self.master], [], [], timeout)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b''
            self.out.extend(data)
            return bool(data)
        return False

    def text(self):
        return self.out.decode('utf-8', 'replace').replace('\r', '')

    def give_up(self, what):
        print('TIMEOUT waiting for %s; output:\n%s' % (what, self.text()))
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        sys.exit(99)

    def steps(self, steps, other):
        for s in steps:
            kind, _, arg = s.partition(':')
            if kind == 'expect':
                deadline = time.monotonic() + 30
                while not (m := re.compile(arg).search(self.text(), self.pos)):
                    if time.monotonic() > deadline:
                        self.give_up(repr(arg))
                    self.pump(0.2)
                self.pos = m.end()
            elif kind == 'send':
                os.write(self.master, arg.encode().decode('unicode_escape').encode('latin-1'))
            else:
                other(kind, arg)

    def wait(self):
        """The command's exit code, once it has exited (30 s at most), with
        all it wrote read."""
        deadline = time.monotonic() + 30
        while True:
            w, status = os.waitpid(self.pid, os.WNOHANG)
            if w:
                break
            if time.monotonic() > deadline:
                self.give_up('the exit')
            self.pump(0.1)
        while self.pump(0):
            pass
        t = self.text()
        sys.stdout.write(t if t.endswith('\n') or not t else t + '\n')
        return os.waitstatus_to_exitcode(status)
