"""Dropping the tagged fields a message's schema does not know, as Kafka skips them.

kio, which decodes message bodies, refuses a tag its schema lacks (a newer peer may send one
in a version Brook speaks). The schema walk (``schema_walk.py``), which every body goes
through before kio reads it, notes the tagged-field sections that carry such tags; the body
is then copied with those sections rewritten to hold only the known tags. Well-formed
messages without unknown tags are never copied.
"""

from __future__ import annotations

from collections.abc import Sequence

from .schema_walk import TagEdit, apply_edits, walk_message

__all__ = ["UNKNOWN_TAG_ERROR", "apply_tag_edits", "strip_unknown_tags"]

# What kio's reader says for a tag its schema lacks.
UNKNOWN_TAG_ERROR = "Unknown tagged field"


def apply_tag_edits(data: bytes | memoryview, offset: int, edits: Sequence[TagEdit]) -> bytes:
    """``data[offset:]`` with each edited tagged-field section replaced by its known tags."""
    return apply_edits(data, offset, len(data), list(edits))


def strip_unknown_tags(cls: type, data: bytes | memoryview, offset: int = 0) -> bytes:
    """The body at ``data[offset:]`` (of schema ``cls``) without the tagged fields its schema
    does not know; MalformedMessage (a ValueError) if the body does not follow the schema."""
    return apply_tag_edits(data, offset, walk_message(cls, data, offset))
