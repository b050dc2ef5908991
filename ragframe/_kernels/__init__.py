"""How ragframe's compiled kernels are compiled and cached, and the building blocks
every stage's kernels use (numba). A stage's kernels live in its own package
(``postprocess/_kernels``, ``tokens/_kernels``, ``retrieve/_kernels``, and kernel files
such as ``evaluate/_ranking``); this package is shared by all of them.

============  ==========================================================================
file          what
============  ==========================================================================
_compile      the decorators: functions compiled at a kernel's first call, one signature
              (small inputs run as plain Python)
_jit          numba itself (imported then): options, the on-disk cache (keyed on the
              shared family's sources), the compile notice
_own          which kernel files compile together (the shared family) and which are
              cached on their own (numba-free)
_ahead        a first run: the later kernels compiled in a second process meanwhile
_preload      a warm run: the kernels loaded on a thread while the input is read
_buffers      reading Arrow bytes in place: pointers, a row's bytes, prefetching
_parts        running a kernel on all CPUs, parts of whole queries or groups
============  ==========================================================================

Importing any of them imports no numba (:mod:`._compile`): a command that runs no
kernel never loads it; :mod:`._jit` is imported at a kernel's first compiled call.
"""
