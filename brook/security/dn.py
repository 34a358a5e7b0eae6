"""A certificate's subject as Kafka's default principal builder names it.

Kafka's ``DefaultKafkaPrincipalBuilder`` (``ssl.principal.mapping.rules=DEFAULT``) takes
``X500Principal.getName()``: the RFC 2253 form Java renders, which ACLs and ``super.users``
are written against, so it must match to the character. Java's rules, reproduced here:
RDNs last to first; the keywords CN, C, L, ST, O, OU, STREET, DC, UID, every other attribute
as its dotted OID with ``#`` and the lowercase hex of its DER value; in string values the
characters ``,=+<>#;"\\`` escaped with a backslash, NUL as ``\\00``, and leading and trailing
spaces escaped. OpenSSL's and ``cryptography``'s renderings differ (order, keywords such as
``emailAddress``), hence this module.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID

_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.USER_ID: "UID",
}
_ESCAPED = ',=+<>#;"\\'
# Java's DerValue string types rendered as text under a keyword; anything else is hex.
_STRING_TYPES = {
    _ASN1Type.UTF8String,
    _ASN1Type.PrintableString,
    _ASN1Type.T61String,
    _ASN1Type.IA5String,
    _ASN1Type.BMPString,
    _ASN1Type.UniversalString,
}
_ENCODINGS = {
    _ASN1Type.BMPString: "utf_16_be",
    _ASN1Type.UniversalString: "utf_32_be",
}


def _der_value(attr: x509.NameAttribute) -> bytes:
    """The attribute's value as DER (tag, length, content), as Java prints it in hex."""
    kind = attr._type
    value = attr.value
    content = (
        value.encode(_ENCODINGS.get(kind, "utf-8")) if isinstance(value, str) else bytes(value)
    )
    n = len(content)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([kind.value]) + length + content


def _escape(value: str) -> str:
    out = []
    for ch in value:
        if ch in _ESCAPED:
            out.append("\\" + ch)
        elif ch == "\0":
            out.append("\\00")
        else:
            out.append(ch)
    text = "".join(out)
    lead = len(value) - len(value.lstrip(" "))
    trail = len(value) - len(value.rstrip(" ")) if value.strip(" ") else 0
    if lead:
        text = "\\ " * lead + text[lead:]
    if trail:
        text = text[: len(text) - trail] + "\\ " * trail
    return text


def _render(attr: x509.NameAttribute) -> str:
    keyword = _KEYWORDS.get(attr.oid)
    if keyword is not None and attr._type in _STRING_TYPES and isinstance(attr.value, str):
        return f"{keyword}={_escape(attr.value)}"
    return f"{attr.oid.dotted_string}=#{_der_value(attr).hex()}"


def rfc2253(name: x509.Name) -> str:
    """``name`` as Java's ``X500Principal.getName()`` renders it."""
    return ",".join("+".join(_render(attr) for attr in rdn) for rdn in reversed(list(name.rdns)))


def subject_of(der: bytes) -> str:
    """The RFC 2253 subject of a DER certificate (a peer's, from the TLS session)."""
    return rfc2253(x509.load_der_x509_certificate(der).subject)
