"""A lean HTTP/1.1 transport for the openai client's plain-HTTP requests to a model server.

Why: at the request rates a study reaches against a local or self-hosted server (vLLM,
llama.cpp, LM Studio on `http://`), the client's own CPU per request decides how busy it
can keep the server (`benchmarks/throughput.py`). httpx2's default transport (httpcore2 +
h11, a connection pool with its locks and events) cost more GIL-held CPU per model call
than the standard library's `http.client` on one kept-alive connection per thread:
measured on the whole evaluate study (`benchmarks/throughput.py --latency 0.1 --n 12
--concurrency 1,16`), 10.5 → 9.7 ms per call at concurrency 1 and 12.0 → 10.0 ms at 16.

What it is: an `httpx2.BaseTransport`, mounted under the official client
(`openai.DefaultHttpxClient(mounts={"http://": KeepAliveTransport()})`), so the openai
client still builds every request, sets its headers, maps errors and statuses; only the
bytes on the wire go through `http.client`. The transport:

* keeps one connection per (thread, host, port), reused while the server keeps it alive;
  before reusing one it checks that the server has not closed it meanwhile (an idle
  keep-alive timeout) and connects anew if so. It never sends a request twice: a failed
  exchange is an error, and `RemoteBackend` decides whether to retry (and counts it);
* honours the request's timeouts (`request.extensions["timeout"]`: connect and read);
* raises httpx2's own exceptions (`ConnectError`, `ConnectTimeout`, `ReadTimeout`,
  `RemoteProtocolError`, `ReadError`), which the openai client turns into
  `APIConnectionError` / `APITimeoutError` as it does for its default transport;
* returns the body as read (de-chunked by `http.client`) with the server's headers;
  httpx2 decodes a `Content-Encoding` as it always does.

Not used for `https://` (TLS, certificates and proxies stay with httpx2's default), nor
when an HTTP proxy applies to the host (`use_keep_alive`).
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import urllib.request
from urllib.parse import urlsplit

import httpx2

__all__ = ["KeepAliveTransport", "proxy_for", "use_keep_alive"]


def use_keep_alive(base_url: str | None) -> bool:
    """Is `base_url` a plain-HTTP server reached without a proxy (the transport's scope)?"""
    if not base_url:
        return False
    parts = urlsplit(base_url)
    return parts.scheme == "http" and bool(parts.hostname) and proxy_for(base_url) is None


def proxy_for(base_url: str | None) -> str | None:
    """The proxy the environment (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`)
    sends requests to `base_url` through, as scheme://host:port (credentials left out:
    it goes into error messages), or None."""
    parts = urlsplit(base_url or "")
    if not parts.hostname:
        return None
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname):
        return None
    where = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = f":{where.port}" if where.port else ""
    return f"{where.scheme}://{where.hostname}{port}"  # never its user or password


class KeepAliveTransport(httpx2.BaseTransport):
    """Plain HTTP/1.1 over `http.client`, one kept-alive connection per thread and server
    (see the module docstring)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[http.client.HTTPConnection] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx2.UnsupportedProtocol(f"KeepAliveTransport serves http://, not {url}",
                                             request=request)
        timeout = request.extensions.get("timeout") or {}
        key = (url.host, url.port or 80)
        conn = self._connection(key)
        try:
            if conn.sock is None:
                _connect(conn, timeout.get("connect"))
            status, headers, content, closing = _exchange(conn, request, timeout.get("read"))
        except BaseException as exc:
            self._drop(key)
            raise _mapped(exc, request) from exc
        if closing:  # the server closes the connection after this reply
            self._drop(key)
        return httpx2.Response(status, headers=headers, content=content, request=request)

    def _connection(self, key: tuple[str, int]) -> http.client.HTTPConnection:
        """This thread's connection to `key`: the kept-alive one unless the server has
        closed it meanwhile (an idle timeout), else a new, not yet connected one."""
        conns = self._conns()
        conn = conns.get(key)
        if conn is not None and conn.sock is not None and not _closed_by_peer(conn.sock):
            return conn
        if conn is not None:
            conn.close()
        conn = conns[key] = http.client.HTTPConnection(key[0], key[1])
        with self._lock:
            self._all.append(conn)
        return conn

    def _conns(self) -> dict[tuple[str, int], http.client.HTTPConnection]:
        conns: dict[tuple[str, int], http.client.HTTPConnection] | None = getattr(
            self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        return conns

    def _drop(self, key: tuple[str, int]) -> None:
        conn = self._conns().pop(key, None)
        if conn is not None:
            conn.close()
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()


class _ConnectFailed(Exception):
    """Connecting failed (`timed_out`: by the connect timeout)."""

    def __init__(self, message: str, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def _connect(conn: http.client.HTTPConnection, timeout: float | None) -> None:
    conn.timeout = timeout
    try:
        conn.connect()
    except TimeoutError as exc:
        raise _ConnectFailed(str(exc) or "connect timed out", timed_out=True) from exc
    except OSError as exc:
        raise _ConnectFailed(str(exc) or type(exc).__name__, timed_out=False) from exc


def _closed_by_peer(sock: socket.socket) -> bool:
    """Has the server closed this idle connection? (An idle kept-alive socket that is
    readable holds an end of file, or a stray byte no reply of ours can start with.)"""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _exchange(conn: http.client.HTTPConnection, request: httpx2.Request,
              read_timeout: float | None) -> tuple[int, list[tuple[str, str]], bytes, bool]:
    """Send `request` on the connected `conn` and read the whole reply: (status, headers,
    body, whether the server closes the connection after it)."""
    assert conn.sock is not None
    conn.sock.settimeout(read_timeout)
    conn.putrequest(request.method, request.url.raw_path.decode("ascii"), skip_host=True,
                    skip_accept_encoding=True)
    for name, value in request.headers.multi_items():
        conn.putheader(name, value)
    conn.endheaders(request.read() or None)
    reply = conn.getresponse()
    content = reply.read()
    return reply.status, reply.getheaders(), content, bool(reply.will_close)


def _mapped(exc: BaseException, request: httpx2.Request) -> BaseException:
    """httpx2's exception for a failure of `http.client` or the socket (what the openai
    client classifies); httpx2's own and anything else pass unchanged."""
    if isinstance(exc, _ConnectFailed):
        kind = httpx2.ConnectTimeout if exc.timed_out else httpx2.ConnectError
        return kind(str(exc), request=request)
    if isinstance(exc, httpx2.HTTPError):
        return exc
    if isinstance(exc, TimeoutError):
        return httpx2.ReadTimeout(str(exc) or "read timed out", request=request)
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return httpx2.RemoteProtocolError(f"{type(exc).__name__}: {exc}", request=request)
    if isinstance(exc, OSError):
        return httpx2.ReadError(str(exc) or type(exc).__name__, request=request)
    return exc
