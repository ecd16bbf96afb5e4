"""`async def` evaluators: the worker's one asyncio event loop, and a plain function
that awaits one call on it (one evaluation at a time, under the same timeout).
"""

import inspect


def _is_async(fn):
    """Whether calling `fn` gives a coroutine to await: an `async def` function, or an
    object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(type(fn), "__call__", None))


_LOOP = None


def _event_loop():
    """The worker's one asyncio event loop, made on first use."""
    global _LOOP
    if _LOOP is None:
        import asyncio

        _LOOP = asyncio.new_event_loop()
        asyncio.set_event_loop(_LOOP)
    return _LOOP


def _awaited(fn):
    """A plain function that runs `async def` `fn` to its end on the worker's event
    loop: one evaluation at a time, under the same timeout as a plain function."""

    def call(**kwargs):
        return _event_loop().run_until_complete(fn(**kwargs))

    return call
