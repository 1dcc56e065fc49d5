#!/usr/bin/env python3
"""tests/lib/token_issuer.py — a small token service for the distribution
registry's token auth (docker-registry's `auth: token:`), for the registry
tests only.

    token_issuer.py --port-file F --tls-cert C --tls-key K \
        --sign-key SK --service S --issuer I --user U --password P

Serves GET /token?service=S&scope=repository:NAME:ACTIONS over HTTPS on
127.0.0.1 (a free port, written to --port-file once listening).  Anonymous
callers get `pull` on every repository outside private/; callers with the
right basic credentials get what they ask for; wrong credentials get 401.
The token is an RS256 JWT whose `kid` is the libtrust key id of the signing
key, which is how the registry finds the key in its rootcertbundle.
"""
import argparse
import base64
import hashlib
import json
import time
import uuid
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

from tls_serve import serve_tls

import jwt
from cryptography.hazmat.primitives import serialization


def libtrust_kid(public_key):
    der = public_key.public_bytes(serialization.Encoding.DER,
                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    b32 = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode().rstrip("=")
    return ":".join(b32[i:i + 4] for i in range(0, len(b32), 4))


def main():
    ap = argparse.ArgumentParser()
    for opt in ("port-file", "tls-cert", "tls-key", "sign-key", "service", "issuer", "user", "password"):
        ap.add_argument("--" + opt, required=True)
    args = ap.parse_args()
    with open(args.sign_key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    kid = libtrust_kid(key.public_key())
    good = "Basic " + base64.b64encode(f"{args.user}:{args.password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            url = urlparse(self.path)
            if url.path != "/token":
                self.send_error(404)
                return
            q = parse_qs(url.query)
            auth = self.headers.get("Authorization")
            if auth is not None and auth != good:
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"details":"wrong credentials"}')
                return
            access = []
            for scope in q.get("scope", []):
                for one in scope.split(" "):
                    parts = one.split(":")
                    if len(parts) != 3 or parts[0] != "repository":
                        continue
                    name, actions = parts[1], parts[2].split(",")
                    if auth is None:
                        actions = [a for a in actions if a == "pull" and not name.startswith("private/")]
                    access.append({"type": "repository", "name": name, "actions": actions})
            now = int(time.time())
            claims = {"iss": args.issuer, "sub": args.user if auth else "", "aud": q.get("service", [""])[0],
                      "exp": now + 600, "nbf": now - 10, "iat": now, "jti": uuid.uuid4().hex,
                      "access": access}
            tok = jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
            body = json.dumps({"token": tok, "access_token": tok, "expires_in": 600}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    serve_tls(Handler, args.tls_cert, args.tls_key, args.port_file)


if __name__ == "__main__":
    main()
