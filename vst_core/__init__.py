"""Reference-free evaluation of visual stories: metrics, model adapters, data formats, CLI."""

__version__ = "0.1.0"
