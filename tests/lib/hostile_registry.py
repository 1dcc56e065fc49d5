#!/usr/bin/env python3
"""tests/lib/hostile_registry.py — registries that never finish an answer,
and one whose token service is somewhere else in clear, for the registry
tests only (the real registry does none of this).

    hostile_registry.py --port-file F --mode MODE [--tls-cert C --tls-key K]
                        [--canary FILE]

Every GET is answered as MODE says, over HTTPS on 127.0.0.1 (a free port,
written to --port-file once listening):

  errbody  500 with a chunked body that never ends, sent as fast as it goes
  trickle  500 with a chunked body that never ends, at 4 KiB/s
  headers  200 whose header lines never end
  stall    200 with a Content-Length of 1 MiB, 100 bytes of it, then nothing
  blob     a well-formed image (manifest, config) whose one 4 KiB layer
           blob trickles at 100 bytes a second
  realm    plain HTTP, two ports ("A B" in --port-file): A answers every
           request 401 with a Bearer challenge whose realm is
           http://127.0.0.1:B/token; B is that token service, and creates
           --canary when a request reaches it carrying an Authorization
           header (the credentials gpurun must not send there).
"""
import argparse
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tls_serve import serve_tls


def hold():
    # The connection stays open with nothing more on it; the test kills us.
    while True:
        time.sleep(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode", choices=("errbody", "trickle", "headers", "stall", "realm", "blob"), required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--canary")
    args = ap.parse_args()
    realm = {}

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

        def answer_trickle(self):
            self.wfile.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
            frame = b"400\r\n%s\r\n" % (b" " * 1024)
            while True:
                self.wfile.write(frame)
                self.wfile.flush()
                time.sleep(0.25)

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

        def send_doc(self, ctype, body):
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())
            self.end_headers()
            self.wfile.write(body)

        def answer_blob(self):
            layer = b"\0" * 4096  # never sent whole: only its digest matters
            config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                 "rootfs": {"type": "layers", "diff_ids": [
                                     "sha256:" + hashlib.sha256(layer).hexdigest()]}}).encode()
            manifest = json.dumps({
                "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": "sha256:" + hashlib.sha256(config).hexdigest(), "size": len(config)},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                            "digest": "sha256:" + hashlib.sha256(layer).hexdigest(),
                            "size": len(layer)}]}).encode()
            if "/manifests/" in self.path:
                self.send_doc("application/vnd.oci.image.manifest.v1+json", manifest)
            elif self.path.endswith(hashlib.sha256(config).hexdigest()):
                self.send_doc("application/vnd.oci.image.config.v1+json", config)
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(layer)))
                self.end_headers()
                for _ in range(len(layer) // 100):
                    self.wfile.write(b"\0" * 100)
                    self.wfile.flush()
                    time.sleep(1)
                hold()

        def answer_realm(self):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="http://127.0.0.1:%d/token",service="hostile"'
                             % realm["token_port"])
            self.send_header("Content-Type", "application/json")
            body = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Token(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.headers.get("Authorization") is not None:
                open(args.canary, "w").close()
            body = json.dumps({"token": "anonymous-hostile-token"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    if args.mode != "realm":
        serve_tls(Handler, args.tls_cert, args.tls_key, args.port_file)
        return
    token = ThreadingHTTPServer(("127.0.0.1", 0), Token)
    reg = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    realm["token_port"] = token.server_address[1]
    for srv in (token, reg):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d" % (reg.server_address[1], token.server_address[1]))
    os.rename(tmp, args.port_file)
    threading.Event().wait()


if __name__ == "__main__":
    main()
