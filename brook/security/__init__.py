"""Who a connection speaks for: TLS, SASL and the authorizer (issue-independent shared types)."""
