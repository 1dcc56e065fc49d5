"""tests/lib/tls_serve.py — what the tests' small HTTPS servers share: serve a
handler class on 127.0.0.1 (a free port) behind a throw-away certificate,
announce the port through a file (written whole, by rename, so a reader never
sees half a number), and serve until killed."""
import os
import ssl
import threading
from http.server import ThreadingHTTPServer


def serve_tls(handler, cert, key, port_file):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, port_file)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    threading.Event().wait()
