#!/usr/bin/env python3
# A local HTTP/1.1 server for the HTTP engine's tests and benchmark: one thread per connection
# (keep-alive), a deep listen backlog for 1,000+ concurrent connections, and a few behaviours by path.
#
#   /delay/<ms>     answer "ok" after <ms> milliseconds
#   /status/<code>  answer with that status and body "status <code>"
#   /bytes/<n>      answer n bytes of 'x'
#   /stream/<n>     n bytes of 'x' without Content-Length (ends by closing the connection)
#   /echo           answer with the request body; each request header comes back as x-got-<name>
#   /headers        answer with repeated and mixed-case headers
#   /stats          the number of connections accepted so far (for connection-reuse checks)
#
# Usage: test_http_server.py [PORT [CERT KEY]]: with CERT and KEY (PEM files) it speaks HTTPS.
# Prints "PORT <n>" on stdout once it listens on 127.0.0.1 (port 0 = ephemeral by default).
import http.server
import resource
import socketserver
import ssl
import sys
import threading
import time

accepted = 0
accepted_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, fmt, *args):  # quiet: the tests' output stays readable
        pass

    def setup(self):
        global accepted
        with accepted_lock:
            accepted += 1
        super().setup()

    def reply(self, code, body, headers=()):
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        parts = self.path.split("?")[0].strip("/").split("/")
        route = parts[0]
        arg = parts[1] if len(parts) > 1 else ""
        if route == "delay":
            time.sleep(int(arg) / 1000.0)
            self.reply(200, b"ok")
        elif route == "status":
            self.reply(int(arg), ("status %s" % arg).encode())
        elif route == "bytes":
            self.reply(200, b"x" * int(arg))
        elif route == "stream":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            chunk = b"x" * 65536
            left = int(arg)
            try:
                while left > 0:
                    n = min(left, len(chunk))
                    self.wfile.write(chunk[:n])
                    left -= n
            except OSError:  # the client gave up (size limit): expected
                pass
        elif route == "echo":
            headers = [("X-Method", self.command)]
            headers += [("X-Got-" + k, v) for k, v in self.headers.items()]
            self.reply(200, body, headers)
        elif route == "headers":
            self.reply(200, b"", [("X-Multi", "a"), ("x-multi", "b"), ("X-Mixed-Case", "  v  ")])
        elif route == "stats":
            with accepted_lock:
                n = accepted
            self.reply(200, str(n).encode())
        else:
            self.reply(404, b"no such route")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 4096
    allow_reuse_address = True


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:  # one descriptor per connection
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
    threading.stack_size(256 * 1024)  # 1,000+ handler threads stay small
    server = Server(("127.0.0.1", port), Handler)
    if len(sys.argv) > 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
