"""HTTP/1.1 with keep-alive, over http.client, for JSON requests to silt.

A ``Connection`` is one socket kept open between requests, used by one
thread at a time. ``Transport`` hands each thread its own ``Connection``
(a thread-local), which makes the client thread-safe without a lock on the
hot path; the worker also makes dedicated connections for its claimer,
heartbeats and ends, so a parked claim never delays a heartbeat.

Reuse of a kept-alive socket has one trap: the server closes idle
connections (``HTTP_IDLE_TIMEOUT_MS``, or a restart), and the next request
on it fails although the server never saw it. Before reusing a socket we
poll it: an idle socket that is readable has been closed by the peer, so
we reconnect first. A request that still fails while being *sent* on a
reused socket is retried once on a new one (the server cannot have acted
on a request it did not receive whole); a failure while reading the
answer is retried only for GET, which changes nothing.
"""

import http.client
import json
import select
import socket
import ssl
import threading
import urllib.parse

from .errors import SiltError, TransportError

__all__ = ["Endpoint", "Connection", "Transport", "Reply", "raise_for_status"]

_USER_AGENT = "silt-python/0.1"

# Errors that mean "the connection was gone before the request reached the
# server": worth one retry on a fresh connection (see the module comment).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Endpoint:
    """Where the server is and the headers every request carries."""

    def __init__(self, url, token=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be http://host[:port] or https://host[:port], not {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "User-Agent": _USER_AGENT}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def new_connection(self, timeout):
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)


class Reply:
    """A server's answer: the HTTP status and the decoded JSON body (None
    when the body was empty)."""

    __slots__ = ("status", "data")

    def __init__(self, status, data):
        self.status = status
        self.data = data


def raise_for_status(reply):
    """Raises SiltError for a reply of 400 or more; returns its data otherwise."""
    if reply.status < 400:
        return reply.data
    data = reply.data if isinstance(reply.data, dict) else {}
    message = data.get("error") or f"HTTP {reply.status}"
    raise SiltError(reply.status, message, data.get("field"), data)


def _encode(body):
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


def _decode(status, data):
    if not data:
        return Reply(status, None)
    try:
        return Reply(status, json.loads(data))
    except ValueError:
        if status >= 400:   # an error page that is not JSON: keep its text
            return Reply(status, {"error": data.decode("utf-8", "replace").strip()[:500]})
        raise TransportError(f"the server answered {status} with a body that is not JSON") from None


def _peer_closed(sock):
    """True when an idle kept-alive socket is readable: the peer closed it
    (an idle HTTP connection has nothing else to say). Over TLS a readable
    socket may only carry a session ticket: reading it tells them apart."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if not poller.poll(0):
        return False
    if not isinstance(sock, ssl.SSLSocket):
        return True
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        sock.recv(1)   # b"": closed; a byte: out of turn; either way not reusable
        return True
    except ssl.SSLWantReadError:
        return False   # only TLS housekeeping: the connection is fine
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)


class Connection:
    """One keep-alive connection; one request at a time.

    ``abort_write()`` and ``abort()`` may be called from another thread to
    end a request in flight (the worker's stop uses them on its parked
    claim); after either, every request on this connection fails at once.
    """

    def __init__(self, endpoint):
        self._endpoint = endpoint
        self._conn = None
        self._lock = threading.Lock()   # guards _aborted and _sock against abort() from another thread
        self._aborted = False
        self._sock = None

    def request(self, method, path, body=None, timeout=30.0):
        """Sends one request; returns a Reply. Raises TransportError when no
        answer could be read. ``body`` is a JSON-able value, or bytes/str
        already encoded."""
        payload = _encode(body)
        target = self._endpoint.prefix + path
        try:
            return self._exchange(method, target, payload, timeout)
        except TransportError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise TransportError(f"{method} {path}: {exc or type(exc).__name__}") from exc

    def _exchange(self, method, target, payload, timeout):
        reused = self._conn is not None
        conn = self._open(timeout)
        try:
            conn.request(method, target, body=payload, headers=self._endpoint.headers)
        except _STALE:
            if not reused:
                raise
            self.close()   # sent on a socket the server had closed: it saw nothing
            conn = self._open(timeout)
            conn.request(method, target, body=payload, headers=self._endpoint.headers)
        try:
            response = conn.getresponse()
        except _STALE:
            if not (reused and method == "GET"):
                raise
            self.close()
            conn = self._open(timeout)
            conn.request(method, target, body=payload, headers=self._endpoint.headers)
            response = conn.getresponse()
        data = response.read()
        if response.will_close:
            self.close()
        else:
            with self._lock:
                self._sock = None
        return _decode(response.status, data)

    def _open(self, timeout):
        """The connection to send on, connected, with this request's timeout."""
        if self._aborted:
            raise TransportError("the connection was aborted")
        conn = self._conn
        if conn is not None and (conn.sock is None or _peer_closed(conn.sock)):
            self.close()
            conn = None
        if conn is None:
            conn = self._conn = self._endpoint.new_connection(timeout)
            conn.connect()
        conn.sock.settimeout(timeout)
        with self._lock:   # abort() may have come between the check above and now
            aborted = self._aborted
            self._sock = None if aborted else conn.sock
        if aborted:
            self.close()
            raise TransportError("the connection was aborted")
        return conn

    def abort_write(self):
        """Half-closes the socket of the request in flight: the server sees
        the client leave (a parked claim gives back what it took and answers
        204) while a reply already on its way can still be read."""
        self._shutdown(socket.SHUT_WR)

    def abort(self):
        """Shuts the socket of the request in flight down both ways: a
        blocked read returns at once."""
        self._shutdown(socket.SHUT_RDWR)

    def _shutdown(self, how):
        with self._lock:
            self._aborted = True
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(how)
            except OSError:
                pass   # already closed: nothing in flight to end

    def close(self):
        conn, self._conn = self._conn, None
        with self._lock:
            self._sock = None
        if conn is not None:
            conn.close()


class Transport:
    """A Connection per thread to one endpoint: thread-safe requests with
    keep-alive, no locks shared between threads."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self._local = threading.local()

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = Connection(self.endpoint)
        return conn

    def request(self, method, path, body=None, timeout=30.0):
        """One request on this thread's connection; returns a Reply."""
        return self.connection().request(method, path, body, timeout)

    def call(self, method, path, body=None, timeout=30.0):
        """One request; returns the decoded reply or raises SiltError."""
        return raise_for_status(self.request(method, path, body, timeout))
