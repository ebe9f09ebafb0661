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
    {"status": {"channel.json": 500}}      answer with this status and a short text body (none for 304)
    {"redirect": {"channel.json": "/b.json"}} answer 302 with this Location (and a short text body)
    {"oversize": ["channel.json"]}         stream 256 MiB of spaces, no Content-Length, until the client leaves
    {"rangeStatus": {"seed.sqlite": 416}}  answer a request with a Range header with this status
    {"trickle": {"channel.json": 0.2}}     send the body one byte at a time, this many seconds apart
    {"trickleAfter": {"seed.sqlite": [5000, 1.0]}}
                                           send 5000 body bytes at once, then one byte a second (a slow
                                           retrieval: never silent long enough for an idle timeout)
    {"ignoreRange": ["seed.sqlite"]}       answer a Range with 200 and the whole file (a host without ranges)
    {"rangeFlipped": ["seed.sqlite"]}      answer a Range with 206 and the right Content-Range, but every
                                           byte inverted (the file changed under the same validator)
    {"contentRange": {"seed.sqlite": "bytes 0-9/10"}}
                                           answer a Range with 206 and this Content-Range (the bytes asked for)
    {"once": {"channel.json": "old.json"}} serve ROOT/old.json in its place, to the next request only
    {"gzip": {"channel.json": 1024}}       answer 200 with Content-Encoding: gzip, whatever the request asked
                                           for, and no Content-Length: a gzip bomb (about 1 KB a MiB) that
                                           inflates to this many MiB
And switches for every file:
    {"rate": 2500000}                      send every body at most this many bytes a second (a throttled link)
    {"validators": {"etag": false, "lastModified": DATE, "date": DATE}}
                                           send no ETag (a host that has none), and this Last-Modified and
                                           Date (HTTP dates) instead of the file's mtime and the clock; a
                                           request whose If-Modified-Since is not older than DATE gets 304

Each request is logged, before its response is sent, as one JSON line in the log file:
    {"method", "path", "range", "ifRange", "ifNoneMatch", "ifModifiedSince", "status"}
and when its body ends (or the client leaves): {"done": path, "sent": body bytes written}.
"""
import email.utils
import json
import os
import signal
import struct
import sys
import threading
import time
import zlib
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


BOMBS = {}
BOMBS_LOCK = threading.Lock()


def bomb(mebibytes):
    """A gzip stream of `mebibytes` MiB of spaces (about 1 KB on the wire per MiB), made once.

    One MiB is deflated once, ending in a full flush (which resets the compressor), so the same
    bytes stand for every further MiB: no need to deflate the whole of it.
    """
    with BOMBS_LOCK:
        if mebibytes not in BOMBS:
            block = b" " * (1024 * 1024)
            deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
            piece = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
            crc = 0
            for _ in range(mebibytes):
                crc = zlib.crc32(block, crc)
            last = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
            header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
            trailer = struct.pack("<II", crc, (mebibytes * len(block)) & 0xFFFFFFFF)
            BOMBS[mebibytes] = header + piece * mebibytes + last + trailer
        return BOMBS[mebibytes]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def date_time_string(self, timestamp=None):
        # The Date header, replaced by the "validators" switch.
        fixed = control().get("validators", {}).get("date")
        return fixed if fixed is not None and timestamp is None else super().date_time_string(timestamp)

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
        if name in switches.get("redirect", {}):
            log(dict(entry, status=302))
            data = b"moved\n"
            self.send_response(302)
            self.send_header("Location", switches["redirect"][name])
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            log({"done": entry["path"], "sent": len(data)})
            return
        if name in switches.get("oversize", []):
            return self.oversize(entry)
        if name in switches.get("gzip", {}):
            return self.gzip_bomb(entry, int(switches["gzip"][name]))
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
        validators = switches.get("validators", {})
        etag = etag_of(info) if validators.get("etag", True) else None
        modified = validators.get("lastModified") or email.utils.formatdate(info.st_mtime, usegmt=True)
        if self.not_modified(etag, modified):
            log(dict(entry, status=304))
            self.send_response(304)
            if etag:
                self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
            self.send_header("Content-Length", "0")
            self.end_headers()
            log({"done": "/" + name, "sent": 0})
            return
        size = info.st_size
        start, end, status = 0, size - 1, 200
        wanted = self.headers.get("Range")
        if wanted and name in switches.get("ignoreRange", []):
            wanted = None
        if wanted and (self.headers.get("If-Range") in (None, etag, modified)):
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
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if status == 206:
            self.send_header("Content-Range", switches.get("contentRange", {}).get(name, "bytes %d-%d/%d" % (start, end, size)))
        self.end_headers()
        if head:
            return
        cut = switches.get("cut", {}).get(name)
        stall = switches.get("stall", {}).get(name)
        if stall is not None:
            cut = stall
        pause = switches.get("trickle", {}).get(name)
        quick, slow = switches.get("trickleAfter", {}).get(name, [None, None])
        flipped = status == 206 and name in switches.get("rangeFlipped", [])
        rate = switches.get("rate")
        began = time.monotonic()
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
                    if quick is not None:
                        if sent >= quick:
                            count = 1
                            time.sleep(float(slow))
                        else:
                            count = min(count, quick - sent)
                    if cut is not None:
                        count = min(count, cut - sent)
                        if count <= 0:
                            break
                    data = f.read(count)
                    if not data:
                        break
                    if flipped:
                        data = bytes(b ^ 0xFF for b in data)
                    self.wfile.write(data)
                    if quick is not None:
                        self.wfile.flush()
                    sent += len(data)
                    remaining -= len(data)
                    if rate:
                        # Throttled: never ahead of `rate` bytes a second since the body began.
                        ahead = sent / float(rate) - (time.monotonic() - began)
                        if ahead > 0:
                            time.sleep(ahead)
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

    def not_modified(self, etag, modified):
        tags = self.headers.get("If-None-Match")
        if tags is not None:
            return etag in [t.strip() for t in tags.split(",")] or tags.strip() == "*"
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                return email.utils.parsedate_to_datetime(modified) <= email.utils.parsedate_to_datetime(since)
            except (TypeError, ValueError):
                return False
        return False

    def text(self, entry, status, body):
        log(dict(entry, status=status))
        # A 304 (a mirror that says "not modified" whatever changed) has no body, as HTTP requires.
        data = b"" if status in (204, 304) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        log({"done": entry["path"], "sent": len(data)})

    def gzip_bomb(self, entry, mebibytes):
        body = bomb(mebibytes)
        log(dict(entry, status=200))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        # No Content-Length (the body ends when the connection closes), so no client refuses
        # it for its announced size: only what it decodes counts.
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        try:
            # All at once: what the client decodes before it reacts is up to the client.
            self.wfile.write(body)
            sent = len(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        log({"done": entry["path"], "sent": sent})

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
