"""TLS for SSL and SASL_SSL listeners, from Kafka's `ssl.*` settings.

    settings = TlsSettings.from_config(lookup)   # lookup(key): the listener's value
    context = settings.server_context            # for trio.SSLStream(server_side=True)

Keystores are PEM (`ssl.keystore.type=PEM`: a file with the private key and
the certificate chain, or both inline as `ssl.keystore.key` and
`ssl.keystore.certificate.chain`) or PKCS12, as Kafka reads them; Java's own
JKS format is refused with the keytool command that converts it.
Truststores (which client certificates are trusted, with
`ssl.client.auth=required|requested`, and which brokers a broker trusts)
are PEM or PKCS12 too.

With a client certificate, the principal is `User:` and the certificate's
subject in RFC 2253 form (`User:CN=alice,OU=eng,O=Example`), as Kafka's
default principal builder and `ssl.principal.mapping.rules=DEFAULT` make it.
"""

from __future__ import annotations

import _ssl
import ctypes
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)

from broker.request_context import ANONYMOUS, KafkaPrincipal

log = logging.getLogger("gregor.tls")

CLIENT_AUTH = ("none", "requested", "required")
STORE_TYPES = ("PEM", "PKCS12")
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(ValueError):
    """A setting names something Gregor cannot use; the message says what."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class TlsSettings:
    keystore_type: str = "JKS"
    keystore_location: str | None = None
    keystore_password: str | None = None
    key_password: str | None = None
    keystore_key: str | None = None
    keystore_certificate_chain: str | None = None
    truststore_type: str = "JKS"
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    endpoint_identification: str = "https"

    KEYS = {
        "ssl.keystore.type": "keystore_type",
        "ssl.keystore.location": "keystore_location",
        "ssl.keystore.password": "keystore_password",
        "ssl.key.password": "key_password",
        "ssl.keystore.key": "keystore_key",
        "ssl.keystore.certificate.chain": "keystore_certificate_chain",
        "ssl.truststore.type": "truststore_type",
        "ssl.truststore.location": "truststore_location",
        "ssl.truststore.password": "truststore_password",
        "ssl.truststore.certificates": "truststore_certificates",
        "ssl.client.auth": "client_auth",
        "ssl.enabled.protocols": "enabled_protocols",
        "ssl.endpoint.identification.algorithm": "endpoint_identification",
    }

    @classmethod
    def from_config(cls, lookup: Callable[[str], str | None]) -> TlsSettings:
        """The settings from `lookup(key)` (the listener's value of a key, or
        None), checked: what cannot be served is a TlsConfigError."""
        values: dict[str, object] = {}
        for key, field_name in cls.KEYS.items():
            raw = lookup(key)
            if raw is None:
                continue
            if field_name == "enabled_protocols":
                values[field_name] = tuple(p.strip() for p in raw.split(",") if p.strip())
            elif field_name in ("keystore_type", "truststore_type"):
                values[field_name] = raw.strip().upper()
            else:
                values[field_name] = raw
        settings = cls(**values)  # type: ignore[arg-type]
        settings._check()
        return settings

    def _check(self) -> None:
        if self.client_auth not in CLIENT_AUTH:
            raise TlsConfigError(
                "ssl.client.auth",
                f"Invalid value {self.client_auth} for configuration ssl.client.auth: "
                f"String must be one of: {', '.join(CLIENT_AUTH)}",
            )
        for protocol in self.enabled_protocols:
            if protocol not in _PROTOCOLS:
                raise TlsConfigError(
                    "ssl.enabled.protocols",
                    f"TLS protocol {protocol} is not served by Gregor (it serves "
                    f"{', '.join(_PROTOCOLS)})",
                )
        inline = self.keystore_key is not None or self.keystore_certificate_chain is not None
        if self.keystore_location is None and not inline:
            raise TlsConfigError(
                "ssl.keystore.location",
                "An SSL listener needs a keystore: set ssl.keystore.location (PEM or PKCS12), "
                "or ssl.keystore.key and ssl.keystore.certificate.chain",
            )
        for key, kind, location in (
            ("ssl.keystore.type", self.keystore_type, self.keystore_location),
            ("ssl.truststore.type", self.truststore_type, self.truststore_location),
        ):
            if location is not None and kind not in STORE_TYPES:
                raise TlsConfigError(
                    key,
                    f"{key}={kind} is not served by Gregor, which reads PEM and PKCS12 "
                    "stores; convert a JKS store with `keytool -importkeystore -srckeystore "
                    "<file.jks> -destkeystore <file.p12> -deststoretype PKCS12`",
                )

    # --- contexts -----------------------------------------------------------------

    # Made once (the configuration checks them at start-up, and the broker
    # then serves with them): each reads the stores from disk.

    @cached_property
    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._common(context)
        if self.client_auth != "none":
            context.verify_mode = (
                ssl.CERT_REQUIRED if self.client_auth == "required" else ssl.CERT_OPTIONAL
            )
            trusted = self._load_trust(context)
            # As Java's TLS does for Kafka: the certificate request names the
            # CAs the broker trusts, so a client holding several certificates
            # (or one no CA here signed) knows which to show, or to show none.
            name_client_cas(context, trusted)
        return context

    @cached_property
    def client_context(self) -> ssl.SSLContext:
        """How a broker reaches another broker's TLS listener: trusting the
        truststore, showing its own keystore, checking the host name unless
        ssl.endpoint.identification.algorithm is empty."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._common(context)
        context.check_hostname = self.endpoint_identification.lower() == "https"
        self._load_trust(context)
        return context

    def _common(self, context: ssl.SSLContext) -> None:
        versions = sorted(_PROTOCOLS[p] for p in self.enabled_protocols)
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
        pem, password = self._keystore_pem()
        # load_cert_chain reads files only: a private temporary file, gone at once.
        with tempfile.TemporaryDirectory(prefix="gregor-tls-") as directory:
            path = os.path.join(directory, "keystore.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
            try:
                context.load_cert_chain(path, password=password)
            except ssl.SSLError as e:
                raise TlsConfigError(
                    "ssl.keystore.location", f"Cannot use the keystore's key and certificate: {e}"
                ) from None

    def _keystore_pem(self) -> tuple[bytes, str | None]:
        """The private key and certificate chain as PEM, and the key's password."""
        password = self.key_password or self.keystore_password
        if self.keystore_location is None:
            assert self.keystore_key is not None and self.keystore_certificate_chain is not None
            return (self.keystore_key + "\n" + self.keystore_certificate_chain).encode(), password
        data = _read(self.keystore_location, "ssl.keystore.location")
        if self.keystore_type == "PEM":
            return data, password
        store_password = self.keystore_password.encode() if self.keystore_password else None
        try:
            key, certificate, chain = pkcs12.load_key_and_certificates(data, store_password)
        except ValueError as e:
            raise TlsConfigError(
                "ssl.keystore.location", f"Cannot read the PKCS12 keystore: {e}"
            ) from None
        if key is None or certificate is None:
            raise TlsConfigError(
                "ssl.keystore.location", "The PKCS12 keystore holds no private key and certificate"
            )
        # Unencrypted in the private temporary file only.
        key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        certs = [certificate, *(chain or [])]
        return key_pem + b"".join(c.public_bytes(Encoding.PEM) for c in certs), None

    def _load_trust(self, context: ssl.SSLContext) -> str:
        """Trust the truststore's certificates; them, as PEM."""
        if self.truststore_certificates is not None:
            context.load_verify_locations(cadata=self.truststore_certificates)
            return self.truststore_certificates
        elif self.truststore_location is not None:
            data = _read(self.truststore_location, "ssl.truststore.location")
            if self.truststore_type == "PEM":
                context.load_verify_locations(cadata=data.decode())
                return data.decode()
            else:
                password = self.truststore_password.encode() if self.truststore_password else None
                stores = pkcs12.load_pkcs12(data, password)
                certs = [c.certificate for c in stores.additional_certs]
                if stores.cert is not None:
                    certs.append(stores.cert.certificate)
                pem = b"".join(c.public_bytes(Encoding.PEM) for c in certs)
                context.load_verify_locations(cadata=pem.decode())
                return pem.decode()
        else:
            raise TlsConfigError(
                "ssl.truststore.location",
                "Checking certificates needs a truststore: set ssl.truststore.location "
                "(PEM or PKCS12) or ssl.truststore.certificates",
            )


def name_client_cas(context: ssl.SSLContext, trusted_pem: str) -> None:
    """Name these CAs in the server's certificate request (OpenSSL's
    SSL_CTX_set_client_CA_list, which Python's ssl module does not expose).

    Reached through ctypes: the SSLContext's OpenSSL context is the first
    field after the object header, checked against the verify mode and
    options Python reports before anything is set. Should either not match,
    or a symbol be missing, the request names no CA, as before, and a log
    line says so."""
    try:
        lib = ctypes.CDLL(_ssl.__file__)
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_load_client_CA_file.argtypes = [ctypes.c_char_p]
        lib.SSL_load_client_CA_file.restype = ctypes.c_void_p
        lib.SSL_CTX_set_client_CA_list.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.SSL_CTX_set_client_CA_list.restype = None
    except (OSError, AttributeError) as e:
        log.warning("TLS certificate requests will name no CA: %s", e)
        return
    pointer = ctypes.c_void_p.from_address(id(context) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
    # SSL_VERIFY_PEER (1), and FAIL_IF_NO_PEER_CERT (2) when required.
    expected_mode = {ssl.CERT_OPTIONAL: 1, ssl.CERT_REQUIRED: 3}[context.verify_mode]
    if (
        not pointer
        or lib.SSL_CTX_get_verify_mode(pointer) != expected_mode
        or lib.SSL_CTX_get_options(pointer) != int(context.options)
    ):
        log.warning("TLS certificate requests will name no CA: unexpected SSLContext layout")
        return
    with tempfile.TemporaryDirectory(prefix="gregor-tls-") as directory:
        path = os.path.join(directory, "trusted.pem")
        with open(path, "w") as f:
            f.write(trusted_pem)
        names = lib.SSL_load_client_CA_file(path.encode())
    if names:
        lib.SSL_CTX_set_client_CA_list(pointer, names)  # takes ownership


def _read(path: str, key: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TlsConfigError(key, f"Cannot read {key} {path}: {e.strerror}") from None


def principal_of(certificate_der: bytes | None) -> KafkaPrincipal:
    """Kafka's principal for a TLS client: its certificate's subject, or
    ANONYMOUS without one."""
    if not certificate_der:
        return ANONYMOUS
    subject = x509.load_der_x509_certificate(certificate_der).subject
    return KafkaPrincipal("User", subject.rfc4514_string())
