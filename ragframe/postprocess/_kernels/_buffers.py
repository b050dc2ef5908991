"""Reading Arrow string buffers in place from compiled code: a pointer at an address,
a row's UTF-8 bytes as an array, and prefetching the next rows' bytes.

The addresses come from :func:`ragframe._arrow.string_addresses` (in the kernels'
wrappers); the buffers they point into must stay alive while a kernel runs.
"""

from __future__ import annotations

from typing import Any

from ragframe.postprocess._kernels._compile import I64, U8, from_numba, internal, intrinsic

carray = from_numba("carray")
"""numba's ``carray``: an array over memory at a pointer."""


@intrinsic
def pointer(typingctx: Any, address: Any) -> Any:
    """The byte pointer at an integer address (an Arrow buffer's), for ``carray``."""
    from numba import types  # run while a kernel compiles: numba is loaded

    del typingctx, address
    kind = types.CPointer(types.uint8)  # type: ignore[no-untyped-call]
    sig = kind(types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        return builder.inttoptr(args[0], context.get_value_type(kind))

    return sig, codegen


@intrinsic
def prefetch(typingctx: Any, address: Any) -> Any:
    """Ask the CPU to start loading the cache line at an integer address (no effect on
    results: the kernels read texts in an order they know ahead, so the next texts'
    bytes can be on their way while the current one is compared)."""
    from llvmlite import ir  # run while a kernel compiles: numba is loaded
    from numba import types

    del typingctx, address
    byte = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        )
        read, keep, data = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(function, [builder.inttoptr(args[0], byte), read, keep, data])
        return context.get_dummy_value()

    return types.void(types.int64), codegen


PREFETCH_AHEAD = 4
"""How many rows ahead the kernels prefetch texts."""


@internal
def prefetch_text(address: I64, length: I64, row: int) -> None:
    """Prefetch the first 512 bytes of row ``row``'s text (nothing past the end)."""
    if row < len(address):
        start = address[row]
        for offset in range(0, min(length[row], 512), 64):
            prefetch(start + offset)  # type: ignore[call-arg]


@internal
def text_at(address: I64, length: I64, row: int) -> U8:
    """Row ``row``'s UTF-8 bytes, read in place from its Arrow buffer."""
    return carray(pointer(address[row]), length[row])  # type: ignore[no-any-return,call-arg]


@internal
def longest_text(length: I64) -> int:
    """The longest row's length in bytes, at least 1: the size of a kernel's scratch
    buffers. A loop rather than ``length.max()``, whose compiled form pulls in numba's
    whole array-math module on every load from the cache."""
    longest = 1
    for i in range(len(length)):
        if length[i] > longest:
            longest = length[i]
    return longest
