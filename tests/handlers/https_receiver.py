"""A webhook receiver on 127.0.0.1 for the HTTPS target's tests and benchmark: HTTP/1.1 with keep-alive,
over TLS with a self-signed certificate (made with ``cryptography``; trusted by pointing ``SSL_CERT_FILE``
at :attr:`Certificate.cert_path`), or plain HTTP. It answers each path as scripted (:class:`Answer`),
keeps what it received, and counts accepted TCP connections and completed TLS handshakes."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Certificate:
    cert_path: Path
    key_path: Path


def self_signed_certificate(folder: Path) -> Certificate:
    """A certificate for ``127.0.0.1``, ``::1`` and ``localhost``, its own issuer (a CA), with its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scheduler test receiver")])
    now = dt.datetime.now(dt.timezone.utc)
    public = key.public_key()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1")),
                x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "receiver.pem", folder / "receiver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return Certificate(cert_path, key_path)


@dataclass(frozen=True)
class Answer:
    """How the receiver answers a path: ``status`` with ``body``, ``headers`` added; ``held``: not until the
    receiver closes (a target slower than any timeout); ``drop_after``: close the connection after answering
    without saying so (as a server whose keep-alive timeout passed does)."""

    status: int = 200
    body: bytes = b""
    held: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: bool = False


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """Use as a context manager; :meth:`url` names a path on it."""

    def __init__(self, certificate: Certificate | None = None) -> None:
        self.answers: dict[str, Answer] = {}
        self.seen: list[Seen] = []
        self.connections = 0
        self.handshakes = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._tls: ssl.SSLContext | None = None
        if certificate is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(certificate.cert_path, certificate.key_path)
        self._server = _Server(("127.0.0.1", 0), _Handler, self)
        # shutdown waits for the loop to look at its flag, at most ``poll_interval`` (0.5 s by default) after asking
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="https-receiver", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}{path}"

    def requests_to(self, path: str) -> list[Seen]:
        with self._lock:
            return [seen for seen in self.seen if seen.path == path]

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _accepted(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self.connections += 1
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as web servers do: no 40 ms Nagle stall
        if self._tls is None:
            return sock
        return self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)

    def _handshaken(self) -> None:
        with self._lock:
            self.handshakes += 1

    def _record(self, seen: Seen) -> Answer:
        with self._lock:
            self.seen.append(seen)
            return self.answers.get(seen.path, Answer())


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        return self.receiver._accepted(sock), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout) or closed its connection: nothing to report."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection is closed after this long
    server: _Server

    def setup(self) -> None:
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
            self.server.receiver._handshaken()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        answer = self.server.receiver._record(Seen(self.command, self.path, dict(self.headers.items()), body))
        if answer.held:
            self.server.receiver._closing.wait()
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)
        if answer.drop_after:
            self.close_connection = True

    do_POST = do_GET = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read what was received, not a log."""
