"""The ``brook`` command: one subcommand per Kafka script."""
