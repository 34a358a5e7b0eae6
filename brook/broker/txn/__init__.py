"""The transaction coordinator (KIP-98): its state machine, its log records."""
