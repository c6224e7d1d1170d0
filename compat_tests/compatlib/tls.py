"""Certificates for TLS tests, made with `cryptography`: a CA, a server
certificate for 127.0.0.1 and localhost, and client certificates, written as
the stores Kafka reads (PEM keystores holding key and chain, PKCS12
keystores, a PEM truststore).

    pki = Pki(tmp_path)
    pki.server.pem_keystore        # key + chain, for ssl.keystore.type=PEM
    pki.client("alice").pem_cert   # a client's certificate, signed by the CA
    pki.ca_pem                     # the truststore / ssl.ca.location

Keys are unencrypted PKCS#8, which Apache Kafka reads from a PEM keystore
without ssl.key.password (and refuses ssl.keystore.password for PEM).

compat_tests/run.py makes one Pki per run (run_pki: the brokers' keystore and
truststore, and a client certificate, CLIENT) and gives pytest its directory
(--tls-dir); TlsFiles names what a test finds there. Gregor's own tests
import this module as tests/support/tls.py.
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
UNIT = "gregor-tests"
# The client certificate of a compatibility run (run_pki), and its subject as
# Kafka's principal builder names it (RFC 2253).
CLIENT = "compat-client"
CLIENT_SUBJECT = f"CN={CLIENT},OU={UNIT},O=Example,C=US"


def _name(common_name: str, unit: str = UNIT) -> x509.Name:
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

    @classmethod
    def files(cls, directory: Path, common_name: str) -> Identity:
        """Where Pki writes the identity `common_name` in `directory`."""
        base = Path(directory) / common_name
        return cls(
            common_name,
            base.with_suffix(".cert.pem"),
            base.with_suffix(".key.pem"),
            base.with_suffix(".keystore.pem"),
            base.with_suffix(".p12"),
        )


class Pki:
    """A CA (named ca_name: another Pki's CA by another name is a CA that
    clients and brokers of the first do not trust) and the identities it signs."""

    def __init__(self, directory: Path, ca_name: str = "gregor-test-ca"):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name(ca_name))
            .issuer_name(_name(ca_name))
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
        identity = Identity.files(self.directory, common_name)
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


@dataclass
class TlsFiles:
    """A compatibility run's certificates, as pytest finds them (--tls-dir):
    the brokers' CA (ca.pem, both brokers' PEM truststore), the server's PEM
    keystore, and a client certificate signed by that CA (CLIENT)."""

    directory: Path
    ca_pem: Path
    server: Identity
    client: Identity

    @classmethod
    def at(cls, directory: str | Path) -> TlsFiles:
        directory = Path(directory)
        return cls(
            directory,
            directory / "ca.pem",
            Identity.files(directory, "localhost"),
            Identity.files(directory, CLIENT),
        )


def run_pki(directory: Path) -> TlsFiles:
    """A compatibility run's certificates, written to `directory`."""
    pki = Pki(directory)
    pki.client(CLIENT)
    return TlsFiles.at(directory)
