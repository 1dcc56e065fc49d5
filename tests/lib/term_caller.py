#!/usr/bin/env python3
"""tests/lib/term_caller.py — a caller on a terminal of its own, for
tests/terminal.bats.

    python3 term_caller.py [--killinit] -- CMD [ARG...]

A new pty is the caller's terminal.  The caller, a child that leads a new
session with the pty as its controlling terminal and fds 0-2, runs CMD in
its own process group, the caller's, and waits for it, as `sh -c` does.
Then, still in the session, it looks at whether it has the foreground again
and writes a line to the terminal, as a shell's prompt would, giving up
after 5 s.  Outside, once the caller is gone, this checks what the next
program would meet: the terminal opened again by a process that is not root
(the pty is given to nobody when this runs as root), its modes, its
exclusive flag and the file status flags of the caller's open file, each
against what it was before CMD ran.

--killinit: once the caller's open file is O_NONBLOCK (`probe tty-payload`'s
last change), kill CMD's child, the container's init, with SIGKILL.

Prints what the terminal showed (without \\r), then one line each:
    exit N
    foreground: caller | foreground: another group | foreground: ERRNO
    caller's write: ok | caller's write: blocked | caller's write: ERRNO
    open: ok | open: ERRNO
    modes: same | modes: changed
    exclusive: no | exclusive: yes
    flags: same | flags: changed (O_...)
Exits 99 when CMD or the caller is not done within 30 s.
"""
import errno
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import time

TIOCGEXCL = 0x80045440  # _IOR('T', 0x40, int)
NOBODY = 65534


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno))


class Blocked(Exception):
    pass


def caller(slave, report, cmd):
    """The session leader on the pty: run CMD, then act as the shell."""
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    pid = os.fork()
    if pid == 0:
        os.close(report)
        os.execvp(cmd[0], cmd)
    os.write(report, b'pid %d\n' % pid)
    _, status = os.waitpid(pid, 0)
    lines = ['exit %d' % os.waitstatus_to_exitcode(status)]
    try:
        fg = os.tcgetpgrp(0)
        lines.append('foreground: ' + ('caller' if fg == os.getpgrp() else 'another group'))
    except OSError as e:
        lines.append('foreground: ' + errname(e))

    def give_up(signum, frame):
        raise Blocked()

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(5)
    try:
        os.write(1, b'caller writes\n')
        lines.append("caller's write: ok")
    except Blocked:
        lines.append("caller's write: blocked")
    except OSError as e:
        lines.append("caller's write: " + errname(e))
    signal.alarm(0)
    os.write(report, ('\n'.join(lines) + '\n').encode())
    os._exit(0)


def open_as_nobody(path):
    """'ok' or the errno name of an open of path by a process that is not root."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.close(os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK))
            os.write(w, b'ok')
        except OSError as e:
            os.write(w, errname(e).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, 'rb') as f:
        return f.read().decode()


def flag_names(flags):
    names = [n for n in ('O_NONBLOCK', 'O_APPEND', 'O_ASYNC') if flags & getattr(os, n)]
    return ' '.join(names) or hex(flags)


def main(argv):
    killinit = argv[0] == '--killinit'
    if killinit:
        argv = argv[1:]
    if not argv or argv[0] != '--' or len(argv) < 2:
        sys.exit('usage: term_caller.py [--killinit] -- CMD [ARG...]')
    cmd = argv[1:]
    master, slave = os.openpty()
    path = os.ttyname(slave)
    if os.geteuid() == 0:
        os.fchown(slave, NOBODY, -1)
    modes = termios.tcgetattr(slave)
    flags = fcntl.fcntl(slave, fcntl.F_GETFL)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.close(r)
        caller(slave, w, cmd)
    os.close(w)
    os.set_blocking(master, False)
    shown, report = bytearray(), bytearray()
    report_open, cmd_pid, done = True, None, False
    deadline = time.monotonic() + 30
    while True:
        done = done or os.waitpid(pid, os.WNOHANG)[0] == pid
        if done and not report_open:
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            if not done:
                os.waitpid(pid, 0)
            print('TIMEOUT; the terminal showed:\n%s\nthe caller said:\n%s' %
                  (shown.decode('utf-8', 'replace'), report.decode()))
            sys.exit(99)
        ready = select.select([master] + ([r] if report_open else []), [], [], 0.05)[0]
        if master in ready:
            try:
                shown.extend(os.read(master, 4096))
            except BlockingIOError:
                pass
        if r in ready:
            data = os.read(r, 4096)
            report.extend(data)
            report_open = bool(data)
        if cmd_pid is None and report.startswith(b'pid ') and b'\n' in report:
            cmd_pid = int(report[4:report.index(b'\n')])
        if killinit and cmd_pid and fcntl.fcntl(slave, fcntl.F_GETFL) & os.O_NONBLOCK:
            with open('/proc/%d/task/%d/children' % (cmd_pid, cmd_pid)) as f:
                os.kill(int(f.read().split()[0]), signal.SIGKILL)
            killinit = False
    while True:
        try:
            data = os.read(master, 4096)
        except BlockingIOError:
            break
        if not data:
            break
        shown.extend(data)
    text = shown.decode('utf-8', 'replace').replace('\r', '')
    sys.stdout.write(text if text.endswith('\n') or not text else text + '\n')
    sys.stdout.write(report.decode().split('\n', 1)[1])
    print('open: ' + open_as_nobody(path))
    print('modes: ' + ('same' if termios.tcgetattr(slave) == modes else 'changed'))
    excl = struct.unpack('i', fcntl.ioctl(slave, TIOCGEXCL, struct.pack('i', 0)))[0]
    print('exclusive: ' + ('yes' if excl else 'no'))
    now = fcntl.fcntl(slave, fcntl.F_GETFL)
    print('flags: ' + ('same' if now == flags else 'changed (%s)' % flag_names(now ^ flags)))


main(sys.argv[1:])
