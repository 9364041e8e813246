"""Interrupts that cannot be lost.

Python raises `KeyboardInterrupt` between whatever bytecodes the main thread is running;
when that is a generator's finaliser (LangGraph's `Pregel.stream` closing) or a `__del__`,
the interpreter prints "Exception ignored" and carries on — a Ctrl-C that the study never
sees. So the handler also records the interrupt, and `raise_if_interrupted()` — called
before every row is written — raises it again: an interrupt stops the study at the next
finished example at the latest, and never lets it run to the end. The interpreter's
"Exception ignored" report of such a swallowed interrupt is not printed: the interrupt is
not lost, and the user is told once, in the interrupted command's one line.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

_REQUESTED = {"signal": 0}


def request_interrupt(signum: int, frame: object) -> None:
    """Signal handler for SIGINT and SIGTERM: remember the interrupt, then raise it."""
    _REQUESTED["signal"] = signum
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise `KeyboardInterrupt` if an interrupt arrived (even one swallowed since)."""
    if _REQUESTED["signal"]:
        raise KeyboardInterrupt


def install_interrupt_handlers() -> None:
    """Make SIGTERM an interrupt like Ctrl-C, and both unlosable. A SIGINT that is
    ignored (a shell's background job) stays ignored."""
    signal.signal(signal.SIGTERM, request_interrupt)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, request_interrupt)
    sys.unraisablehook = _quiet_about_recorded_interrupts(sys.unraisablehook)


def _quiet_about_recorded_interrupts(report: Any) -> Any:
    """An unraisable-exception hook that says nothing of a recorded interrupt (it will be
    raised again) and hands everything else to `report`."""

    def hook(unraisable: Any) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and _REQUESTED["signal"]:
            return
        report(unraisable)

    return hook
