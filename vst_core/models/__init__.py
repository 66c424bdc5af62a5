"""Adapters around real models, each loadable by name or local path, each injectable."""
