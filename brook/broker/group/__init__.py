"""The group coordinator: classic consumer groups (membership, rebalances, static members) and
committed offsets, kept in ``__consumer_offsets`` in Kafka's own record formats."""
