import pytest

from brook.security.principal import ANONYMOUS, KafkaPrincipal


def test_a_principal_prints_and_parses_as_kafka_writes_it() -> None:
    alice = KafkaPrincipal.parse("User:alice")
    assert alice == KafkaPrincipal("User", "alice")
    assert str(alice) == "User:alice"
    assert str(ANONYMOUS) == "User:ANONYMOUS"
    # A certificate subject keeps everything after the first colon.
    assert KafkaPrincipal.parse("User:CN=a:b,O=x").name == "CN=a:b,O=x"


@pytest.mark.parametrize("text", ["alice", "User:", ":alice", ""])
def test_a_malformed_principal_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="Type:name"):
        KafkaPrincipal.parse(text)
