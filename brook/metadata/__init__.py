"""Cluster metadata: the records of the metadata log, the image built from them, the controller."""
