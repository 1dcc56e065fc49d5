#!/usr/bin/env python3
"""tests/lib/huge_manifest_server.py — the one fault the real registry
cannot serve: docker-registry itself refuses to read a manifest above
4 MiB, which is also gpurun's cap.  This HTTPS server answers /v2/ and
every manifest request with a JSON manifest of --size bytes (for the
registry tests only; everything else is 404).

    huge_manifest_server.py --port-file F --tls-cert C --tls-key K --size N
"""
import argparse
import json
from http.server import BaseHTTPRequestHandler

from tls_serve import serve_tls


def main():
    ap = argparse.ArgumentParser()
    for opt in ("port-file", "tls-cert", "tls-key"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--size", type=int, required=True)
    args = ap.parse_args()
    head = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": "sha256:" + "0" * 64, "size": 2},
            "layers": [], "annotations": {"pad": ""}}
    text = json.dumps(head)
    body = (text[:-3] + "x" * max(0, args.size - len(text)) + text[-3:]).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path == "/v2/" or "/manifests/" in self.path:
                data = b"{}" if self.path == "/v2/" else body
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass
            else:
                self.send_error(404)

    serve_tls(Handler, args.tls_cert, args.tls_key, args.port_file)


if __name__ == "__main__":
    main()
