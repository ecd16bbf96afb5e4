"""The per-evaluation timeout: a watchdog thread interrupts the main thread when the
call in progress overruns (Evaluation), and user code sees EvalTimeout raised.
"""

import signal
import threading
import time


class EvalTimeout(BaseException):
    """Raised inside user code when an evaluation runs past its timeout.

    A BaseException so that a user's `except Exception:` does not swallow it."""


# The signal rwb's watchdog sends to interrupt an evaluation that overran. Not SIGALRM:
# that one belongs to user code (math_verify arms its own alarm, cancels it with
# alarm(0) and swaps the handler), and nothing it does may cancel rwb's timeout.
TIMEOUT_SIGNAL = signal.SIGRTMIN + 2 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR2
# While an overrunning evaluation swallows the signal, it is sent again this often
# (rwb kills the worker shortly after the timeout anyway).
RESEND_SECONDS = 0.05
# The watchdog never sleeps longer than this at once (time.sleep refuses huge values).
WATCH_SECONDS = 3600.0


class Evaluation:
    """Times calls, enforces the per-evaluation timeout and captures what user code
    prints.

    A call only stamps its start time (no lock, no system call). A watchdog thread
    sleeps until the running call's deadline, and when the call is still the same one
    then, interrupts the main thread with TIMEOUT_SIGNAL, whose handler raises
    EvalTimeout in it. Between calls the watchdog sleeps one timeout: a call that
    starts meanwhile cannot be due earlier."""

    def __init__(self, timeout, capture):
        self.timeout = timeout if timeout and timeout > 0 else 0
        self.capture = capture
        self.started = None  # start of the call in progress, or None between calls
        self.expired = None  # start of the call the watchdog found past its deadline
        if self.timeout:
            signal.signal(TIMEOUT_SIGNAL, self._on_timeout_signal)
            watchdog = threading.Thread(target=self._watch, name="rwb-timeout", daemon=True)
            watchdog.start()

    def _on_timeout_signal(self, signum, frame):
        started = self.started
        if started is not None and started == self.expired:
            raise EvalTimeout()

    def _watch(self):
        clock = time.perf_counter
        main = threading.main_thread().ident
        while True:
            started = self.started
            if started is None:
                time.sleep(min(self.timeout, WATCH_SECONDS))
                continue
            left = started + self.timeout - clock()
            if left > 0:
                time.sleep(min(left, WATCH_SECONDS))
                continue
            self.expired = started
            signal.pthread_kill(main, TIMEOUT_SIGNAL)
            time.sleep(RESEND_SECONDS)

    def call(self, fn, kwargs):
        # Worker.run_pointwise writes this out in its loop (a call less per sample):
        # a change here is a change there too
        started = self.started = time.perf_counter()
        try:
            value = fn(**kwargs)
        except EvalTimeout:
            raise
        except BaseException:
            if self.expired == started:  # it caught the signal and raised something else
                raise EvalTimeout() from None
            raise
        finally:
            self.started = None
        if self.expired == started:  # it swallowed the signal, then returned late
            raise EvalTimeout()
        return value

    def take_output(self):
        return self.capture.take()
