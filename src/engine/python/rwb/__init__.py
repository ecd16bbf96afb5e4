"""rwb's helpers for reward code, importable in every worker rwb runs.

    from rwb.sandbox import run_code, run

`rwb.sandbox` runs code a policy wrote in rwb's sandbox (SPEC §18).
"""
