#!/usr/bin/env python3
"""tests/lib/step_drive.py — a person at a terminal answering gpurun --step,
for tests/step.bats.

    python3 step_drive.py STEP... -- CMD [ARG...]

CMD runs on a new pty as the leader of its session (the pty is its
controlling terminal, /dev/tty, and fds 0-2).  The STEPs, in order:

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
import select
import signal
import subprocess
import sys
import time


def main(argv):
    i = argv.index('--')
    steps, cmd = argv[:i], argv[i + 1:]
    master, slave = os.openpty()
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.setsid()
        import fcntl
        import termios
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        os.execvp(cmd[0], cmd)
    os.close(slave)
    out = bytearray()
    looks = []

    def pump(timeout):
        if select.select([master], [], [], timeout)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b''
            out.extend(data)
            return bool(data)
        return False

    def text():
        return out.decode('utf-8', 'replace').replace('\r', '')

    def give_up(what):
        print('TIMEOUT waiting for %s; output:\n%s' % (what, text()))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.exit(99)

    pos = 0
    for s in steps:
        kind, _, arg = s.partition(':')
        if kind == 'expect':
            deadline = time.monotonic() + 30
            while not (m := re.compile(arg).search(text(), pos)):
                if time.monotonic() > deadline:
                    give_up(repr(arg))
                pump(0.2)
            pos = m.end()
        elif kind == 'send':
            os.write(master, arg.encode().decode('unicode_escape').encode('latin-1'))
        elif kind == 'look':
            found = re.findall(r'^ *(nsenter --target [0-9]+[^\n]*)$', text(), re.M)
            if not found:
                give_up('an nsenter command')
            r = subprocess.run(found[-1] + ' ' + arg, shell=True, capture_output=True, text=True, timeout=30)
            looks.extend('look: ' + line for line in (r.stdout + r.stderr).splitlines())
            looks.append('look: exit %d' % r.returncode)
        elif kind == 'snap':
            with open(arg, 'w') as f:
                f.write(text())
        else:
            sys.exit('step_drive.py: unknown step ' + s)
    deadline = time.monotonic() + 30
    while True:
        w, status = os.waitpid(pid, os.WNOHANG)
        if w:
            break
        if time.monotonic() > deadline:
            give_up('the exit')
        pump(0.1)
    while pump(0):
        pass
    t = text()
    sys.stdout.write(t if t.endswith('\n') or not t else t + '\n')
    for line in looks:
        print(line)
    print('exit %d' % os.waitstatus_to_exitcode(status))


main(sys.argv[1:])
