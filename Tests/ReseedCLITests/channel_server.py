#!/usr/bin/env python3
"""A static HTTP server of one channel folder, for the update tests. Listens on 127.0.0.1 only.

    channel_server.py ROOT --control FILE --log FILE

Prints "PORT <n>" on stdout once it listens on an ephemeral port. Serves the plain files of ROOT
with ETag and Last-Modified, answers 304 to a matching If-None-Match (or, without one, to an
If-Modified-Since not older than the file), and 206 to a Range (honouring If-Range).

Before each request it reads the control file (JSON; absent or empty means no switch), keyed by
file name:
    {"cut": {"seed.sqlite": 5000}}        send the headers and 5000 body bytes, then drop the connection
    {"stall": {"seed.sqlite": 5000}}      send the headers and 5000 body bytes, then nothing more
    {"hang": ["channel.json"]}             read the request, answer nothing, keep the connection open
    {"status": {"channel.json": 500}}      answer with this status and a short text body
    {"oversize": ["channel.json"]}         stream 256 MiB of spaces, no Content-Length, until the client leaves
    {"rangeStatus": {"seed.sqlite": 416}}  answer a request with a Range header with this status
    {"trickle": {"channel.json": 0.2}}     send the body one byte at a time, this many seconds apart
    {"once": {"channel.json": "old.json"}} serve ROOT/old.json in its place, to the next request only

Each request is logged, before its response is sent, as one JSON line in the log file:
    {"method", "path", "range", "ifRange", "ifNoneMatch", "ifModifiedSince", "status"}
and when its body ends (or the client leaves): {"done": path, "sent": body bytes written}.
"""
import email.utils
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(sys.argv[1])
CONTROL = sys.argv[sys.argv.index("--control") + 1]
LOG = sys.argv[sys.argv.index("--log") + 1]
LOG_LOCK = threading.Lock()
CHUNK = 64 * 1024


def log(entry):
    with LOG_LOCK, open(LOG, "a") as out:
        out.write(json.dumps(entry) + "\n")
        out.flush()


def control():
    try:
        with open(CONTROL) as f:
            text = f.read()
        return json.loads(text) if text.strip() else {}
    except FileNotFoundError:
        return {}


def write_control(switches):
    temporary = CONTROL + ".tmp"
    with open(temporary, "w") as f:
        json.dump(switches, f)
    os.replace(temporary, CONTROL)


def etag_of(info):
    return '"%x-%x"' % (info.st_mtime_ns, info.st_size)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def serve(self, head):
        name = self.path.split("?", 1)[0].lstrip("/")
        switches = control()
        entry = {
            "method": self.command, "path": "/" + name,
            "range": self.headers.get("Range"), "ifRange": self.headers.get("If-Range"),
            "ifNoneMatch": self.headers.get("If-None-Match"), "ifModifiedSince": self.headers.get("If-Modified-Since"),
        }
        if name in switches.get("hang", []):
            log(dict(entry, status=None))
            time.sleep(3600)
            return
        if name in switches.get("status", {}):
            status = int(switches["status"][name])
            return self.text(entry, status, "switched to %d\n" % status)
        if name in switches.get("oversize", []):
            return self.oversize(entry)
        if self.headers.get("Range") and name in switches.get("rangeStatus", {}):
            status = int(switches["rangeStatus"][name])
            return self.text(entry, status, "switched to %d\n" % status)
        path = os.path.join(ROOT, name)
        substitute = switches.get("once", {}).pop(name, None)
        if substitute is not None:
            path = os.path.join(ROOT, substitute)
            write_control(switches)
        if not name or "/" in name or name.startswith(".") or not os.path.isfile(path):
            return self.text(entry, 404, "not found\n")
        info = os.stat(path)
        etag = etag_of(info)
        modified = email.utils.formatdate(info.st_mtime, usegmt=True)
        if self.not_modified(etag, info):
            log(dict(entry, status=304))
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
            self.send_header("Content-Length", "0")
            self.end_headers()
            log({"done": "/" + name, "sent": 0})
            return
        size = info.st_size
        start, end, status = 0, size - 1, 200
        wanted = self.headers.get("Range")
        if wanted and (self.headers.get("If-Range") in (None, etag)):
            spec = wanted.strip().removeprefix("bytes=")
            first, _, last = spec.partition("-")
            start = int(first)
            end = min(int(last), size - 1) if last else size - 1
            if start >= size:
                log(dict(entry, status=416))
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        log(dict(entry, status=status))
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if head:
            return
        cut = switches.get("cut", {}).get(name)
        stall = switches.get("stall", {}).get(name)
        if stall is not None:
            cut = stall
        pause = switches.get("trickle", {}).get(name)
        sent = 0
        try:
            with open(path, "rb") as f:
                f.seek(start)
                remaining = end - start + 1
                while remaining > 0:
                    count = min(CHUNK, remaining)
                    if pause is not None:
                        count = 1
                        time.sleep(float(pause))
                    if cut is not None:
                        count = min(count, cut - sent)
                        if count <= 0:
                            break
                    data = f.read(count)
                    if not data:
                        break
                    self.wfile.write(data)
                    sent += len(data)
                    remaining -= len(data)
        except (BrokenPipeError, ConnectionResetError):
            log({"done": "/" + name, "sent": sent})
            return
        self.wfile.flush()
        log({"done": "/" + name, "sent": sent})
        if stall is not None and remaining > 0:
            time.sleep(3600)
        if cut is not None and remaining > 0:
            self.close_connection = True
            self.connection.shutdown(2)

    def not_modified(self, etag, info):
        tags = self.headers.get("If-None-Match")
        if tags is not None:
            return etag in [t.strip() for t in tags.split(",")] or tags.strip() == "*"
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                return int(info.st_mtime) <= email.utils.parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError):
                return False
        return False

    def text(self, entry, status, body):
        log(dict(entry, status=status))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        log({"done": entry["path"], "sent": len(data)})

    def oversize(self, entry):
        log(dict(entry, status=200))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        block = b" " * CHUNK
        try:
            # Paced (64 KiB a millisecond at most), so what the client reads before it leaves is
            # measured against its own reaction, not against how fast loopback can pour bytes.
            while sent < 256 * 1024 * 1024:
                self.wfile.write(block)
                sent += len(block)
                time.sleep(0.001)
        except (BrokenPipeError, ConnectionResetError):
            pass
        log({"done": entry["path"], "sent": sent})


def main():
    # A child of a test runner may inherit a signal mask that blocks SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
