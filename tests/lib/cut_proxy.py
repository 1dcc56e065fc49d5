#!/usr/bin/env python3
"""tests/lib/cut_proxy.py — a TCP relay in front of the test registry that
breaks one transfer in the middle, for the registry tests only.

    cut_proxy.py --port-file F --to PORT --cut BYTES --mode once|stop|hold
                 [--port P] [--release FILE]

Relays 127.0.0.1:P (a free port when P is 0; written to --port-file once
listening) to 127.0.0.1:PORT, TLS and all, bytes untouched.  The first
connection that carries more than BYTES from the server to the client is
cut there (both sockets closed).  --mode once: later connections pass
through, so the client's retry (a Range request) completes the blob.
--mode stop: the relay also stops listening and exits, as a server that
went away does.  --mode hold: that connection is not cut but paused there
until FILE exists (a blob that has half arrived, for as long as a test
needs).
"""
import argparse
import os
import socket
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--to", type=int, required=True)
    ap.add_argument("--cut", type=int, required=True)
    ap.add_argument("--mode", choices=("once", "stop", "hold"), required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--release")
    args = ap.parse_args()
    state = {"cut": False}
    lock = threading.Lock()
    done = threading.Event()

    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.port))
    lsock.listen(16)

    def pipe(src, dst, count):
        sent = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if count:
                    with lock:
                        cut_now = not state["cut"] and sent + len(data) > args.cut
                        if cut_now:
                            state["cut"] = True
                    if cut_now and args.mode == "stop":
                        # The server goes away before the cut is seen: a
                        # retry must find nothing listening (shutdown also
                        # wakes the accept() blocked in serve()).
                        try:
                            lsock.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                    if cut_now:
                        dst.sendall(data[:max(0, args.cut - sent)])
                        if args.mode != "hold":
                            break
                        while not os.path.exists(args.release):
                            time.sleep(0.05)
                        dst.sendall(data[max(0, args.cut - sent):])
                        sent += len(data)
                        continue
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if count and state["cut"] and args.mode == "stop":
            done.set()

    def serve():
        while not done.is_set():
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", args.to))
            threading.Thread(target=pipe, args=(c, u, False), daemon=True).start()
            threading.Thread(target=pipe, args=(u, c, True), daemon=True).start()

    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(lsock.getsockname()[1]))
    os.rename(tmp, args.port_file)
    threading.Thread(target=serve, daemon=True).start()
    done.wait()
    lsock.close()


if __name__ == "__main__":
    main()
