"""CUDA graphs of tcomp launches: capture once, replay for a few microseconds.

``tc.graph(fn)`` runs ``fn`` once with every tcomp module launch in it recorded instead
of run (``cuStreamBeginCapture`` on a stream of its own: nothing is computed at capture),
and returns a :class:`Graph` whose ``replay()`` launches them all with one
``cuGraphLaunch``.
``mod.graph(*args)`` is the same for one call of one module.

A replay reads and writes the buffers the capture saw, at the addresses they had then:
to run on new data, copy it into those buffers (as with any CUDA graph). The graph
keeps a reference to every captured argument so that none is freed while it lives.
Only tcomp launches are captured; other work that ``fn`` does (PyTorch operations, copies)
runs at capture time as usual and is not part of the graph.

In Numba's CUDA simulator a graph is a recording of the launches with their arguments,
replayed in order, so that code using graphs is tested without a GPU.
"""

from __future__ import annotations

import threading

from ..errors import ArgumentError, CodegenError
from .driver import checked, driver
from .environment import simulator_enabled

_state = threading.local()


class _Capture:
    """What one ``graph(fn)`` collects while ``fn`` runs."""

    def __init__(self, stream=None):
        self.stream = stream  # the driver stream being captured (None in the simulator)
        self.keepalive: list = []  # every captured argument
        self.simulated: list = []  # simulator: the launches, as callables
        self.launches = 0

    def record(self, args) -> None:
        """Note one module call: its arguments stay alive as long as the graph."""
        self.keepalive.append(args)
        self.launches += 1


def active_capture() -> _Capture | None:
    """The capture running on this thread, if any."""
    return getattr(_state, "capture", None)


def _stream_handle(stream) -> int:
    """A driver stream handle from 0, an int handle, or an object with ``cuda_stream``
    (``torch.cuda.Stream``)."""
    return int(getattr(stream, "cuda_stream", stream) or 0)


class Graph:
    """Captured tcomp launches; ``replay()`` runs them again on the captured buffers."""

    def __init__(self, capture: _Capture, graph=None, executable=None):
        self._capture = capture
        self._graph = graph
        self._executable = executable
        self.launches = capture.launches

    def replay(self, stream=0) -> None:
        """Launch the captured kernels again, in order, on ``stream`` (default 0, the
        legacy default stream; or a ``torch.cuda.Stream`` or a driver stream handle).
        Asynchronous, like any launch."""
        if self._executable is None:
            for launch in self._capture.simulated:
                launch()
            return
        drv = driver()
        err, = drv.cuGraphLaunch(self._executable, _stream_handle(stream))
        if int(err) != 0:
            checked((err,), "cuGraphLaunch")

    __call__ = replay

    def __repr__(self) -> str:
        return f"<tcomp.Graph: {self.launches} captured module call(s)>"

    def __del__(self):
        if self._executable is None:
            return
        try:
            drv = driver()
            drv.cuGraphExecDestroy(self._executable)
            drv.cuGraphDestroy(self._graph)
            drv.cuStreamDestroy(self._capture.stream)
        except Exception:  # NOTE: interpreter shutdown may have torn the driver down first
            pass


def graph(fn) -> Graph:
    """Capture the tcomp module launches that ``fn()`` makes into a replayable graph.

    Every module called inside ``fn`` must be called with device arguments (torch CUDA
    tensors or numba device arrays): numpy arguments are copied for each call, which a
    graph cannot replay. Replays use the buffers of the capture.
    """

    if active_capture() is not None:
        raise CodegenError("tc.graph captures do not nest: a capture is already running on this thread")
    if simulator_enabled():
        capture = _Capture()
    else:
        from numba import cuda

        cuda.current_context()  # NOTE: the driver calls below need numba's context current
        drv = driver()
        stream = checked(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate")
        checked(drv.cuStreamBeginCapture(stream, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture")
        capture = _Capture(stream)
    _state.capture = capture
    try:
        fn()
    except BaseException:
        _state.capture = None
        if capture.stream is not None:
            drv.cuStreamEndCapture(capture.stream)
            drv.cuStreamDestroy(capture.stream)
        raise
    _state.capture = None
    if capture.stream is None:
        executable = captured = None
    else:
        captured = checked(drv.cuStreamEndCapture(capture.stream), "cuStreamEndCapture")
        executable = checked(drv.cuGraphInstantiate(captured, 0), "cuGraphInstantiate")
    if capture.launches == 0:
        raise ArgumentError("tc.graph(fn): fn called no tcomp module, so there is nothing to capture")
    return Graph(capture, captured, executable)
