"""rwb's stand-in for the `e2b` distribution (SPEC §18, `[sandbox] e2b = true`): it
exists so that code which checks for E2B before importing its code interpreter
(open-r1's `is_e2b_available`) finds it. The sandbox itself is rwb's: see
`e2b_code_interpreter`."""
