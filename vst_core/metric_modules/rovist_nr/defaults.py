"""RoViST-NR's name, for its modules that the package's ``__init__`` imports (no circle).

>>> NAME
'redundancy'
"""

#: The metric's name (in ``--metrics`` and on disk).
NAME = "redundancy"
