"""Certificates made at test time (``trustme``) for TLS listeners and clients: a test CA, the
broker's key store, client certificates with chosen subjects, an expired one and one from a
CA the broker does not trust; written as the PEM files Kafka's settings name."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class ClientCert:
    cert: Path  # the certificate chain (librdkafka's ssl.certificate.location)
    key: Path  # the private key (ssl.key.location)
    both: Path  # key and chain in one file (Kafka's PEM keystore)


@dataclass(frozen=True)
class TlsFiles:
    directory: Path
    ca: trustme.CA
    ca_pem: Path
    server_pem: Path  # key + chain: ssl.keystore.location with ssl.keystore.type=PEM

    def broker_settings(self, listener: str = "SSL", client_auth: str = "none") -> dict[str, str]:
        """A TLS listener's settings, as an operator writes them in server.properties."""
        settings = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.server_pem),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_pem),
            "ssl.client.auth": client_auth,
        }
        return settings

    def client_cert(
        self,
        name: str,
        *,
        organization: str = "Brook Tests",
        unit: str = "Clients",
        ca: trustme.CA | None = None,
        not_after: datetime.datetime | None = None,
    ) -> ClientCert:
        issuer = ca or self.ca
        cert = issuer.issue_cert(
            f"{name}@clients.example",
            common_name=name,
            organization_name=organization,
            organization_unit_name=unit,
            not_after=not_after,
        )
        base = self.directory / name
        cert_path, key_path, both = (
            Path(f"{base}.crt"),
            Path(f"{base}.key"),
            Path(f"{base}.pem"),
        )
        cert_path.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
        cert.private_key_pem.write_to_path(str(key_path))
        cert.private_key_and_cert_chain_pem.write_to_path(str(both))
        return ClientCert(cert_path, key_path, both)


def make_tls_files(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    ca_pem = directory / "ca.pem"
    server_pem = directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    server.private_key_and_cert_chain_pem.write_to_path(str(server_pem))
    return TlsFiles(directory, ca, ca_pem, server_pem)
