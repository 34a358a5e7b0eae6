"""The controller's ACL decisions (Kafka's AclControlManager): CreateAcls and DeleteAcls in,
AccessControlEntryRecord / RemoveAccessControlEntryRecord out.

Pure logic over the active controller's image, so every node learns the same ACLs from the
metadata log. Each new ACL gets a random uuid (the record's id); an ACL already present (or
twice in one request) succeeds without a second record, as in Kafka. A filter removes every
ACL it matches; an ACL two filters of one request match is removed (and reported) once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from brook.protocol.errors import Errors
from brook.security.acl import AclBinding, AclBindingFilter, new_acl_error

from .image import MetadataImage, entry_record
from .records import MetadataRecord, RemoveAccessControlEntryRecord


@dataclass
class AclOutcome:
    """One creation's result: error code (0 = created or already there) and message."""

    error_code: int = Errors.NONE
    error_message: str | None = None


@dataclass
class AclDeletion:
    """One filter's result: an error, or the ACLs it removed."""

    error_code: int = Errors.NONE
    error_message: str | None = None
    removed: list[AclBinding] = field(default_factory=list)


def create_acls(
    image: MetadataImage,
    bindings: Sequence[AclBinding],
    new_id: Callable[[], uuid.UUID] = uuid.uuid4,
) -> tuple[list[MetadataRecord], list[AclOutcome]]:
    existing = set(image.acls.values())
    records: list[MetadataRecord] = []
    results: list[AclOutcome] = []
    for acl in bindings:
        error = new_acl_error(acl)
        if error is not None:
            results.append(AclOutcome(Errors.INVALID_REQUEST, error))
            continue
        if acl not in existing:
            existing.add(acl)
            records.append(entry_record(new_id(), acl))
        results.append(AclOutcome())
    return records, results


def delete_acls(
    image: MetadataImage, filters: Sequence[AclBindingFilter]
) -> tuple[list[MetadataRecord], list[AclDeletion]]:
    records: list[MetadataRecord] = []
    results: list[AclDeletion] = []
    removed: set[uuid.UUID] = set()
    ordered = sorted(image.acls.items(), key=lambda item: str(item[1]))
    for acl_filter in filters:
        error = acl_filter.error()
        if error is not None:
            results.append(AclDeletion(Errors.INVALID_REQUEST, error))
            continue
        result = AclDeletion()
        for acl_id, acl in ordered:
            if acl_id in removed or not acl_filter.matches(acl):
                continue
            removed.add(acl_id)
            records.append(RemoveAccessControlEntryRecord(acl_id))
            result.removed.append(acl)
        results.append(result)
    return records, results
