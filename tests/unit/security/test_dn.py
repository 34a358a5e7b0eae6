"""A certificate's subject rendered as Java's X500Principal.getName() (RFC 2253), which
Kafka's default principal builder makes the principal of a TLS client."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID

from brook.security.dn import rfc2253


def name(*attrs: x509.NameAttribute) -> x509.Name:
    return x509.Name(list(attrs))


def test_last_rdn_first_with_java_keywords() -> None:
    subject = name(
        x509.NameAttribute(NameOID.COUNTRY_NAME, "GB"),
        x509.NameAttribute(NameOID.STATE_OR_PROVINCE_NAME, "London"),
        x509.NameAttribute(NameOID.LOCALITY_NAME, "City"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme"),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "Ops"),
        x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
    )
    assert rfc2253(subject) == "CN=alice,OU=Ops,O=Acme,L=City,ST=London,C=GB"


def test_special_characters_escaped_as_java_does() -> None:
    subject = name(
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'A, B + "C" <d>; e=f #g \\h'),
        x509.NameAttribute(NameOID.COMMON_NAME, " padded  "),
    )
    assert rfc2253(subject) == (
        'CN=\\ padded\\ \\ ,O=A\\, B \\+ \\"C\\" \\<d\\>\\; e\\=f \\#g \\\\h'
    )


def test_attributes_without_a_keyword_are_oid_and_der_hex() -> None:
    subject = name(
        x509.NameAttribute(NameOID.COMMON_NAME, "bob"),
        x509.NameAttribute(NameOID.EMAIL_ADDRESS, "bob@x.io", _type=_ASN1Type.IA5String),
    )
    # IA5String (22 = 0x16), length 8, then the ASCII bytes, in lowercase hex
    assert rfc2253(subject) == "1.2.840.113549.1.9.1=#1608626f6240782e696f,CN=bob"


def test_multi_valued_rdn_joined_with_plus() -> None:
    subject = x509.Name(
        [
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "O1")]),
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.COMMON_NAME, "x"),
                    x509.NameAttribute(NameOID.USER_ID, "u1"),
                ]
            ),
        ]
    )
    rendered = rfc2253(subject)
    assert rendered.endswith(",O=O1")
    assert set(rendered.split(",")[0].split("+")) == {"CN=x", "UID=u1"}


def test_utf8_values_are_kept_as_text() -> None:
    assert rfc2253(name(x509.NameAttribute(NameOID.COMMON_NAME, "Zoë"))) == "CN=Zoë"
