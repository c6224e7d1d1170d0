"""Certificates for TLS tests: compat_tests/compatlib/tls.py, which the
compatibility suite uses too (tests/conftest.py puts compat_tests/ on sys.path).

    pki = Pki(tmp_path)
    pki.server.pem_keystore        # key + chain, for ssl.keystore.type=PEM
    pki.client("alice").pem_cert   # a client's certificate, signed by the CA
    pki.ca_pem                     # the truststore / ssl.ca.location
"""

from __future__ import annotations

import sys
from pathlib import Path

_COMPAT = str(Path(__file__).resolve().parents[2] / "compat_tests")
if _COMPAT not in sys.path:
    sys.path.insert(0, _COMPAT)

from compatlib.tls import PASSWORD, Identity, Pki  # noqa: E402

__all__ = ["PASSWORD", "Identity", "Pki"]
