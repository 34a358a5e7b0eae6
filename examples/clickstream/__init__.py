"""A clickstream pipeline on Brook and Spark: ``generator`` (page views into a topic), ``job``
(a Structured Streaming job with event-time windows and a watermark, writing parquet files and
per-page counts back to Brook), ``pipeline`` (starts a broker and runs both: ``make pipeline``)."""
