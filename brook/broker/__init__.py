"""The broker: listener, request handlers, replica manager, fetch sessions, coordinators."""
