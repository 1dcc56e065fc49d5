#!/usr/bin/env python3
"""tests/lib/hostile_registry.py — registries that never finish an answer,
for the registry tests only (the real registry does none of this).

    hostile_registry.py --port-file F --mode MODE --tls-cert C --tls-key K

Every GET is answered as MODE says, over HTTPS on 127.0.0.1 (a free port,
written to --port-file once listening):

  errbody  500 with a chunked body that never ends, sent as fast as it goes
  headers  200 whose header lines never end
  stall    200 with a Content-Length of 1 MiB, 100 bytes of it, then nothing
"""
import argparse
import time
from http.server import BaseHTTPRequestHandler

from tls_serve import serve_tls


def hold():
    # The connection stays open with nothing more on it; the test kills us.
    while True:
        time.sleep(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode", choices=("errbody", "headers", "stall"), required=True)
    ap.add_argument("--tls-cert", required=True)
    ap.add_argument("--tls-key", required=True)
    args = ap.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            try:
                getattr(self, "answer_" + args.mode)()
            except OSError:
                pass

        def answer_errbody(self):
            self.wfile.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b'{"errors":[' + b" " * 16000
            frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
            while True:
                self.wfile.write(frame)

        def answer_headers(self):
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            line = b"X-Pad: " + b"x" * 1000 + b"\r\n"
            while True:
                self.wfile.write(line)
                self.wfile.flush()

        def answer_stall(self):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n"
                             b"Content-Length: 1048576\r\n\r\n" + b" " * 100)
            self.wfile.flush()
            hold()

    serve_tls(Handler, args.tls_cert, args.tls_key, args.port_file)


if __name__ == "__main__":
    main()
