"""Access control and accountability: API tokens with roles and tiers, the append-only audit log."""

from __future__ import annotations

from seenbefore.security.audit import AuditLog, AuditRecord, AuditVerification
from seenbefore.security.tokens import (
    ROLES,
    Principal,
    TokenInfo,
    TokenStore,
    check_role,
    check_tiers,
    local_principal,
)

__all__ = [
    "ROLES",
    "AuditLog",
    "AuditRecord",
    "AuditVerification",
    "Principal",
    "TokenInfo",
    "TokenStore",
    "check_role",
    "check_tiers",
    "local_principal",
]
