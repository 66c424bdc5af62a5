"""Pure metric functions: numbers and strings in, frozen dataclasses out; no model, no I/O."""
