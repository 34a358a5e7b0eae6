"""The node's authorizer: off without authorizer.class.name, rebuilt from the metadata image
whenever its ACLs change; and the test-only listener principals."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from brook.broker.authz import authorize, node_authorizer
from brook.broker.listener_principals import listener_principals
from brook.config.server import parse_server_config
from brook.metadata.acl_control import create_acls, delete_acls
from brook.metadata.image import MetadataImage
from brook.security.acl import AclBindingFilter, AclOperation, ResourceType, binding_of
from brook.security.authorizer import Caller
from brook.security.principal import KafkaPrincipal

ALICE = Caller(KafkaPrincipal("User", "alice"), "127.0.0.1")
ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def _apply(image: MetadataImage, records: list) -> None:
    for record in records:
        image.apply(record, image.offset + 1)


def test_no_authorizer_without_the_class_name() -> None:
    assert node_authorizer(parse_server_config({}), MetadataImage) is None


def test_the_authorizer_follows_the_images_acls() -> None:
    image = MetadataImage()
    authorizer = node_authorizer(parse_server_config(ON), lambda: image)
    assert authorizer is not None
    can_read = lambda: authorizer.current().authorize(  # noqa: E731
        ALICE, AclOperation.READ, ResourceType.TOPIC, "t"
    )
    assert not can_read()
    _apply(image, create_acls(image, [binding_of(2, "t", 3, "User:alice", "*", 3, 3)])[0])
    assert can_read()
    everything = AclBindingFilter.of(1, None, 1, None, None, 1, 1)
    _apply(image, delete_acls(image, [everything])[0])
    assert not can_read()


def test_listener_principals_are_read_by_listener_name() -> None:
    cfg = parse_server_config(
        {"brook.test.listener.principals": "plaintext=User:admin, ALICE=User:alice"}
    )
    assert listener_principals(cfg) == {
        "PLAINTEXT": KafkaPrincipal("User", "admin"),
        "ALICE": KafkaPrincipal("User", "alice"),
    }


def test_a_denial_is_logged_as_kafkas_authorizer_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    image = MetadataImage()
    authorizer = node_authorizer(parse_server_config(ON), lambda: image)
    alice = KafkaPrincipal("User", "alice")
    ctx = SimpleNamespace(
        broker=SimpleNamespace(authorizer=authorizer),
        connection=SimpleNamespace(peer="10.1.2.3:5555", principal=alice),
        principal=alice,
    )
    with caplog.at_level(logging.DEBUG, logger="brook.authorizer"):
        assert not authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, "t")  # type: ignore[arg-type]
    assert caplog.messages == [
        "Principal = User:alice is Denied operation = WRITE from host = 10.1.2.3 "
        "on resource = TOPIC:t"
    ]


def test_a_new_image_gets_a_new_authorizer() -> None:
    """After a snapshot is loaded the node's image is another object: its ACLs count, even
    at the same ACL version."""
    images = [MetadataImage()]
    authorizer = node_authorizer(parse_server_config(ON), lambda: images[-1])
    assert authorizer is not None
    read = (ALICE, AclOperation.READ, ResourceType.TOPIC, "t")
    assert not authorizer.current().authorize(*read)
    loaded = MetadataImage()
    _apply(loaded, create_acls(loaded, [binding_of(2, "t", 3, "User:alice", "*", 3, 3)])[0])
    loaded.acls_version = images[0].acls_version
    images.append(loaded)
    assert authorizer.current().authorize(*read)
