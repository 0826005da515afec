"""The generated TLS files: a CA that signs a server certificate valid for 127.0.0.1 and localhost."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from sluice.sandbox.certs import make_tls_files

pytestmark = pytest.mark.unit


def test_server_certificate_names_loopback_and_chains_to_the_ca(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path / "tls")
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert files.key.stat().st_mode & 0o077 == 0


def test_python_ssl_accepts_the_pair_and_verifies_the_host(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(files.cert, files.key)
    client = ssl.create_default_context(cafile=str(files.ca))
    assert client.check_hostname and client.verify_mode == ssl.CERT_REQUIRED
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):  # pump the handshake between the two in-memory ends
        for end in (c, s):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(outgoing.read())
        incoming.write(s_out.read())
        if c.version() and s.version():
            break
    c.do_handshake()
    assert c.version() in ("TLSv1.2", "TLSv1.3")
