"""Configuration tables with Kafka's property names: one declared table per component."""

from .defs import Config, ConfigDef, ConfigError, ConfigKey, Type

__all__ = ["Config", "ConfigDef", "ConfigError", "ConfigKey", "Type"]
