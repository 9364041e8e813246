"""`cuer_agent.llm._http.KeepAliveTransport` against a real HTTP/1.1 server on 127.0.0.1:
connection reuse, a connection the server closed while idle, encoded and chunked
replies, and the errors the openai client classifies."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import openai
import pytest

from cuer_agent.errors import ConfigError
from cuer_agent.llm._http import KeepAliveTransport, use_keep_alive
from cuer_agent.llm.openai_backend import OpenAIBackend


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/slow":
            time.sleep(0.5)  # the client has given up by now: nothing to answer
            self.close_connection = True
            return
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"he", b"llo ", body):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        content = b"echo: " + body
        self.send_response(200)
        if self.path == "/gzip":
            content = gzip.compress(content)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)
        if self.path == "/then-close":  # no "Connection: close": the client learns later
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.connections = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(server: ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


@pytest.fixture
def client() -> Iterator[httpx2.Client]:
    with httpx2.Client(transport=KeepAliveTransport(), timeout=5) as http:
        yield http


def test_requests_from_one_thread_share_one_connection(server, client) -> None:
    replies = [client.post(_url(server, "/"), content=f"{i}".encode()).text for i in range(5)]
    assert replies == [f"echo: {i}" for i in range(5)]
    assert server.connections == 1


def test_each_thread_keeps_its_own_connection(server, client) -> None:
    def ask() -> None:
        for _ in range(3):
            assert client.post(_url(server, "/"), content=b"x").status_code == 200
    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.connections == 3


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error(
        server, client) -> None:
    assert client.post(_url(server, "/then-close"), content=b"a").text == "echo: a"
    time.sleep(0.1)  # the server's FIN arrives while the connection is idle
    assert client.post(_url(server, "/"), content=b"b").text == "echo: b"
    assert server.connections == 2


def test_a_gzip_encoded_reply_is_decoded(server, client) -> None:
    reply = client.post(_url(server, "/gzip"), content=b"zipped")
    assert reply.text == "echo: zipped"


def test_a_chunked_reply_is_read_whole(server, client) -> None:
    assert client.post(_url(server, "/chunked"), content=b"world").text == "hello world"


def test_a_refused_connection_is_an_api_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    api = openai.OpenAI(api_key="x", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0,
                        http_client=openai.DefaultHttpxClient(
                            mounts={"http://": KeepAliveTransport()}))
    with pytest.raises(openai.APIConnectionError) as caught:
        api.models.list()
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_a_reply_slower_than_the_read_timeout_is_an_api_timeout_error(server) -> None:
    api = openai.OpenAI(api_key="x", base_url=_url(server, ""), max_retries=0, timeout=0.1,
                        http_client=openai.DefaultHttpxClient(
                            mounts={"http://": KeepAliveTransport()}))
    with pytest.raises(openai.APITimeoutError):
        api.post("/slow", cast_to=httpx2.Response, body={})


def test_only_plain_http_without_a_proxy_gets_the_transport(monkeypatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert use_keep_alive("http://127.0.0.1:8000/v1")
    assert not use_keep_alive("https://api.openai.com/v1")
    assert not use_keep_alive(None)
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    assert not use_keep_alive("http://models.example:8000/v1")
    monkeypatch.setenv("no_proxy", "models.example")
    assert use_keep_alive("http://models.example:8000/v1")


def test_the_openai_backend_mounts_the_transport_for_a_plain_http_server(server) -> None:
    backend = OpenAIBackend("m", base_url=_url(server, ""))
    http = backend._client._client
    assert isinstance(http._transport_for_url(httpx2.URL(_url(server, "/v1/x"))),
                      KeepAliveTransport)


def test_a_server_unreachable_through_a_proxy_names_the_proxy_not_its_password(
        server, monkeypatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: the proxy is down
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://user:secret@127.0.0.1:{port}")
    backend = OpenAIBackend("m", base_url=_url(server, ""), timeout=2)
    with pytest.raises(ConfigError) as caught:
        backend.check()
    assert f"through the proxy http://127.0.0.1:{port}" in str(caught.value)
    assert "secret" not in str(caught.value)
