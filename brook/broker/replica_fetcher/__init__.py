"""The follower side of replication: the replica fetchers that keep this broker's follower
logs identical to their leaders' (state.py: the per-partition state machine; session.py:
the incremental fetch session; codec.py: the Fetch on the wire; fetcher.py: the asyncio
shell of one fetcher; manager.py: which fetcher follows which partition)."""
