"""The Kafka wire protocol: framing, headers, the error table, RecordBatch v2. No I/O."""
