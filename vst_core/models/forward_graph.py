"""The image forward replayed as one captured CUDA graph: one launch a batch instead of ~350, so
the host no longer paces the GPU (and no longer releases and retakes the GIL ~350 times a batch).

A :class:`ForwardGraph` holds a static (B, 3, H, W) input and the output the captured forward
writes. ``run(batch)`` copies a batch of at most B rows into the input (zeros after them: the last,
partial batch is padded, so every crop goes through the same kernels), replays, and returns a
copy of the output's rows. The capture itself is injected (:func:`cuda_capture` on a GPU), so the
bookkeeping runs and is tested on a CPU with an eager stand-in for the replay.

``VST_CUDA_GRAPH=0`` turns it off; a capture that fails leaves the forward eager, with a warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: A capture: ``(forward, static input) -> (replay, static output)``.
Capture = Callable[[Callable[[Any], Any], Any], tuple[Callable[[], None], Any]]


def graphs_wanted() -> bool:
    """Whether CUDA graphs may be used (``VST_CUDA_GRAPH`` unset or not 0)."""
    return os.environ.get("VST_CUDA_GRAPH", "1").strip() not in ("0", "false", "no")


def cuda_capture(forward: Callable[[Any], Any], static_in: Any) -> tuple[Callable[[], None], Any]:
    """Capture ``forward(static_in)`` as a CUDA graph: three warm-up calls on a side stream (as
    torch's documentation asks), then the capture; returns (replay, static output)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            forward(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = forward(static_in)
    return graph.replay, static_out


class ForwardGraph:
    """``forward`` captured once for batches of ``rows`` rows shaped like ``example``'s.

    >>> import torch
    >>> double = ForwardGraph(lambda x: x * 2, torch.zeros(4, 3), rows=4, capture=eager_capture)
    >>> double.run(torch.ones(2, 3)).tolist()
    [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """

    def __init__(self, forward: Callable[[Any], Any], example: Any, *, rows: int, capture: Capture) -> None:
        import torch

        self.rows = rows
        self.shape = tuple(example.shape[1:])
        self.static_in = torch.zeros((rows, *self.shape), dtype=example.dtype, device=example.device)
        self.replay, self.static_out = capture(forward, self.static_in)

    def fits(self, batch: Any) -> bool:
        return tuple(batch.shape[1:]) == self.shape and 0 < len(batch) <= self.rows

    def run(self, batch: Any) -> Any:
        """The forward's output for ``batch``'s rows (a copy: the next replay overwrites the static one)."""
        n = len(batch)
        self.static_in[:n].copy_(batch)
        if n < self.rows:
            self.static_in[n:].zero_()
        self.replay()
        return self.static_out[:n].clone()


def eager_capture(forward: Callable[[Any], Any], static_in: Any) -> tuple[Callable[[], None], Any]:
    """A capture that replays ``forward`` eagerly into a static output (a CPU's stand-in for a graph)."""
    static_out = forward(static_in).clone()

    def replay() -> None:
        static_out.copy_(forward(static_in))

    return replay, static_out


def graph_forward(
    forward: Callable[[Any], Any], batch: Any, held: list[ForwardGraph | None], rows: int, capture: Capture = cuda_capture
) -> Any:
    """``forward(batch)`` through the graph kept in ``held`` (captured on the first call, for
    ``rows`` rows): eager when the batch does not fit it or the capture failed (``held`` then
    holds None, and the forward stays eager)."""
    if held and held[0] is None:
        return forward(batch)
    if not held:
        try:
            held.append(ForwardGraph(forward, batch, rows=rows, capture=capture))
        except Exception as exc:  # a model or driver that cannot be captured runs eagerly
            log.warning("the image forward cannot be captured as a CUDA graph (%s: %s); it runs eagerly", type(exc).__name__, exc)
            held.append(None)
            return forward(batch)
    graph = held[0]
    assert graph is not None
    return graph.run(batch) if graph.fits(batch) else forward(batch)
