"""Certificates for TLS tests, made with `cryptography`: a CA, a server
certificate for 127.0.0.1 and localhost, and client certificates, written as
the stores Kafka reads (PEM keystores holding key and chain, PKCS12
keystores, a PEM truststore).

    pki = Pki(tmp_path)
    pki.server.pem_keystore        # key + chain, for ssl.keystore.type=PEM
    pki.client("alice").pem_cert   # a client's certificate, signed by the CA
    pki.ca_pem                     # the truststore / ssl.ca.location
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

PASSWORD = "store-secret"


def _name(common_name: str, unit: str = "gregor-tests") -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


@dataclass
class Identity:
    """One certificate and its key, written in every form a test needs."""

    name: str
    pem_cert: Path
    pem_key: Path
    pem_keystore: Path  # key, then certificate and CA: ssl.keystore.type=PEM
    pkcs12_keystore: Path  # protected by PASSWORD


class Pki:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("gregor-test-ca"))
            .issuer_name(_name("gregor-test-ca"))
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca_pem = self.directory / "ca.pem"
        self.ca_pem.write_bytes(self._ca_cert.public_bytes(serialization.Encoding.PEM))
        self.server = self.identity("localhost", server=True)

    def client(self, common_name: str) -> Identity:
        return self.identity(common_name)

    def identity(self, common_name: str, server: bool = False) -> Identity:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        cert = builder.sign(self._ca_key, hashes.SHA256())
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        ca_pem = self._ca_cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        base = self.directory / common_name
        identity = Identity(
            common_name,
            base.with_suffix(".cert.pem"),
            base.with_suffix(".key.pem"),
            base.with_suffix(".keystore.pem"),
            base.with_suffix(".p12"),
        )
        identity.pem_cert.write_bytes(cert_pem)
        identity.pem_key.write_bytes(key_pem)
        identity.pem_keystore.write_bytes(key_pem + cert_pem + ca_pem)
        identity.pkcs12_keystore.write_bytes(
            pkcs12.serialize_key_and_certificates(
                common_name.encode(),
                key,
                cert,
                [self._ca_cert],
                serialization.BestAvailableEncryption(PASSWORD.encode()),
            )
        )
        return identity
