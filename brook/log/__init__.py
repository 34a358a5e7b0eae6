"""The storage engine: Kafka's on-disk layout of partition logs (segments, offset and time
indexes, leader-epoch and offset checkpoints), with append, read, truncation, retention and
crash recovery. No networking.
"""
