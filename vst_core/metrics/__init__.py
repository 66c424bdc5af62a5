"""The metrics, one module each: what the product knows about a metric in one place.

Each module declares one :class:`~vst_core.contract.MetricSpec` as ``METRIC``: name, record
type and fields (with their direction), needs, settings, how it is computed on a batch (its pure
formula lives in :mod:`vst_core.formulas`, its models in :mod:`vst_core.models`), its score cards
and evidence, and its metric card. :func:`vst_core.contract.registry` lists them, with the
metrics other packages install (the ``vst_eval.metrics`` entry-point group).

Modules import only what declaring needs; the code that computes or draws is imported inside the
hooks, so reading a scores file never loads a model library.
"""
