"""The KRaft metadata quorum's Raft core (KIP-595 with KIP-996 pre-vote, check-quorum and
KIP-630 snapshots) as a pure state machine: no I/O, no asyncio, no clock, no topics. A shell
feeds it requests, responses and the time, and carries out the actions it returns."""
